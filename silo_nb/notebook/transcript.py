"""The transcript reducer: ``fold(state, update) -> state``, pure and immutable.

- One place turns ``AgentSessionUpdate`` streams into something to show. The live turn view, the static
  HTML/Markdown bundle, ``%silo export``, ``%silo journal`` and the restore after a kernel restart all
  fold the same updates through it, so a restored cell looks exactly like a live one.
- Entries keep the order in which things first appeared. Text chunks join the last entry when it is the
  same message (role + message id); tool calls are upserted by ``toolCallId`` (absent fields mean
  unchanged, ``content``/``locations`` replace); the plan is one entry replaced in place.
- One way in: everything a transcript shows arrives as an update — the agent's, and the lines silo_nb
  synthesizes (the user prompt, ``permission_request`` / ``permission_decision``), live from
  ``handle.on_transcript`` and from the journal alike. Permission entries are upserted by ``requestId``,
  so a request answered before anyone displayed it still shows once.
- The session's metadata kinds (``parse.METADATA_KINDS``: commands, modes, config options, titles,
  usage) do not show as entries; the title follows ``parse.session_title`` (the rule the session uses)
  and usage is kept. Unknown kinds are counted in ``other`` so nothing is silently lost.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from silo_nb.sessions.models import (
    AgentPlanEntry,
    AgentSessionUpdate,
    AgentSessionUsage,
    AgentToolCall,
    AgentToolCallContent,
    AgentToolCallLocation,
)
from silo_nb.sessions.parse import METADATA_KINDS, parse_permission_options, session_title
from silo_nb.sessions.prompt_attachments import PromptAttachment, parse_attachments

__all__ = [
    "Entry",
    "MessageEntry",
    "PermissionEntry",
    "PlanView",
    "ToolEntry",
    "TranscriptState",
    "TurnStatus",
    "fold",
    "fold_all",
    "split_turns",
    "with_status",
]

TurnStatus = Literal["running", "finished", "cancelled", "failed", "restored"]
Role = Literal["user", "agent", "thought"]

_ROLES: dict[str, Role] = {
    "user_message_chunk": "user",
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
}
_PERMISSION_KINDS = frozenset({"permission_request", "permission_decision"})


@dataclass(frozen=True)
class MessageEntry:
    role: Role
    text: str
    message_id: str | None = None
    timestamp: str | None = None
    non_text: tuple[str, ...] = ()  # content block types that are not text (an image, a resource…)
    attachments: tuple[PromptAttachment, ...] = ()  # what a synthesized prompt sent besides its text


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


@dataclass(frozen=True)
class PlanView:
    entries: tuple[AgentPlanEntry, ...]


@dataclass(frozen=True)
class PermissionEntry:
    """A permission the agent asked for, and what was chosen (``choice`` None: cancelled/unanswered)."""

    tool_call_id: str
    title: str
    options: tuple[tuple[str, str, str], ...]  # (option_id, name, kind)
    choice: str | None = None
    answered: bool = False
    request_id: str | None = None

    @property
    def choice_name(self) -> str | None:
        return next((name for option_id, name, _ in self.options if option_id == self.choice), None)


Entry = MessageEntry | ToolEntry | PlanView | PermissionEntry


@dataclass(frozen=True)
class TranscriptState:
    entries: tuple[Entry, ...] = ()
    usage: AgentSessionUsage | None = None
    title: str | None = None
    status: TurnStatus = "running"
    stop_reason: str | None = None
    error: str | None = None
    other: tuple[str, ...] = field(default=())  # kinds we do not render, in arrival order

    def tool(self, tool_call_id: str) -> ToolEntry | None:
        return next(
            (e for e in self.entries if isinstance(e, ToolEntry) and e.tool_call_id == tool_call_id), None
        )

    @property
    def plan(self) -> PlanView | None:
        return next((e for e in self.entries if isinstance(e, PlanView)), None)

    @property
    def prompt_text(self) -> str:
        return "".join(e.text for e in self.entries if isinstance(e, MessageEntry) and e.role == "user")

    @property
    def reply_text(self) -> str:
        return "".join(e.text for e in self.entries if isinstance(e, MessageEntry) and e.role == "agent")


def _merge_tool(entry: ToolEntry, call: AgentToolCall) -> ToolEntry:
    return ToolEntry(
        tool_call_id=entry.tool_call_id,
        title=call.title if call.title is not None else entry.title,
        kind=call.kind if call.kind is not None else entry.kind,
        status=call.status if call.status is not None else entry.status,
        content=call.content if call.content is not None else entry.content,
        locations=call.locations if call.locations is not None else entry.locations,
        raw_input=call.raw_input if call.raw_input is not None else entry.raw_input,
        raw_output=call.raw_output if call.raw_output is not None else entry.raw_output,
    )


def _replace_entry(entries: tuple[Entry, ...], index: int, entry: Entry) -> tuple[Entry, ...]:
    return (*entries[:index], entry, *entries[index + 1 :])


def fold(state: TranscriptState, update: AgentSessionUpdate) -> TranscriptState:
    """The transcript after ``update``. Never raises; never mutates ``state``."""
    kind = update.kind
    role = _ROLES.get(kind)
    if role is not None:
        if update.content is None:
            return state
        text = update.text or ""
        non_text = () if update.content.type == "text" else (update.content.type,)
        last = state.entries[-1] if state.entries else None
        # A synthesized prompt is always a whole message: prompt ids restart with each connection.
        joins = update.raw.get("synthesized") is not True
        if (
            joins
            and isinstance(last, MessageEntry)
            and last.role == role
            and last.message_id == update.message_id
        ):
            merged = replace(last, text=last.text + text, non_text=last.non_text + non_text)
            return replace(state, entries=_replace_entry(state.entries, len(state.entries) - 1, merged))
        entry = MessageEntry(
            role=role,
            text=text,
            message_id=update.message_id,
            timestamp=update.timestamp,
            non_text=non_text,
            attachments=parse_attachments(update.raw.get("attachments")),
        )
        return replace(state, entries=(*state.entries, entry))
    if kind in ("tool_call", "tool_call_update"):
        call = update.tool_call
        if call is None:
            return state
        for index, existing in enumerate(state.entries):
            if isinstance(existing, ToolEntry) and existing.tool_call_id == call.tool_call_id:
                return replace(
                    state, entries=_replace_entry(state.entries, index, _merge_tool(existing, call))
                )
        return replace(
            state, entries=(*state.entries, _merge_tool(ToolEntry(tool_call_id=call.tool_call_id), call))
        )
    if kind == "plan":
        view = PlanView(entries=update.plan or ())
        for index, existing in enumerate(state.entries):
            if isinstance(existing, PlanView):
                return replace(state, entries=_replace_entry(state.entries, index, view))
        return replace(state, entries=(*state.entries, view))
    if kind == "usage_update":
        return replace(state, usage=update.usage) if update.usage not in (None, state.usage) else state
    if kind == "session_info_update":
        title = session_title(update)
        return replace(state, title=title) if title not in (None, state.title) else state
    if kind in _PERMISSION_KINDS:
        return _fold_permission(state, update)
    if kind == "turn_end":  # silo_nb's journaled turn outcome (sessions/_turns.py): status as it ended
        return _fold_turn_end(state, update)
    if kind in METADATA_KINDS:
        return state
    return replace(state, other=(*state.other, kind))


def _fold_permission(state: TranscriptState, update: AgentSessionUpdate) -> TranscriptState:
    """A permission request, or its decision: one entry per request.

    A request always adds an entry; a decision answers the latest unanswered entry with its ``requestId``
    (ids restart with each connection, so an older unanswered one from a dead connection stays as it
    was). Decision lines journaled before request lines existed carry no ``requestId``; they match the
    last unanswered entry of the same tool call, or stand alone."""
    raw = update.raw
    decided = update.kind == "permission_decision"
    request_id = raw.get("requestId") if isinstance(raw.get("requestId"), str) else None
    choice = raw.get("optionId") if decided else None
    entry = PermissionEntry(
        tool_call_id=str(raw.get("toolCallId") or ""),
        title=str(raw.get("title") or ""),
        options=tuple((o.option_id, o.name, o.kind) for o in parse_permission_options(raw.get("options"))),
        choice=choice if isinstance(choice, str) else None,
        answered=decided,
        request_id=request_id,
    )
    for index in range(len(state.entries) - 1, -1, -1) if decided else ():
        existing = state.entries[index]
        if not isinstance(existing, PermissionEntry) or existing.answered:
            continue
        same = (
            existing.request_id == request_id
            if request_id is not None
            else existing.tool_call_id == entry.tool_call_id
        )
        if same:
            return replace(state, entries=_replace_entry(state.entries, index, entry))
    return replace(state, entries=(*state.entries, entry))


def _fold_turn_end(state: TranscriptState, update: AgentSessionUpdate) -> TranscriptState:
    """``raw.outcome`` (finished/cancelled/failed) becomes the status; stop reason and error replace."""
    outcome, stop, error = (update.raw.get(key) for key in ("outcome", "stopReason", "error"))
    return replace(
        state,
        status=outcome if outcome in ("finished", "cancelled", "failed") else state.status,
        stop_reason=stop if isinstance(stop, str) else None,
        error=error if isinstance(error, str) else None,
    )


def fold_all(updates: Iterable[AgentSessionUpdate], state: TranscriptState | None = None) -> TranscriptState:
    result = state or TranscriptState()
    for update in updates:
        result = fold(result, update)
    return result


def with_status(
    state: TranscriptState, status: TurnStatus, *, stop_reason: str | None = None, error: str | None = None
) -> TranscriptState:
    return replace(
        state, status=status, stop_reason=stop_reason or state.stop_reason, error=error or state.error
    )


def split_turns(updates: Iterable[AgentSessionUpdate]) -> list[list[AgentSessionUpdate]]:
    """A journal cut into turns: each starts at a user prompt silo_nb synthesized (``raw.synthesized``)
    or, in an agent's load replay, at a user message that follows other content. Anything before the
    first prompt (a banner, agent-initiated work) is its own leading group."""
    turns: list[list[AgentSessionUpdate]] = [[]]
    for update in updates:
        starts_turn = update.kind == "user_message_chunk" and (
            update.raw.get("synthesized") is True
            or (turns[-1] and turns[-1][-1].kind != "user_message_chunk")
        )
        if starts_turn and turns[-1]:
            turns.append([])
        turns[-1].append(update)
    return [turn for turn in turns if turn]
