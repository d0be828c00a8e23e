"""The update stream read without I/O: parsing wire updates, the one fold of session facts, the transcript
reducer and the turn splitter, used alike by sessions, journals, experiments, the replay agent and the
notebook."""

from silo_nb.updates.entries import (
    CompactionEntry,
    Entry,
    FileEditEntry,
    KernelToolEntry,
    MessageEntry,
    MoreSubagentsEntry,
    NoticeEntry,
    PermissionEntry,
    PlanView,
    QuestionEntry,
    SessionMessageEntry,
    SteerEntry,
    SubagentEntry,
    TerminalView,
    ToolEntry,
    TranscriptState,
    TurnStatus,
    UnknownEntry,
    with_status,
)
from silo_nb.updates.journal_turns import (
    JournalTurn,
    split_turns,
    starts_prompt,
    until_turn_end,
)
from silo_nb.updates.parse import (
    parse_tool_call,
)
from silo_nb.updates.parse.controls import (
    parse_commands,
    parse_config_options,
    parse_permission_options,
    parse_session_summary,
    permission_option_fields,
    session_title,
    synthesize_legacy_options,
)
from silo_nb.updates.parse.fields import (
    MAX_RAW_DEPTH,
    block_json,
    content_block,
    is_map,
    items,
    plan_entry,
    tool_call,
    usage,
)
from silo_nb.updates.parse.wire_update import (
    MessageIdSynthesizer,
    cut_long_strings,
    parse_session_update,
)
from silo_nb.updates.session_facts import (
    SessionFacts,
)
from silo_nb.updates.transcript import (
    OTHER_OVERFLOW,
    TranscriptBuilder,
    fold_all,
)

__all__ = [
    "MAX_RAW_DEPTH",
    "OTHER_OVERFLOW",
    "CompactionEntry",
    "Entry",
    "FileEditEntry",
    "JournalTurn",
    "KernelToolEntry",
    "MessageEntry",
    "MessageIdSynthesizer",
    "MoreSubagentsEntry",
    "NoticeEntry",
    "PermissionEntry",
    "PlanView",
    "QuestionEntry",
    "SessionFacts",
    "SessionMessageEntry",
    "SteerEntry",
    "SubagentEntry",
    "TerminalView",
    "ToolEntry",
    "TranscriptBuilder",
    "TranscriptState",
    "TurnStatus",
    "UnknownEntry",
    "block_json",
    "content_block",
    "cut_long_strings",
    "fold_all",
    "is_map",
    "items",
    "parse_commands",
    "parse_config_options",
    "parse_permission_options",
    "parse_session_summary",
    "parse_session_update",
    "parse_tool_call",
    "permission_option_fields",
    "plan_entry",
    "session_title",
    "split_turns",
    "starts_prompt",
    "synthesize_legacy_options",
    "tool_call",
    "until_turn_end",
    "usage",
    "with_status",
]
