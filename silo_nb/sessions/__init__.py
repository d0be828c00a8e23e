"""Silo's chat agent-session semantics on top of ``silo_nb.acp``. Never imports IPython or ipywidgets."""

from silo_nb.sessions.agent_requests import (
    AgentElicitationRequest,
    AgentPermissionOption,
    AgentPermissionRequest,
)
from silo_nb.sessions.agents import AgentsService
from silo_nb.sessions.code_targets import runs_code
from silo_nb.sessions.connecting.auth_methods import AuthMethod, sign_in_advice
from silo_nb.sessions.default_service import default_agents
from silo_nb.sessions.dormant_sessions import RECORD_LIMIT, DormantSession, scan_dormant
from silo_nb.sessions.errors import AgentSessionError, AgentSessionInputError, AgentSignInError
from silo_nb.sessions.journal import (
    MAX_LINE_BYTES,
    JournalFiles,
    open_journal,
    parse_lines,
    read_lines,
    read_updates,
    update_json,
)
from silo_nb.sessions.journal_turns import split_turns, starts_prompt, until_turn_end
from silo_nb.sessions.kinds import (
    KINDS,
    METADATA_KINDS,
    PERMISSION_DECISION_KIND,
    PERMISSION_REQUEST_KIND,
    SILO_NB_KINDS,
    TERMINAL_OUTPUT_KIND,
    TURN_END_KIND,
    USER_PROMPT_KIND,
)
from silo_nb.sessions.mcp_servers import McpServerConfig
from silo_nb.sessions.models import (
    AgentCommand,
    AgentCommandInput,
    AgentContentBlock,
    AgentInfo,
    AgentPlanEntry,
    AgentProfileSummary,
    AgentPromptBlock,
    AgentPromptCapabilities,
    AgentPromptResult,
    AgentSessionConfigChoice,
    AgentSessionConfigOption,
    AgentSessionCost,
    AgentSessionRestore,
    AgentSessionSummary,
    AgentSessionUpdate,
    AgentSessionUsage,
    AgentToolCall,
    AgentToolCallContent,
    AgentToolCallLocation,
    AudioBlock,
    ImageBlock,
    ResourceBlock,
    ResourceLinkBlock,
    TextBlock,
)
from silo_nb.sessions.parse import parse_config_options, permission_option_fields, session_title
from silo_nb.sessions.profile_writer import add_profile
from silo_nb.sessions.profiles import AgentProfile, AgentProfilesService, load_profiles, profile_files
from silo_nb.sessions.prompt_attachments import PREVIEW_CHARS, PromptAttachment, is_preview, parse_attachments
from silo_nb.sessions.question_schema import QuestionField, read_fields
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
from silo_nb.sessions.session.handle import AgentSessionHandle
from silo_nb.sessions.status import now_iso
from silo_nb.sessions.storage import (
    data_dir,
    decode_session_id,
    encode_session_id,
    journal_path,
    workspace_folder,
    workspace_id_for,
)

__all__ = [
    "KINDS",
    "MAX_LINE_BYTES",
    "METADATA_KINDS",
    "PERMISSION_DECISION_KIND",
    "PERMISSION_REQUEST_KIND",
    "PREVIEW_CHARS",
    "RECORD_LIMIT",
    "SILO_NB_KINDS",
    "TERMINAL_OUTPUT_KIND",
    "TURN_END_KIND",
    "USER_PROMPT_KIND",
    "AgentCommand",
    "AgentCommandInput",
    "AgentContentBlock",
    "AgentElicitationRequest",
    "AgentInfo",
    "AgentPermissionOption",
    "AgentPermissionRequest",
    "AgentPlanEntry",
    "AgentProfile",
    "AgentProfileSummary",
    "AgentProfilesService",
    "AgentPromptBlock",
    "AgentPromptCapabilities",
    "AgentPromptResult",
    "AgentSessionConfigChoice",
    "AgentSessionConfigOption",
    "AgentSessionCost",
    "AgentSessionError",
    "AgentSessionHandle",
    "AgentSessionInputError",
    "AgentSessionRestore",
    "AgentSessionSummary",
    "AgentSessionUpdate",
    "AgentSessionUsage",
    "AgentSessionsService",
    "AgentSignInError",
    "AgentToolCall",
    "AgentToolCallContent",
    "AgentToolCallLocation",
    "AgentsService",
    "AudioBlock",
    "AuthMethod",
    "ClientToolCall",
    "ClientToolCalls",
    "DormantSession",
    "ImageBlock",
    "JournalFiles",
    "McpServerConfig",
    "PromptAttachment",
    "QuestionField",
    "ResourceBlock",
    "ResourceLinkBlock",
    "TextBlock",
    "UnsafeFileError",
    "add_profile",
    "check_folder",
    "data_dir",
    "decode_session_id",
    "default_agents",
    "encode_session_id",
    "is_preview",
    "journal_path",
    "load_profiles",
    "now_iso",
    "open_file",
    "open_journal",
    "parse_attachments",
    "parse_config_options",
    "parse_lines",
    "permission_option_fields",
    "profile_files",
    "read_fields",
    "read_lines",
    "read_small_file",
    "read_updates",
    "replace_file",
    "runs_code",
    "sampling_asked",
    "scan_dormant",
    "session_title",
    "sign_in_advice",
    "split_turns",
    "starts_prompt",
    "until_turn_end",
    "update_json",
    "workspace_folder",
    "workspace_id_for",
    "write_named_file",
]
