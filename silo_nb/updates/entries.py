"""The transcript's values: frozen entries and ``TranscriptState`` (what every renderer reads).

Entries are immutable and replaced, never mutated, when an update changes them: renderers cache their
output by entry identity. The reducer that builds them is ``transcript.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, TypeVar

from silo_nb.model import (
    AgentPlanEntry,
    AgentSessionUsage,
    AgentToolCall,
    AgentToolCallContent,
    AgentToolCallLocation,
    PromptAttachment,
)

__all__ = [
    "CompactionEntry",
    "Entry",
    "FileEditEntry",
    "KernelToolEntry",
    "MessageEntry",
    "MoreSubagentsEntry",
    "NoticeEntry",
    "PermissionEntry",
    "PlanView",
    "QuestionEntry",
    "Role",
    "SessionMessageEntry",
    "SteerEntry",
    "SubagentEntry",
    "TerminalView",
    "ToolEntry",
    "TranscriptState",
    "TurnStatus",
    "UnknownEntry",
    "made",
    "with_status",
]

TurnStatus = Literal["running", "finished", "cancelled", "failed", "restored"]
Role = Literal["user", "agent", "thought"]
E = TypeVar("E")
_new, _set_attr = object.__new__, object.__setattr__


def made(cls: type[E], **fields: Any) -> E:
    """``cls(**fields)`` for an entry class, *every* field given: the keyword dict becomes the instance's
    ``__dict__``. A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``: twice
    the cost (a message entry 1.8 µs, this 0.8 µs), and a restore's fold makes one per message and tool
    update. Equal to what ``cls(**fields)`` makes (tested)."""
    entry = _new(cls)
    _set_attr(entry, "__dict__", fields)
    return entry


@dataclass(frozen=True)
class MessageEntry:
    role: Role
    text: str
    message_id: str | None = None
    timestamp: str | None = None
    non_text: tuple[str, ...] = ()  # content block types that are not text (an image, a resource…)
    dropped: int = 0  # characters beyond MESSAGE_CHAR_LIMIT, not kept (said where the text is shown)
    attachments: tuple[PromptAttachment, ...] = ()  # what a synthesized prompt sent besides its text

    def with_text(self, text: str) -> MessageEntry:
        """This entry holding ``text`` (``dataclasses.replace`` cost 20 times more: once per message)."""
        return made(
            MessageEntry,
            role=self.role,
            text=text,
            message_id=self.message_id,
            timestamp=self.timestamp,
            non_text=self.non_text,
            dropped=self.dropped,
            attachments=self.attachments,
        )


TERMINAL_OUTPUT_LIMIT = 200_000  # characters of a terminal's output the transcript keeps (the end of it)


@dataclass(frozen=True)
class TerminalView:
    """A client terminal as the transcript shows it: the end of its output, and how it exited (``exited``
    False: still running)."""

    terminal_id: str
    output: str = ""
    truncated: bool = False  # earlier output was dropped (the terminal's byte limit, or ours)
    exited: bool = False
    exit_code: int | None = None
    signal: str | None = None

    def with_output(self, raw: dict[str, Any]) -> TerminalView:
        """This view after one ``terminal_output`` line (``raw``: ``output`` appended, or the output's
        end when ``replace``; ``truncated``, ``exitStatus``); the output keeps its last
        :data:`TERMINAL_OUTPUT_LIMIT` characters."""
        added = raw.get("output")
        added = added if isinstance(added, str) else ""
        output = added if raw.get("replace") is True else self.output + added  # a tail replaces
        truncated = self.truncated or raw.get("truncated") is True or len(output) > TERMINAL_OUTPUT_LIMIT
        status = raw.get("exitStatus")
        exited, code, signal = self.exited, self.exit_code, self.signal
        if isinstance(status, dict):
            exited = True
            code = status.get("exitCode") if type(status.get("exitCode")) is int else None
            signal = status.get("signal") if isinstance(status.get("signal"), str) else None
        return TerminalView(
            self.terminal_id, output[-TERMINAL_OUTPUT_LIMIT:], truncated, exited, code, signal
        )


@dataclass(frozen=True)
class PermissionEntry:
    """A permission the agent asked for, and what was chosen (``choice`` None: cancelled/unanswered)."""

    tool_call_id: str
    title: str
    options: tuple[tuple[str, str, str], ...]  # (option_id, name, kind)
    choice: str | None = None
    answered: bool = False
    request_id: str | None = None
    note: str | None = None  # why silo_nb answered it itself (no options, repeated ids, a raising listener)

    @property
    def choice_name(self) -> str | None:
        return next((name for option_id, name, _ in self.options if option_id == self.choice), None)


@dataclass(frozen=True)
class ToolEntry:
    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: tuple[AgentToolCallContent, ...] = ()
    locations: tuple[AgentToolCallLocation, ...] = ()
    raw_input: Any = None
    raw_output: Any = None
    terminals: tuple[TerminalView, ...] = ()  # the client terminals its content embeds, as known so far
    # A recording's call played back (the replay agent's ``_meta.silo_nb.recorded``): nothing was done now.
    recorded: bool = False
    # The permission asked for this call, shown inside its card where it was asked: after the first
    # ``permission_at`` content items (what the call showed then), before what came after (its result).
    permission: PermissionEntry | None = None
    permission_at: int = 0
    written: tuple[str, ...] = ()  # paths of its diffs that silo_nb then wrote as proposed ("· written")
    cwd: str | None = None  # the session's folder: its paths show relative to it
    NONE: ClassVar[ToolEntry]  # what a new tool call's fields start from

    def updated_by(self, call: AgentToolCall, recorded: bool = False) -> ToolEntry:
        """This entry with what ``call`` says (absent fields: unchanged; lists replaced), under its id;
        ``recorded``: the update is a replayed recording's (it stays so)."""
        return made(
            ToolEntry,
            tool_call_id=call.tool_call_id,
            title=call.title if call.title is not None else self.title,
            kind=call.kind if call.kind is not None else self.kind,
            status=call.status if call.status is not None else self.status,
            content=call.content if call.content is not None else self.content,
            locations=call.locations if call.locations is not None else self.locations,
            raw_input=call.raw_input if call.raw_input is not None else self.raw_input,
            raw_output=call.raw_output if call.raw_output is not None else self.raw_output,
            terminals=self.terminals,
            recorded=self.recorded or recorded,
            permission=self.permission,
            permission_at=self.permission_at,
            written=self.written,
            cwd=self.cwd,
        )

    @property
    def terminal_ids(self) -> tuple[str, ...]:
        return tuple(
            item.terminal_id for item in self.content if item.type == "terminal" and item.terminal_id
        )

    def with_terminal(self, view: TerminalView) -> ToolEntry:
        """This entry showing ``view`` (replacing what it showed of the same terminal)."""
        kept = tuple(t for t in self.terminals if t.terminal_id != view.terminal_id)
        return replace(self, terminals=(*kept, view))


ToolEntry.NONE = ToolEntry(tool_call_id="")


@dataclass(frozen=True)
class PlanView:
    """The agent's plan. ACP v1's ``plan`` is one per session (``plan_id`` None); the unstable v1.25
    ``plan_update`` names each plan (``plan_id``) as steps, Markdown (``markdown``) or a file (``uri``), and
    ``plan_removed`` marks it ``removed`` (kept, struck through: the reader saw it)."""

    entries: tuple[AgentPlanEntry, ...]
    plan_id: str | None = None
    markdown: str | None = None
    uri: str | None = None
    removed: bool = False


@dataclass(frozen=True)
class NoticeEntry:
    """A notice the agent sent for the user (ACP v1.25): ``severity`` info, warning, error (or another
    word, kept), a one-line ``title`` and an optional ``description``."""

    severity: str
    title: str
    description: str | None = None


@dataclass(frozen=True)
class CompactionEntry:
    """The agent compacted its context (ACP v1.25 ``compaction_update``/``compaction_summary_chunk``): a
    marker that explains why the agent "forgot". ``status`` in_progress, completed, failed, cancelled (or
    another word, kept); ``summary`` what it kept, as far as sent (``dropped``: characters past the cap)."""

    compaction_id: str
    status: str
    summary: str = ""
    error: str | None = None
    dropped: int = 0

    @property
    def ended(self) -> bool:
        return self.status in ("completed", "failed", "cancelled")


@dataclass(frozen=True)
class SteerEntry:
    """What the user typed into a running turn (``handle.steer``): ``outcome`` None while it is on its way,
    then the agent's word (``injected``, ``startedNewTurn``) or ``refused`` with a ``note``."""

    steer_id: str
    text: str
    outcome: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class UnknownEntry:
    """Updates of a kind silo_nb does not know (Qwen's ``shell_output``…), shown as a small line rather
    than lost: the kind, how many came in a row, and their text fields as far as kept."""

    kind: str
    text: str = ""
    count: int = 1
    dropped: int = 0


@dataclass(frozen=True)
class SubagentEntry:
    """A child session the agent runs (ACP v1.25, unstable): what its ``subagent_update`` s said (title,
    description, work ``state``, whether it may be cancelled, its folder) and its own ``transcript``,
    folded from the updates sent under its ``session_id``. ``announced`` False: traffic came under an id no
    ``subagent_update`` announced (shown as an unannounced child, never dropped). ``parent_session_id``:
    the child that announced it (None: this session)."""

    session_id: str
    title: str | None = None
    description: str | None = None
    state: str | None = None  # running, idle, requires_action, unknown, or another word (kept)
    cancel: bool = False  # the child offers ``session/cancel`` (its capabilities.cancel)
    cwd: str | None = None
    announced: bool = True
    parent_session_id: str | None = None
    stop_reason: str | None = None  # an idle state's ``stopReason``
    transcript: TranscriptState | None = None

    @property
    def label(self) -> str:
        """How the child is named to a reader: its title, else its id."""
        if self.title:
            return self.title
        return f"{'' if self.announced else 'unannounced '}child {self.session_id[:40]}"

    @property
    def entries(self) -> tuple[Entry, ...]:
        return self.transcript.entries if self.transcript is not None else ()


@dataclass(frozen=True)
class MoreSubagentsEntry:
    """Children beyond the ones a transcript shows in full: how many, and how many updates they sent (the
    journal keeps them all). ``at_least``: past the ids the transcript tells apart, more are not counted."""

    children: int = 0
    updates: int = 0
    at_least: bool = False


@dataclass(frozen=True)
class SessionMessageEntry:
    """A message between sessions (ACP v1.25 ``session_message``, its text grown by
    ``session_message_chunk``): from ``sender`` to ``recipient`` (the sessions' labels: a child's title, or
    "main agent" for the session itself)."""

    message_id: str
    sender: str | None = None
    recipient: str | None = None
    text: str = ""
    non_text: tuple[str, ...] = ()
    dropped: int = 0  # characters beyond the entry's limit, not kept


@dataclass(frozen=True)
class FileEditEntry:
    """A file the agent wrote through the client: its path and the text before (None: a new file) and
    after; ``too_large`` when the journal could not keep them (``sizes``: old and new, in characters)."""

    path: str
    old_text: str | None = None
    new_text: str | None = None
    too_large: bool = False
    sizes: tuple[int, int] | None = None
    cwd: str | None = None  # the session's folder: the path shows relative to it


@dataclass(frozen=True)
class KernelToolEntry:
    """A call of the kernel tools' MCP server (``list_variables``, ``run_code``…): its arguments (the
    code), its status (``running`` until it ends), its output text and figures (base64 PNGs)."""

    call_id: str
    tool: str
    status: str
    arguments: tuple[tuple[str, Any], ...] = ()
    output: str = ""
    images: tuple[str, ...] = ()
    images_left_out: int = 0
    cell_id: str | None = None  # the notebook cell a cell tool touched
    cell_diff: tuple[str, str] | None = None  # its source before and after (the change asked, or made)
    undo: tuple[tuple[str, Any], ...] | None = None  # an applied change: the request that takes it back

    @property
    def code(self) -> str | None:
        """``run_code``'s code (None for the other tools)."""
        code = dict(self.arguments).get("code")
        return code if isinstance(code, str) else None


@dataclass(frozen=True)
class QuestionEntry:
    """A question the agent asked (a form, or a link to visit) and how it was answered (``action``
    None while waiting; ``by``: who answered)."""

    request_id: str
    mode: str
    message: str
    url: str | None = None
    fields: tuple[tuple[str, str, str, bool], ...] = ()  # (name, title, type, required)
    field_count: int = 0
    action: str | None = None
    content: tuple[tuple[str, Any], ...] = ()  # (name, value) accepted
    by: str | None = None
    completed: bool = False

    @property
    def answered(self) -> bool:
        return self.action is not None


Entry = (
    MessageEntry
    | ToolEntry
    | PlanView
    | PermissionEntry
    | FileEditEntry
    | QuestionEntry
    | KernelToolEntry
    | NoticeEntry
    | CompactionEntry
    | SteerEntry
    | UnknownEntry
    | SubagentEntry
    | MoreSubagentsEntry
    | SessionMessageEntry
)


@dataclass(frozen=True)
class TranscriptState:
    entries: tuple[Entry, ...] = ()
    usage: AgentSessionUsage | None = None
    title: str | None = None
    status: TurnStatus = "running"
    stop_reason: str | None = None
    error: str | None = None
    # Kinds we do not render: (kind, count) in order of first arrival.
    other: tuple[tuple[str, int], ...] = field(default=())
    # Repainted from the journal (a restore): the header says so whatever the turn's outcome.
    restored: bool = False
    cwd: str | None = None  # the session's folder (the prompt line's ``raw.cwd``): paths show relative to it
    # From the turn's ``turn_end`` line: how long it took, and the prompt answer's token counts (ACP
    # ``Usage`` field → count, ``model.TOKEN_FIELDS`` order).
    duration_ms: float | None = None
    tokens: tuple[tuple[str, int], ...] = ()

    def tool(self, tool_call_id: str) -> ToolEntry | None:
        return next(
            (e for e in self.entries if isinstance(e, ToolEntry) and e.tool_call_id == tool_call_id), None
        )

    @property
    def permissions(self) -> tuple[PermissionEntry, ...]:
        """Every permission of the transcript in order, those shown inside their tool call's card too."""
        found = []
        for entry in self.entries:
            asked = entry.permission if isinstance(entry, ToolEntry) else entry
            if isinstance(asked, PermissionEntry):
                found.append(asked)
        return tuple(found)

    def waiting(self) -> PermissionEntry | QuestionEntry | None:
        """The last permission (in a tool call's card or alone, or a subagent's) or question still
        unanswered."""
        found: PermissionEntry | QuestionEntry | None = None
        for entry in self.entries:
            if isinstance(entry, SubagentEntry):
                inner = entry.transcript.waiting() if entry.transcript is not None else None
                found = inner or found
                continue
            asked = entry.permission if isinstance(entry, ToolEntry) else entry
            if isinstance(asked, PermissionEntry | QuestionEntry) and not asked.answered:
                found = asked
        return found

    @property
    def subagents(self) -> tuple[SubagentEntry, ...]:
        """Every child session shown, children of children too (depth first)."""
        found: list[SubagentEntry] = []
        for entry in self.entries:
            if isinstance(entry, SubagentEntry):
                found.append(entry)
                if entry.transcript is not None:
                    found.extend(entry.transcript.subagents)
        return tuple(found)

    @property
    def plan(self) -> PlanView | None:
        return next((e for e in self.entries if isinstance(e, PlanView)), None)

    @property
    def other_count(self) -> int:
        return sum(count for _, count in self.other)

    @property
    def prompt_text(self) -> str:
        return "".join(e.text for e in self.entries if isinstance(e, MessageEntry) and e.role == "user")

    @property
    def reply_text(self) -> str:
        return "".join(e.text for e in self.entries if isinstance(e, MessageEntry) and e.role == "agent")


def with_status(
    state: TranscriptState, status: TurnStatus, *, stop_reason: str | None = None, error: str | None = None
) -> TranscriptState:
    """``state`` with another status (a stop reason or error given replaces the one it had)."""
    return replace(
        state, status=status, stop_reason=stop_reason or state.stop_reason, error=error or state.error
    )
