"""The one table of update kinds: what each ``AgentSessionUpdate.kind`` is and how every part treats it.

- Every place that asks "what kind of update is this" reads :data:`KINDS` (or a set derived from it
  below): the wire parser (which field it fills, which kinds break a run of chunks), the session (side
  effects, turn tracking), the resume rules, the transcript reducer (which kinds it shows), and the
  turn rows of experiments. A new kind is one row here plus the code that gives it meaning.
- ``origin``: ``acp`` for the protocol's own ``sessionUpdate`` values, ``silo_nb`` for the lines the
  session synthesizes into the journal (Silo's readers skip kinds they do not know).
- Kinds not in the table are kept as open strings (``raw`` holds them): never fatal, counted where a
  transcript cannot show them.
- Hot: the parser and the session look kinds up per update, so the derived sets are plain frozensets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

__all__ = [
    "FILE_WRITE_KIND",
    "KERNEL_TOOL_KIND",
    "KINDS",
    "METADATA_KINDS",
    "PERMISSION_DECISION_KIND",
    "PERMISSION_REQUEST_KIND",
    "QUESTION_DECISION_KIND",
    "QUESTION_REQUEST_KIND",
    "RESUME_METADATA_KINDS",
    "RUN_BREAKERS",
    "SHOWN_KINDS",
    "SIDE_EFFECT_KINDS",
    "SILO_NB_KINDS",
    "STEER_KIND",
    "TERMINAL_OUTPUT_KIND",
    "TEXT_KINDS",
    "TOOL_KINDS",
    "TURN_END_KIND",
    "TURN_UNDONE_KIND",
    "USER_PROMPT_KIND",
    "WORK_KINDS",
    "Origin",
    "Payload",
    "Role",
    "RowPart",
    "UpdateKind",
    "kind_of",
]

# message: conversation text; work: what the agent does in a turn; metadata: describes the session;
# side_effect: metadata that also changes the session's state (commands, options, title).
Role = Literal["message", "work", "metadata", "side_effect"]
# The model field a kind's journal line carries besides ``kind`` and ``raw`` (and the parser fills).
Payload = Literal["text", "tool_call", "plan", "usage"] | None
# What a kind adds to a turn's row in ``experiments/rows.py``.
RowPart = (
    Literal[
        "prompt",
        "text",
        "tool",
        "asked",
        "decided",
        "question",
        "answered",
        "usage",
        "notice",
        "compaction",
        "end",
    ]
    | None
)
Origin = Literal["acp", "silo_nb"]


@dataclass(frozen=True, slots=True)
class UpdateKind:
    """One row of the table."""

    name: str
    role: Role
    origin: Origin = "acp"
    payload: Payload = None
    # Ends a run of same-kind text chunks: the next id-less chunk starts a new message (Silo's rule).
    breaks_run: bool = False
    # With no prompt in flight, the agent is working: it opens an agent-initiated turn (Silo §4.3).
    opens_turn: bool = False
    # A journal holding only kinds without this has no conversation worth keeping (Silo §2.1).
    keeps_journal: bool = True
    # The transcript shows it as an entry (the others update its state, or nothing).
    shown: bool = False
    row: RowPart = None
    # Counted in a turn row's ``updates`` (a start-up announcement would make counts depend on timing).
    counted: bool = True
    doc: str = ""


USER_PROMPT_KIND = "user_message_chunk"
PERMISSION_REQUEST_KIND = "permission_request"
PERMISSION_DECISION_KIND = "permission_decision"
TURN_END_KIND = "turn_end"
TERMINAL_OUTPUT_KIND = "terminal_output"
FILE_WRITE_KIND = "file_write"
QUESTION_REQUEST_KIND = "question_request"
QUESTION_DECISION_KIND = "question_decision"
KERNEL_TOOL_KIND = "kernel_tool"
STEER_KIND = "steer"
TURN_UNDONE_KIND = "turn_undone"

_TABLE = (
    UpdateKind(
        USER_PROMPT_KIND, "message", payload="text", opens_turn=True, shown=True, row="prompt",
        doc="The user's message: replayed by a load, or the prompt silo_nb synthesizes (raw.synthesized).",
    ),
    UpdateKind(
        "agent_message_chunk", "message", payload="text", opens_turn=True, shown=True, row="text",
        doc="A chunk of the agent's reply.",
    ),
    UpdateKind(
        "agent_thought_chunk", "message", payload="text", opens_turn=True, shown=True,
        doc="A chunk of the agent's reasoning.",
    ),
    UpdateKind(
        "tool_call", "work", payload="tool_call", breaks_run=True, opens_turn=True, shown=True, row="tool",
        doc="A new tool call.",
    ),
    UpdateKind(
        "tool_call_update", "work", payload="tool_call", breaks_run=True, opens_turn=True, shown=True,
        row="tool", doc="A patch to a tool call (absent fields unchanged).",
    ),
    UpdateKind(
        "plan", "work", payload="plan", breaks_run=True, opens_turn=True, shown=True,
        doc="The agent's plan, replaced whole.",
    ),
    UpdateKind(
        "plan_update", "work", breaks_run=True, opens_turn=True, shown=True,
        doc="ACP v1.25 (unstable): a plan named by planId, as steps, Markdown or a file, replaced whole.",
    ),
    UpdateKind(
        "plan_removed", "work", breaks_run=True, shown=True,
        doc="ACP v1.25 (unstable): the named plan is gone (marked removed in the turn, kept).",
    ),
    UpdateKind(
        "available_commands_update", "side_effect", keeps_journal=False, counted=False,
        doc="The slash commands the agent offers.",
    ),
    UpdateKind(
        "current_mode_update", "side_effect", keeps_journal=False,
        doc="The legacy mode changed (kept as the mode config option).",
    ),
    UpdateKind("config_option_update", "side_effect", doc="Config options changed (the whole list)."),
    UpdateKind(
        "session_info_update", "side_effect", keeps_journal=False,
        doc="Session metadata: the title (updates/parse session_title).",
    ),
    UpdateKind("usage_update", "metadata", payload="usage", row="usage", doc="Context used, window, cost."),
    UpdateKind(
        "notice", "work", breaks_run=True, shown=True, row="notice",
        doc="ACP v1.25: information for the user (severity, title, description), a banner in the turn.",
    ),
    UpdateKind(
        "compaction_update", "work", breaks_run=True, shown=True, row="compaction",
        doc="ACP v1.25: the agent compacts its context (compactionId, status, summary, error); upserted "
        "by compactionId, a marker in the turn.",
    ),
    UpdateKind(
        "compaction_summary_chunk", "work", breaks_run=True, shown=True,
        doc="ACP v1.25: a chunk of a compaction's summary (compactionId, content), appended to its marker.",
    ),
    UpdateKind(
        "subagent_update", "work", breaks_run=True, opens_turn=True, shown=True,
        doc="ACP v1.25 (unstable): the agent announces or updates a child session (sessionId, title, "
        "state, capabilities.cancel, cwd); the child's traffic carries its id (child_session_id).",
    ),
    UpdateKind(
        "session_message", "work", breaks_run=True, shown=True,
        doc="ACP v1.25 (unstable): a message between sessions (sender → recipient), upserted by messageId.",
    ),
    UpdateKind(
        "session_message_chunk", "work", shown=True,
        doc="ACP v1.25 (unstable): a streamed content block of a session_message, appended by messageId.",
    ),
    UpdateKind(
        PERMISSION_REQUEST_KIND, "work", origin="silo_nb", opens_turn=True, shown=True, row="asked",
        doc="The agent asked before a tool call (session/permission_desk).",
    ),
    UpdateKind(
        PERMISSION_DECISION_KIND, "work", origin="silo_nb", shown=True, row="decided",
        doc="What was answered, by whom.",
    ),
    UpdateKind(
        TURN_END_KIND, "metadata", origin="silo_nb", row="end",
        doc="How a turn ended, its timing and the session's profile and config (session/turn_tracker).",
    ),
    UpdateKind(
        QUESTION_REQUEST_KIND, "work", origin="silo_nb", opens_turn=True, shown=True, row="question",
        doc="The agent asked the user something (ACP elicitation; session/question_desk).",
    ),
    UpdateKind(
        QUESTION_DECISION_KIND, "work", origin="silo_nb", shown=True, row="answered",
        doc="What the question was answered (accept with values, decline, cancel), by whom.",
    ),
    UpdateKind(
        FILE_WRITE_KIND, "work", origin="silo_nb", shown=True,
        doc="The agent wrote a file through the client (raw: path, oldText, newText; session/client_files).",
    ),
    UpdateKind(
        TERMINAL_OUTPUT_KIND, "work", origin="silo_nb",
        doc="Output a client terminal printed (raw: terminalId, output appended, truncated, exitStatus); "
        "shown inside the tool call that embeds the terminal.",
    ),
    UpdateKind(
        STEER_KIND, "work", origin="silo_nb", breaks_run=True, shown=True,
        doc="The user's input to a running turn (the ``_session/steering`` extension; handle.steer): its "
        "text, then how the agent took it (raw: steerId, text, outcome, note), upserted by steerId.",
    ),
    UpdateKind(
        TURN_UNDONE_KIND, "metadata", origin="silo_nb", keeps_journal=False, counted=False,
        doc="An undo of turns (handle.undo; raw: turns, items — part, subject, restored, said — and "
        "forkSessionId): a restore shows those turns undone.",
    ),
    UpdateKind(
        KERNEL_TOOL_KIND, "work", origin="silo_nb", shown=True,
        doc="A tool of the kernel's MCP server the agent called in a turn (raw: callId, tool, arguments, "
        "status, output, images; session/client_tool_calls), upserted by callId.",
    ),
)  # fmt: skip

KINDS: Mapping[str, UpdateKind] = MappingProxyType({kind.name: kind for kind in _TABLE})


def kind_of(name: str) -> UpdateKind | None:
    """The table's row for ``name``; None for a kind silo_nb does not know (kept, never fatal)."""
    return KINDS.get(name)


def _where(**columns: object) -> frozenset[str]:
    return frozenset(k.name for k in _TABLE if all(getattr(k, c) == v for c, v in columns.items()))


TEXT_KINDS = _where(payload="text")
TOOL_KINDS = _where(payload="tool_call")
RUN_BREAKERS = _where(breaks_run=True)
WORK_KINDS = _where(opens_turn=True)
SIDE_EFFECT_KINDS = _where(role="side_effect")
# Kinds the transcript knows but does not show as entries (they change its state, or nothing).
METADATA_KINDS = frozenset(KINDS) - _where(shown=True)
SHOWN_KINDS = _where(shown=True)
# The lines only the session writes: an agent sending one of these is not believed (sessions/_updates).
SILO_NB_KINDS = _where(origin="silo_nb")
RESUME_METADATA_KINDS = _where(keeps_journal=False)
