"""Silo's chat agent-session semantics on top of ``silo_nb.acp``. Never imports IPython or ipywidgets."""

from silo_nb.sessions.agent_pins import (
    AgentPinError,
    check_agent_spec,
    install_agent,
    installed_agents,
    is_agent_spec,
    parse_agent_spec,
    reported_agent,
)
from silo_nb.sessions.agents import AgentsService
from silo_nb.sessions.code_targets import runs_code
from silo_nb.sessions.connecting.auth_methods import sign_in_advice
from silo_nb.sessions.default_service import default_agents
from silo_nb.sessions.dormant_sessions import RECORD_LIMIT, DormantSession, scan_dormant
from silo_nb.sessions.journal import (
    MAX_LINE_BYTES,
    JournalFiles,
    open_journal,
    parse_lines,
    read_lines,
    read_updates,
    update_json,
)
from silo_nb.sessions.mcp_servers import McpServerConfig
from silo_nb.sessions.profile_writer import add_profile
from silo_nb.sessions.profiles import AgentProfile, AgentProfilesService, load_profiles, profile_files
from silo_nb.sessions.safe_files import (
    UnsafeFileError,
    check_folder,
    open_file,
    read_small_file,
    replace_file,
    write_named_file,
)
from silo_nb.sessions.sampling import sampling_asked
from silo_nb.sessions.service import AgentSessionsService
from silo_nb.sessions.session.client_tool_calls import ClientToolCall, ClientToolCalls
from silo_nb.sessions.session.file_checkpoints import FileCheckpoints
from silo_nb.sessions.session.handle import AgentSessionHandle
from silo_nb.sessions.session.turn_undo import TurnUndoPart
from silo_nb.sessions.status import now_iso
from silo_nb.sessions.storage import (
    checkpoint_store,
    data_dir,
    decode_session_id,
    encode_session_id,
    journal_path,
    workspace_folder,
    workspace_id_for,
)

__all__ = [
    "MAX_LINE_BYTES",
    "RECORD_LIMIT",
    "AgentPinError",
    "AgentProfile",
    "AgentProfilesService",
    "AgentSessionHandle",
    "AgentSessionsService",
    "AgentsService",
    "ClientToolCall",
    "ClientToolCalls",
    "DormantSession",
    "FileCheckpoints",
    "JournalFiles",
    "McpServerConfig",
    "TurnUndoPart",
    "UnsafeFileError",
    "add_profile",
    "check_agent_spec",
    "check_folder",
    "checkpoint_store",
    "data_dir",
    "decode_session_id",
    "default_agents",
    "encode_session_id",
    "install_agent",
    "installed_agents",
    "is_agent_spec",
    "journal_path",
    "load_profiles",
    "now_iso",
    "open_file",
    "open_journal",
    "parse_agent_spec",
    "parse_lines",
    "profile_files",
    "read_lines",
    "read_small_file",
    "read_updates",
    "replace_file",
    "reported_agent",
    "runs_code",
    "sampling_asked",
    "scan_dormant",
    "sign_in_advice",
    "update_json",
    "workspace_folder",
    "workspace_id_for",
    "write_named_file",
]
