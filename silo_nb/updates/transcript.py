"""The transcript reducer: ``fold(state, update) -> state`` (pure) over a linear ``TranscriptBuilder``.

- One place turns ``AgentSessionUpdate`` streams into something to show: the live turn view, the static
  bundle, ``%silo export``/``journal`` and the restore after a restart fold the same updates through it.
- Entries keep the order in which things first appeared. Text chunks join the last entry when it is the
  same message (role + message id); tool calls are upserted by ``toolCallId`` (absent fields mean
  unchanged, ``content``/``locations`` replace), kernel tool calls by ``callId``; the plan is one entry.
- One way in: everything a transcript shows arrives as an update — the agent's, and the lines silo_nb
  synthesizes (prompt, permissions, questions, file writes, kernel tools), live from ``on_transcript``
  and from the journal alike. Permission entries are upserted by ``requestId`` (shown once).
- Metadata kinds (``kinds.METADATA_KINDS``) make no entries; the title follows ``parse.session_title`` and
  usage is kept. Unknown kinds are counted in ``other`` (kind → count) and shown as small lines with their
  text (a run of one kind is one line); past :data:`OTHER_KIND_LIMIT` kinds they are only counted.
- Cost: :class:`TranscriptBuilder` is O(1) amortised per update whatever the agent sends (entries indexed
  by their ids, the open message's chunks in a list, unknown kinds counted); its frozen
  :attr:`~TranscriptBuilder.state` is built only when asked for and shares every unchanged entry.
  ``fold`` is the pure one-step form (O(entries)); streams use the builder (``fold_all``, ``LiveTranscript``).
- Bounded: messages keep :data:`MESSAGE_CHAR_LIMIT` characters, unknown kinds :data:`OTHER_KIND_LIMIT` names.
- Subagents (ACP v1.25, unstable): a ``subagent_update`` makes a :class:`SubagentEntry` where it first
  arrives; an update with ``child_session_id`` is folded into that child's own transcript (nested builders,
  one per child, routed from the top builder), an id nobody announced into an "unannounced child". The
  first :data:`SUBAGENTS_SHOWN` children are shown in full, the rest counted in one
  :class:`MoreSubagentsEntry`; a child of a child nests up to :data:`SUBAGENT_DEPTH` levels (deeper ones
  sit at the last level, their parent named). ``session_message`` (+ ``_chunk``) is upserted by
  ``messageId``, sender → recipient.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sized
from dataclasses import dataclass, replace
from typing import Any

from silo_nb.model import (
    METADATA_KINDS,
    AgentSessionUpdate,
    SteerLine,
    parse_attachments,
    token_counts,
)
from silo_nb.updates import (
    session_title,
)
from silo_nb.updates.entries import (
    CompactionEntry,
    Entry,
    KernelToolEntry,
    MessageEntry,
    MoreSubagentsEntry,
    NoticeEntry,
    PermissionEntry,
    PlanView,
    QuestionEntry,
    Role,
    SessionMessageEntry,
    SteerEntry,
    SubagentEntry,
    TerminalView,
    ToolEntry,
    TranscriptState,
    TurnStatus,
    UnknownEntry,
    made,
    with_status,
)
from silo_nb.updates.entry_joins import with_permission, written_as_proposed
from silo_nb.updates.entry_lines import (
    file_edit_entry,
    kernel_tool_entry,
    permission_entry,
    question_entry,
    recorded_call,
)
from silo_nb.updates.parse import parse_plan
from silo_nb.util import gc_paused

__all__ = [
    "HANDLED_KINDS",
    "MESSAGE_CHAR_LIMIT",
    "OTHER_OVERFLOW",
    "SUBAGENTS_SHOWN",
    "SUBAGENT_DEPTH",
    "Entry",
    "MessageEntry",
    "PermissionEntry",
    "PlanView",
    "ToolEntry",
    "TranscriptBuilder",
    "TranscriptState",
    "TurnStatus",
    "fold",
    "fold_all",
    "with_status",
]

MESSAGE_CHAR_LIMIT = 4_000_000  # characters one message keeps in memory; the rest is counted, not kept
OTHER_KIND_LIMIT = 32  # distinct unknown kinds named; more are counted under one "…" name
_KIND_NAME_LIMIT = 80  # characters of an unknown kind's name kept
_NOTICE_CHARS = 2_000  # of a notice's title and of its description
SUMMARY_CHAR_LIMIT = 200_000  # characters of a compaction's summary kept; the rest is counted
UNKNOWN_TEXT_LIMIT = 2_000  # characters of a run of unknown updates' text kept; the rest is counted
OTHER_OVERFLOW = "…"
SUBAGENTS_SHOWN = 50  # children (of any depth) shown in full; the rest are counted in one entry
SUBAGENT_DEPTH = 3  # levels of children shown nested (a child's child is level 2)
_CHILD_IDS = 10_000  # distinct child ids told apart; beyond, their traffic is counted together
_CHILD_ID_CHARS = 200  # of a child's session id kept
_SESSION_MESSAGE_CHARS = 200_000  # of a message between sessions
MAIN_SESSION = "main agent"  # how a message names the session itself (no child id)

_ROLES: dict[str, Role] = {
    "user_message_chunk": "user",
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
}


class TranscriptBuilder:
    """A transcript that grows in place, O(1) amortised per update; :attr:`state` snapshots it;
    :meth:`changes_since` tells a view which entries changed since it last looked."""

    _CHANGE_LOG_LIMIT = 1 << 16

    def __init__(self, state: TranscriptState | None = None) -> None:
        start = state or TranscriptState()
        self._entries: list[Entry] = list(start.entries)
        self._usage, self._title = start.usage, start.title
        self._status, self._stop_reason, self._error = start.status, start.stop_reason, start.error
        self._cwd = start.cwd
        self._duration_ms, self._tokens = start.duration_ms, start.tokens
        self._other: dict[str, int] = dict(start.other)
        self._tools: dict[str, int] = {}
        self._plan: int | None = None
        self._open_by_request: dict[str, list[int]] = {}  # unanswered permission entries, oldest first
        self._open_by_tool: dict[str, list[int]] = {}
        self._terminals: dict[str, TerminalView] = {}  # client terminals' output so far, by terminal id
        self._by_terminal: dict[str, list[int]] = {}  # tool entries that embed each terminal
        self._questions: dict[str, int] = {}  # the latest entry of each question id
        self._kernel_calls: dict[str, int] = {}  # the entry of each kernel tool call, by its callId
        self._compactions: dict[str, int] = {}  # the latest entry of each compaction id
        self._steers: dict[str, int] = {}  # the entry of each steer, by its steerId
        self._plans: dict[str, int] = {}  # the entry of each named plan (plan_update), by its planId
        self._session_messages: dict[str, int] = {}  # the entry of each session message, by messageId
        # Subagents: the top builder routes every child's update; nested builders only fold their own.
        self._root: TranscriptBuilder = self
        self._nodes: dict[str, _Child] = {}  # every child id seen, with where its entry is shown
        self._dirty: dict[str, _Child] = {}  # children whose entry must take their transcript's new state
        self._more: int | None = None  # the index of the MoreSubagentsEntry
        self._shown_children = 0
        self._parts: list[str] = []  # the last message's text, in chunks not joined yet
        self._parts_len = 0
        self._parts_dirty = False
        self._snapshot: TranscriptState | None = start if state is not None else None
        self._log: list[int] = []  # indices of changed entries, in order (for changes_since)
        self._log_base = 0  # how many log items were dropped from the front
        for index, entry in enumerate(self._entries):
            self._index(index, entry)
        self._adopt(self, None)
        last = self._entries[-1] if self._entries else None
        if isinstance(last, MessageEntry):
            self._parts, self._parts_len = [last.text], len(last.text)

    def _index(self, index: int, entry: Entry) -> None:
        if isinstance(entry, ToolEntry):
            self._tools.setdefault(entry.tool_call_id, index)
            for view in entry.terminals:
                self._terminals.setdefault(view.terminal_id, view)
            for terminal_id in entry.terminal_ids:
                self._by_terminal.setdefault(terminal_id, []).append(index)
        elif isinstance(entry, PlanView) and entry.plan_id is not None:
            self._plans.setdefault(entry.plan_id, index)
        elif isinstance(entry, PlanView):
            self._plan = index if self._plan is None else self._plan
        elif isinstance(entry, QuestionEntry):
            self._questions[entry.request_id] = index
        elif isinstance(entry, KernelToolEntry):
            self._kernel_calls.setdefault(entry.call_id, index)
        elif isinstance(entry, SteerEntry):
            self._steers.setdefault(entry.steer_id, index)
        elif isinstance(entry, CompactionEntry):
            self._compactions[entry.compaction_id] = index
        elif isinstance(entry, SessionMessageEntry):
            self._session_messages.setdefault(entry.message_id, index)
        elif isinstance(entry, PermissionEntry) and not entry.answered:
            if entry.request_id is not None:
                self._open_by_request.setdefault(entry.request_id, []).append(index)
            self._open_by_tool.setdefault(entry.tool_call_id, []).append(index)

    # -- reading ---------------------------------------------------------------------------------

    def _adopt(self, owner: TranscriptBuilder, parent: _Child | None) -> None:
        """Index the children a starting state already shows (``fold(state, update)``), depth first."""
        depth = parent.depth + 1 if parent is not None else 1
        for index, entry in enumerate(owner._entries):
            if isinstance(entry, MoreSubagentsEntry) and owner is self:
                self._more = index
            if not isinstance(entry, SubagentEntry) or entry.session_id in self._nodes:
                continue
            nested = _Nested(entry.transcript)
            nested._root = self
            node = _Child(entry.session_id, nested, owner, index, depth, parent)
            self._nodes[entry.session_id] = node
            self._shown_children += 1
            self._adopt(nested, node)

    @property
    def state(self) -> TranscriptState:
        """The transcript now, frozen (the same object until the next change)."""
        if self._dirty:
            self._settle_children()
        if self._snapshot is None:
            self._settle()
            self._snapshot = TranscriptState(
                entries=tuple(self._entries),
                usage=self._usage,
                title=self._title,
                status=self._status,
                stop_reason=self._stop_reason,
                error=self._error,
                other=tuple(self._other.items()),
                cwd=self._cwd,
                duration_ms=self._duration_ms,
                tokens=self._tokens,
            )
        return self._snapshot

    @property
    def status(self) -> TurnStatus:
        """The turn's status, without building a snapshot."""
        return self._status

    def _settle(self) -> None:
        """Join the open message's chunks into its entry (once per snapshot, not per chunk)."""
        if self._parts_dirty:
            last = self._entries[-1]
            assert isinstance(last, MessageEntry)
            text = "".join(self._parts)
            self._parts = [text]
            self._entries[-1] = last.with_text(text)
            self._parts_dirty = False

    @property
    def change_cursor(self) -> int:
        return self._log_base + len(self._log)

    def changes_since(self, cursor: int) -> set[int] | None:
        """Indices of the entries changed or added since ``cursor`` (a :attr:`change_cursor`); None when
        that is too long ago to say (compare everything)."""
        if cursor < self._log_base:
            return None
        return set(self._log[cursor - self._log_base :])

    # -- writing ---------------------------------------------------------------------------------

    def apply(self, update: AgentSessionUpdate) -> bool:
        """Fold one update in place; True when the transcript changed."""
        if update.__dict__.get("child_session_id") is not None:
            changed = self._root._child_update(update)
            if changed:
                self._snapshot = None
            return changed
        handler = _HANDLERS.get(update.kind)
        if handler is None:
            handler = _metadata if update.kind in METADATA_KINDS else _unknown
        changed = handler(self, update)
        if changed:
            self._snapshot = None
        return changed

    def set_status(
        self, status: TurnStatus, *, stop_reason: str | None = None, error: str | None = None
    ) -> None:
        self._status = status
        self._stop_reason = stop_reason or self._stop_reason
        self._error = error or self._error
        self._snapshot = None

    def _changed(self, index: int) -> None:
        self._log.append(index)
        if len(self._log) > self._CHANGE_LOG_LIMIT:
            drop = len(self._log) // 2
            del self._log[:drop]
            self._log_base += drop

    def _set(self, index: int, entry: Entry) -> None:
        self._entries[index] = entry
        self._changed(index)

    def _add(self, entry: Entry) -> int:
        self._settle()
        index = len(self._entries)
        self._entries.append(entry)
        self._parts = [entry.text] if isinstance(entry, MessageEntry) else []
        self._parts_len = len(entry.text) if isinstance(entry, MessageEntry) else 0
        self._parts_dirty = False
        self._index(index, entry)
        self._changed(index)
        return index

    def _message(self, update: AgentSessionUpdate) -> bool:
        fields = update.__dict__
        content = fields["content"]
        if content is None:
            return False
        role = _ROLES[fields["kind"]]
        text = fields["text"] or ""
        entries = self._entries
        last = entries[-1] if entries else None
        non_text = () if content.type == "text" else (content.type,)
        # A synthesized prompt is always a whole message: prompt ids restart with each connection.
        if (
            type(last) is MessageEntry
            and last.message_id == fields["message_id"]
            and last.role == role
            and fields["raw"].get("synthesized") is not True
        ):
            room = MESSAGE_CHAR_LIMIT - self._parts_len if last.dropped == 0 else 0
            kept = text if len(text) <= room else text[: max(room, 0)]
            if kept:
                self._parts.append(kept)
                self._parts_len += len(kept)
                self._parts_dirty = True
            if len(kept) < len(text) or non_text:
                entries[-1] = replace(
                    last, non_text=last.non_text + non_text, dropped=last.dropped + len(text) - len(kept)
                )
            self._changed(len(entries) - 1)
            return True
        kept = text[:MESSAGE_CHAR_LIMIT]
        entry = made(
            MessageEntry,
            role=role,
            text=kept,
            message_id=fields["message_id"],
            timestamp=fields["timestamp"],
            non_text=non_text,
            dropped=len(text) - len(kept),
            attachments=parse_attachments(fields["raw"].get("attachments")),
        )
        cwd = fields["raw"].get("cwd")
        if role == "user" and isinstance(cwd, str) and cwd:
            self._cwd = cwd
        self._add(entry)
        return True

    def _tool(self, update: AgentSessionUpdate) -> bool:
        call = update.tool_call
        if call is None:
            return False
        index, recorded = self._tools.get(call.tool_call_id), recorded_call(update.raw)
        if index is None:
            entry = ToolEntry.NONE.updated_by(call, recorded)
            if self._cwd is not None:
                entry = replace(entry, cwd=self._cwd)
            index = self._add(self._with_terminals(entry, None))
        else:
            existing = self._entries[index]
            assert isinstance(existing, ToolEntry)
            self._set(index, self._with_terminals(existing.updated_by(call, recorded), index))
        return True

    def _with_terminals(self, entry: ToolEntry, index: int | None) -> ToolEntry:
        """``entry`` showing the output of the terminals its content embeds (noted, for later output)."""
        for terminal_id in entry.terminal_ids:
            if index is not None and index not in self._by_terminal.get(terminal_id, ()):
                self._by_terminal.setdefault(terminal_id, []).append(index)
            view = self._terminals.get(terminal_id)
            if view is not None:
                entry = entry.with_terminal(view)
        return entry

    def _terminal_output(self, update: AgentSessionUpdate) -> bool:
        """A ``terminal_output`` line: the terminal's view grows; every tool call embedding it shows it."""
        terminal_id = update.raw.get("terminalId")
        if not isinstance(terminal_id, str) or not terminal_id:
            return False
        view = self._terminals.get(terminal_id) or TerminalView(terminal_id)
        view = self._terminals[terminal_id] = view.with_output(update.raw)
        for index in self._by_terminal.get(terminal_id, ()):
            entry = self._entries[index]
            if isinstance(entry, ToolEntry):
                self._set(index, entry.with_terminal(view))
        return True

    def _plan_update(self, update: AgentSessionUpdate) -> bool:
        view = PlanView(entries=update.plan or ())
        if self._plan is None:
            self._add(view)
        else:
            self._set(self._plan, view)
        return True

    def _named_plan(self, update: AgentSessionUpdate) -> bool:
        """ACP v1.25 (unstable) ``plan_update`` / ``plan_removed``: plans named by ``planId``, each one
        entry replaced whole by its updates (steps, Markdown or a file); a removed one is marked, kept."""
        raw = update.raw
        content = raw.get("plan") if update.kind == "plan_update" else None
        plan_id = (content if isinstance(content, dict) else raw).get("planId")
        if not isinstance(plan_id, str) or not plan_id:
            return False
        plan_id = plan_id[:_KIND_NAME_LIMIT]
        index = self._plans.get(plan_id)
        existing = self._entries[index] if index is not None else None
        if update.kind == "plan_removed":  # one this turn did not show (an earlier cell's): a line says so
            if not isinstance(existing, PlanView):
                self._add(PlanView(entries=(), plan_id=plan_id, removed=True))
            elif not existing.removed:
                assert index is not None
                self._set(index, replace(existing, removed=True))
            return True
        if not isinstance(content, dict):
            return False
        kind, markdown, uri = content.get("type"), content.get("content"), content.get("uri")
        markdown = markdown if kind == "markdown" and isinstance(markdown, str) else None
        view = PlanView(
            entries=parse_plan(content.get("entries")) if kind == "items" else (),
            plan_id=plan_id,
            markdown=markdown[:MESSAGE_CHAR_LIMIT]
            if kind == "markdown" and isinstance(markdown, str)
            else None,
            uri=uri[:_NOTICE_CHARS] if kind == "file" and isinstance(uri, str) else None,
        )
        if index is None:
            self._add(view)
        else:
            self._set(index, view)
        return True

    def _notice(self, update: AgentSessionUpdate) -> bool:
        title, description = update.raw.get("title"), update.raw.get("description")
        if not isinstance(title, str) or not title.strip():
            return False  # the schema's one required field: no title, nothing to show
        severity = update.raw.get("severity")
        self._add(
            NoticeEntry(
                severity=severity if isinstance(severity, str) else "info",
                title=title[:_NOTICE_CHARS],
                description=description[:_NOTICE_CHARS] if isinstance(description, str) else None,
            )
        )
        return True

    def _compaction(self, update: AgentSessionUpdate) -> bool:
        """A compaction's status or a chunk of its summary, upserted by ``compactionId``. A chunk or an
        update for an id not seen opens its marker; an ``in_progress`` for an id that has ended (an id the
        agent reused) opens a new one rather than rewrite what the reader already saw."""
        raw = update.raw
        compaction_id = raw.get("compactionId")
        if not isinstance(compaction_id, str) or not compaction_id:
            return False
        index = self._compactions.get(compaction_id)
        existing = self._entries[index] if index is not None else None
        status = raw.get("status")
        if isinstance(existing, CompactionEntry) and existing.ended and status == "in_progress":
            existing = None
        entry = (
            existing
            if isinstance(existing, CompactionEntry)
            else CompactionEntry(compaction_id, "in_progress")
        )
        if update.kind == "compaction_summary_chunk":
            entry = _with_summary(entry, block_text(raw.get("content")), append=True)
        else:
            if isinstance(status, str) and status:
                entry = replace(entry, status=status[:_KIND_NAME_LIMIT])
            summary = raw.get("summary")
            if isinstance(summary, list):
                entry = _with_summary(entry, "".join(block_text(block) for block in summary), append=False)
            error = raw.get("error")
            if isinstance(error, str) and error:
                entry = replace(entry, error=error[:_NOTICE_CHARS])
        if existing is None:
            self._add(entry)
        else:
            assert index is not None
            self._set(index, entry)
        return True

    # -- subagents (routed by the top builder) ----------------------------------------------------

    def _child_update(self, update: AgentSessionUpdate) -> bool:
        """An update sent under a child's session id: into that child's transcript (an announcement of
        the child's own child makes that one's entry inside it)."""
        child_id = str(update.child_session_id)[:_CHILD_ID_CHARS]
        node = self._nodes.get(child_id) or self._child(child_id, None, announced=False)
        if update.kind == "subagent_update":
            return self._announce(update, node)
        builder = node.builder
        if builder is None:
            return self._count_more(0, 1)
        handler = _HANDLERS.get(update.kind)
        if handler is None:
            handler = _metadata if update.kind in METADATA_KINDS else _unknown
        if not handler(builder, update):
            return False
        builder._snapshot = None
        self._touch(node)
        return True

    def _subagent(self, update: AgentSessionUpdate) -> bool:
        """A ``subagent_update`` on this session: announce (or update) a child of it."""
        return self._root._announce(update, None)

    def _announce(self, update: AgentSessionUpdate, parent: _Child | None) -> bool:
        raw = update.raw
        child_id = raw.get("sessionId")
        if not isinstance(child_id, str) or not child_id:
            return self._unknown(update)  # no child to name: counted, never dropped silently
        child_id = child_id[:_CHILD_ID_CHARS]
        node = self._nodes.get(child_id) or self._child(child_id, parent, announced=True)
        if node.builder is None:
            return self._count_more(0, 1)
        entry = node.owner._entries[node.index]
        assert isinstance(entry, SubagentEntry)
        patched = _patched(entry, raw)
        if patched == entry:
            return False
        node.owner._set(node.index, patched)
        node.owner._snapshot = None
        if node.parent is not None:
            self._touch(node.parent)
        return True

    def _child(self, child_id: str, parent: _Child | None, *, announced: bool) -> _Child:
        """A child seen for the first time: its entry where it first appears (in its parent's transcript,
        up to :data:`SUBAGENT_DEPTH` levels), or counted when :data:`SUBAGENTS_SHOWN` are shown."""
        hidden = parent is not None and parent.builder is None
        if len(self._nodes) >= _CHILD_IDS:  # told apart no more: one node counts them all
            node = self._nodes.get(OTHER_OVERFLOW)
            if node is None:
                node = self._nodes[OTHER_OVERFLOW] = _Child(OTHER_OVERFLOW, None, self, -1, 1, None)
                self._count_more(1, 0, at_least=True)
            return node
        if hidden or self._shown_children >= SUBAGENTS_SHOWN:
            node = self._nodes[child_id] = _Child(child_id, None, self, -1, 1, parent)
            self._count_more(1, 0)
            return node
        named_parent = parent.session_id if parent is not None else None
        while parent is not None and parent.depth >= SUBAGENT_DEPTH:
            parent = parent.parent
        owner = parent.builder if parent is not None and parent.builder is not None else self
        nested = _Nested(None)
        nested._root = self
        entry = SubagentEntry(child_id, announced=announced, parent_session_id=named_parent)
        depth = parent.depth + 1 if parent is not None else 1
        node = _Child(child_id, nested, owner, owner._add(entry), depth, parent)
        owner._snapshot = None
        self._nodes[child_id] = node
        self._shown_children += 1
        if parent is not None:
            self._touch(parent)
        return node

    def _count_more(self, children: int, updates: int, *, at_least: bool = False) -> bool:
        if self._more is None:
            self._more = self._add(MoreSubagentsEntry(children, updates, at_least))
        else:
            more = self._entries[self._more]
            assert isinstance(more, MoreSubagentsEntry)
            counted = MoreSubagentsEntry(
                more.children + children, more.updates + updates, more.at_least or at_least
            )
            self._set(self._more, counted)
        self._snapshot = None
        return True

    def _touch(self, node: _Child) -> None:
        """``node``'s transcript changed: its entry (and its ancestors') takes the new state when the
        transcript is next read; the top-level entry holding it is what changed for a view."""
        top = node
        while True:
            self._dirty[top.session_id] = top
            if top.parent is None:
                break
            top = top.parent
        if top.index >= 0 and top.owner is self:
            self._changed(top.index)

    def _settle_children(self) -> None:
        """Put each changed child's transcript into its entry, deepest first."""
        for node in sorted(self._dirty.values(), key=lambda node: -node.depth):
            if node.builder is None:
                continue
            owner = node.owner
            entry = owner._entries[node.index]
            assert isinstance(entry, SubagentEntry)
            owner._entries[node.index] = replace(entry, transcript=node.builder.state)
            owner._snapshot = None
        self._dirty.clear()

    def label_of(self, session_id: Any) -> str | None:
        """How a session is named in a message between sessions: a child's label, else the session
        itself (the only other session on its connection)."""
        if not isinstance(session_id, str) or not session_id:
            return None
        node = self._root._nodes.get(session_id[:_CHILD_ID_CHARS])
        if node is None:
            return MAIN_SESSION
        if node.builder is None:
            return f"child {session_id[:40]}"
        entry = node.owner._entries[node.index]
        return entry.label if isinstance(entry, SubagentEntry) else session_id[:40]

    def _session_message(self, update: AgentSessionUpdate) -> bool:
        """A message between sessions, upserted by ``messageId``: participants replace (omitted keep,
        null clears), a non-empty content replaces the text, a chunk appends one block."""
        raw = update.raw
        message_id = raw.get("messageId")
        if not isinstance(message_id, str) or not message_id:
            return self._unknown(update)
        index = self._session_messages.get(message_id)
        existing = self._entries[index] if index is not None else SessionMessageEntry(message_id)
        assert isinstance(existing, SessionMessageEntry)
        entry = existing
        if update.kind == "session_message_chunk":
            entry = _with_blocks(entry, [raw.get("content")], append=True)
        else:
            if "senderSessionId" in raw:
                entry = replace(entry, sender=self.label_of(raw.get("senderSessionId")))
            if "recipientSessionId" in raw:
                entry = replace(entry, recipient=self.label_of(raw.get("recipientSessionId")))
            content = raw.get("content")
            if "content" in raw and (content is None or isinstance(content, list)):
                entry = _with_blocks(entry, content or [], append=False)
        if index is None:
            self._session_messages[message_id] = self._add(entry)
        elif entry != existing:
            self._set(index, entry)
        else:
            return False
        return True

    def _usage_update(self, update: AgentSessionUpdate) -> bool:
        if update.usage in (None, self._usage):
            return False
        self._usage = update.usage
        return True

    def _info(self, update: AgentSessionUpdate) -> bool:
        title = session_title(update)
        if title in (None, self._title):
            return False
        self._title = title
        return True

    def _turn_end(self, update: AgentSessionUpdate) -> bool:
        """The one reading of the journaled turn outcome (``sessions/session/turn_tracker.py``):
        ``raw.outcome`` sets the status, else the stop reason tells it (none: failed); its stop reason
        and error replace ours."""
        raw = update.raw
        outcome, stop, error = raw.get("outcome"), raw.get("stopReason"), raw.get("error")
        stop = stop if isinstance(stop, str) else None
        status: TurnStatus = "failed" if stop is None else "cancelled" if stop == "cancelled" else "finished"
        self._status = outcome if outcome in ("finished", "cancelled", "failed") else status
        self._stop_reason = stop
        self._error = error if isinstance(error, str) else None
        duration = raw.get("durationMs")
        if isinstance(duration, bool) or not isinstance(duration, int | float):
            duration = None
        self._duration_ms = float(duration) if duration is not None and 0 <= duration < math.inf else None
        self._tokens = tuple(token_counts(raw.get("usage")).items())
        self._snapshot = None
        return True

    def _permission(self, update: AgentSessionUpdate) -> bool:
        """A permission request, or its decision: one entry per request.

        A request always adds an entry; a decision answers the latest unanswered entry with its
        ``requestId`` (ids restart with each connection, so an older unanswered one from a dead connection
        stays as it was). Decision lines journaled before request lines existed carry no ``requestId``;
        they match the last unanswered entry of the same tool call, or stand alone."""
        decided = update.kind == "permission_decision"
        entry = permission_entry(update.raw, decided=decided)
        if self._in_tool_card(entry, decided):
            return True
        request_id = entry.request_id
        if decided:
            opened = (
                self._open_by_request.get(request_id)
                if request_id is not None
                else self._open_by_tool.get(entry.tool_call_id)
            )
            while opened:  # answered ones (through the other index) are dropped lazily
                index = opened.pop()
                existing = self._entries[index]
                if isinstance(existing, PermissionEntry) and not existing.answered:
                    self._set(index, entry)
                    return True
        self._add(entry)
        return True

    def _in_tool_card(self, entry: PermissionEntry, decided: bool) -> bool:
        """The permission shown inside its tool call's card (``entry_joins``); False: it stands alone."""
        index = self._tools.get(entry.tool_call_id)
        tool = self._entries[index] if index is not None else None
        joined = with_permission(tool, entry, decided=decided) if isinstance(tool, ToolEntry) else None
        if index is None or joined is None:
            return False
        self._set(index, joined)
        return True

    def _question(self, update: AgentSessionUpdate) -> bool:
        """A question or its answer: one entry per question, upserted by ``requestId`` (ids restart with
        each connection: a request always adds an entry; an answer updates the latest with that id)."""
        raw = update.raw
        request_id = raw.get("requestId")
        index = self._questions.get(request_id) if isinstance(request_id, str) else None  # else: alone
        decided = update.kind == "question_decision"
        if index is not None and decided:
            existing = self._entries[index]
            assert isinstance(existing, QuestionEntry)
            self._set(index, question_entry(raw, existing))
        else:
            self._add(question_entry(raw, None))
        return True

    def _file_write(self, update: AgentSessionUpdate) -> bool:
        """A file silo_nb wrote for the agent: the latest tool call whose diff proposed exactly that says
        "written" instead of a second card with the same diff (``entry_joins``)."""
        entry = file_edit_entry(update.raw)
        if self._cwd is not None:
            entry = replace(entry, cwd=self._cwd)
        for index in sorted(self._tools.values(), reverse=True):
            tool = self._entries[index]
            joined = written_as_proposed(tool, entry) if isinstance(tool, ToolEntry) else None
            if joined is not None:
                self._set(index, joined)
                return True
        self._add(entry)
        return True

    def _kernel_tool(self, update: AgentSessionUpdate) -> bool:
        entry = kernel_tool_entry(update.raw)  # one entry per call: its later lines replace it in place
        index = self._kernel_calls.get(entry.call_id)
        if index is None:
            self._add(entry)
        else:
            self._set(index, entry)
        return True

    def _steer(self, update: AgentSessionUpdate) -> bool:
        """The user's input to the running turn, upserted by ``steerId`` (sent, then the agent's answer)."""
        line = SteerLine.read(update)
        if line is None:
            return False
        entry = SteerEntry(line.steer_id, line.text[:MESSAGE_CHAR_LIMIT], line.outcome, line.note)
        index = self._steers.get(line.steer_id)
        if index is None:
            self._add(entry)
        else:
            self._set(index, entry)
        return True

    def _metadata(self, update: AgentSessionUpdate) -> bool:
        return False

    def _unknown(self, update: AgentSessionUpdate) -> bool:
        """A kind silo_nb does not know: counted (the footer names it) and shown as a small line with its
        text fields; a run of the same kind in a row is one line (an agent streaming ``shell_output``)."""
        kind = update.kind[:_KIND_NAME_LIMIT]
        counted = kind if kind in self._other or len(self._other) < OTHER_KIND_LIMIT else OTHER_OVERFLOW
        self._other[counted] = self._other.get(counted, 0) + 1
        if counted == OTHER_OVERFLOW:
            return True  # past the named kinds: counted only (the footer says how many are not shown)
        text = unknown_text(update.raw)
        last = self._entries[-1] if self._entries else None
        if isinstance(last, UnknownEntry) and last.kind == kind:
            joined = "\n".join(part for part in (last.text, text) if part)
            kept, dropped = _bounded(joined, last.dropped, UNKNOWN_TEXT_LIMIT)
            self._set(len(self._entries) - 1, UnknownEntry(kind, kept, last.count + 1, dropped))
        else:
            kept, dropped = _bounded(text, 0, UNKNOWN_TEXT_LIMIT)
            self._add(UnknownEntry(kind, kept, 1, dropped))
        return True


_Handler = Callable[[TranscriptBuilder, AgentSessionUpdate], bool]
_metadata: _Handler = TranscriptBuilder._metadata
_unknown: _Handler = TranscriptBuilder._unknown
# One dispatch on the update's kind (a new synthesized kind is one more row); kinds not here are metadata
# (ignored) or unknown (counted).
_HANDLERS: dict[str, _Handler] = {
    **dict.fromkeys(_ROLES, TranscriptBuilder._message),
    "tool_call": TranscriptBuilder._tool,
    "tool_call_update": TranscriptBuilder._tool,
    "plan": TranscriptBuilder._plan_update,
    "plan_update": TranscriptBuilder._named_plan,
    "plan_removed": TranscriptBuilder._named_plan,
    "usage_update": TranscriptBuilder._usage_update,
    "notice": TranscriptBuilder._notice,
    "compaction_update": TranscriptBuilder._compaction,
    "compaction_summary_chunk": TranscriptBuilder._compaction,
    "subagent_update": TranscriptBuilder._subagent,
    "session_message": TranscriptBuilder._session_message,
    "session_message_chunk": TranscriptBuilder._session_message,
    "session_info_update": TranscriptBuilder._info,
    "permission_request": TranscriptBuilder._permission,
    "permission_decision": TranscriptBuilder._permission,
    "turn_end": TranscriptBuilder._turn_end,
    "terminal_output": TranscriptBuilder._terminal_output,
    "file_write": TranscriptBuilder._file_write,
    "kernel_tool": TranscriptBuilder._kernel_tool,
    "steer": TranscriptBuilder._steer,
    "question_request": TranscriptBuilder._question,
    "question_decision": TranscriptBuilder._question,
}
HANDLED_KINDS = frozenset(_HANDLERS)  # a test checks them against the kinds table (model/kinds.py)


def block_text(block: object) -> str:
    """The text of one ACP content block; ``[image]`` and the like for the others, "" for no block."""
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return text if isinstance(text, str) else ""
    return f"[{kind[:_KIND_NAME_LIMIT]}]" if isinstance(kind, str) and kind else ""


def _bounded(text: str, dropped: int, limit: int) -> tuple[str, int]:
    """``text`` cut at ``limit`` characters, and ``dropped`` plus what the cut left out (an entry's kept text
    and its count of characters not kept: a compaction's summary, a session message, unknown updates)."""
    kept = text[:limit]
    return kept, dropped + len(text) - len(kept)


def _with_summary(entry: CompactionEntry, text: str, *, append: bool) -> CompactionEntry:
    summary, dropped = _bounded(
        entry.summary + text if append else text, entry.dropped if append else 0, SUMMARY_CHAR_LIMIT
    )
    return replace(entry, summary=summary, dropped=dropped)


_UNKNOWN_FIELDS = 16  # fields of an unknown update looked at for text


def unknown_text(raw: object) -> str:
    """The text fields of an update of an unknown kind: its string values (an id-looking field too: it
    may be all there is) and the text of a ``content`` block, in order (the wire cut each string at 1 Mi
    characters; the entry keeps :data:`UNKNOWN_TEXT_LIMIT` and counts the rest)."""
    if not isinstance(raw, dict):
        return ""
    parts: list[str] = []
    for key, value in list(raw.items())[:_UNKNOWN_FIELDS]:
        if key in ("sessionUpdate", "_meta"):
            continue
        if isinstance(value, str) and value:
            parts.append(value)
        elif key == "content":
            blocks = value if isinstance(value, list) else [value]
            parts.extend(text for text in map(block_text, blocks[:_UNKNOWN_FIELDS]) if text)
    return "\n".join(parts)


def fold(state: TranscriptState, update: AgentSessionUpdate) -> TranscriptState:
    """The transcript after ``update``; never raises nor mutates ``state`` (untouched entries are shared).
    O(entries) per step (it indexes ``state``): fold streams with :func:`fold_all` or a builder."""
    builder = TranscriptBuilder(state)
    return builder.state if builder.apply(update) else state


def fold_all(updates: Iterable[AgentSessionUpdate], state: TranscriptState | None = None) -> TranscriptState:
    """Every update folded in turn, in linear time (no cyclic GC meanwhile: ``util.gc_paused``)."""
    builder = _Folding(state)
    handlers, apply, changed = _HANDLERS, builder.apply, False
    with gc_paused(promote=isinstance(updates, Sized) and len(updates) >= 10_000):
        for update in updates:  # apply's dispatch written out; nobody asks a fold's builder for changes
            fields = update.__dict__  # every field is there (a model's): indexing is the fast path
            if fields["child_session_id"] is None and (handler := handlers.get(fields["kind"])) is not None:
                if handler(builder, update):
                    changed = True
            else:
                apply(update)  # a child's, metadata or unknown: it keeps its own account of changes
    if changed:
        builder._snapshot = None
    return builder.state


class _Folding(TranscriptBuilder):
    """A builder nobody asks what changed (``fold_all``'s): it keeps no change log."""

    def _changed(self, index: int) -> None:
        pass


class _Nested(TranscriptBuilder):
    """A child's transcript inside its parent's: folded by the top builder, which keeps the change log."""

    def _changed(self, index: int) -> None:
        pass

    def _adopt(self, owner: TranscriptBuilder, parent: _Child | None) -> None:
        pass  # the top builder indexes every level's children


@dataclass(slots=True, eq=False)
class _Child:
    """One child session as the top builder routes to it: its builder (None: counted, not shown), the
    builder whose entries show it and where, its depth (1: a child of this session) and its parent."""

    session_id: str
    builder: TranscriptBuilder | None
    owner: TranscriptBuilder
    index: int
    depth: int
    parent: _Child | None


def _field(raw: dict[str, Any], key: str, old: Any) -> Any:
    """A patch field of ``subagent_update``: omitted keeps ``old``, null clears, a string replaces."""
    if key not in raw:
        return old
    value = raw[key]
    return value[:_NOTICE_CHARS] if isinstance(value, str) else None if value is None else old


def _patched(entry: SubagentEntry, raw: dict[str, Any]) -> SubagentEntry:
    """``entry`` after one ``subagent_update`` (omitted fields unchanged, ``null`` clears them)."""
    state, stop_reason, cancel = entry.state, entry.stop_reason, entry.cancel
    if "state" in raw:
        value = raw["state"]
        word = value.get("state") if isinstance(value, dict) else None
        if value is None or isinstance(word, str):
            state = word[:80] if isinstance(word, str) else None
            reason = value.get("stopReason") if isinstance(value, dict) else None
            stop_reason = reason[:80] if isinstance(reason, str) else None
    if "capabilities" in raw:
        caps = raw["capabilities"]
        cancel = isinstance(caps, dict) and isinstance(caps.get("cancel"), dict)
    return replace(
        entry,
        title=_field(raw, "title", entry.title),
        description=_field(raw, "description", entry.description),
        cwd=_field(raw, "cwd", entry.cwd),
        state=state,
        stop_reason=stop_reason,
        cancel=cancel,
        announced=True,
    )


def _with_blocks(entry: SessionMessageEntry, blocks: list[Any], *, append: bool) -> SessionMessageEntry:
    """``entry`` with ``blocks``' text appended (or in place of its text), bounded."""
    texts: list[str] = [entry.text] if append else []
    non_text: list[str] = list(entry.non_text) if append else []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(kind, str):
            non_text.append(kind[:40])
    kept, dropped = _bounded("".join(texts), entry.dropped if append else 0, _SESSION_MESSAGE_CHARS)
    return replace(entry, text=kept, non_text=tuple(non_text[:100]), dropped=dropped)
