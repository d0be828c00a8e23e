"""The status board of one ``AgentsService``: an ``AgentInfo`` per chat session (Silo's ``ctx.agents``).

- One entry per session: an ``AgentInfo`` (frozen, replaced on every change) and the turn phase it is
  derived from. ``get_state`` returns the cached snapshot; ``subscribe`` listeners get the whole list,
  only when some entry changed (compared by identity), never on subscribe.
- Sessions report turns and permissions here (``host.SessionRegistry``); the rules live in ``status.py``.
- "Witnessed" (Silo: the session's surface is the active tab) is the service's ``is_witnessed`` hook,
  asked through ``witnessed``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from silo_nb.model import (
    AgentInfo,
)
from silo_nb.sessions.status import TurnOutcome, TurnPhase, begin_turn, end_turn, now_iso, witness_turn
from silo_nb.util import Disposable, ListenerSet

__all__ = ["StateListener", "StatusBoard"]

log = logging.getLogger("silo_nb.agents")

StateListener = Callable[[list[AgentInfo]], None]


@dataclass
class _Entry:
    info: AgentInfo
    phase: TurnPhase = field(default_factory=TurnPhase)
    handle: Any = None  # the live session (an AgentSessionHandle) when there is one
    reveal: Callable[[], None] | None = None


class StatusBoard:
    """The sessions' status entries (see the module docstring)."""

    def __init__(self, workspace_id: str, witnessed: Callable[[str], bool]) -> None:
        self.workspace_id = workspace_id
        self.is_witnessed = witnessed
        self._entries: dict[str, _Entry] = {}
        self._snapshot: dict[bool, list[AgentInfo]] = {}
        self._listeners: dict[bool, ListenerSet[list[AgentInfo]]] = {
            False: ListenerSet("agents state"),
            True: ListenerSet("agents state"),
        }

    def handle(self, entry_id: str) -> Any:
        """The live session registered under ``entry_id``, if any."""
        entry = self._entries.get(entry_id)
        return entry.handle if entry is not None else None

    def __len__(self) -> int:
        return len(self._entries)

    def get_state(self, *, all_workspaces: bool = False) -> list[AgentInfo]:
        """The sessions of this workspace (or of all), in registration order."""
        return list(self._compute(all_workspaces))

    def get(self, session_id: str) -> AgentInfo | None:
        entry = self._entries.get(session_id)
        return entry.info if entry else None

    def subscribe(self, listener: StateListener, *, all_workspaces: bool = False) -> Disposable:
        """Call ``listener(state)`` whenever the list changes. No initial call."""
        self._snapshot.setdefault(all_workspaces, self._compute(all_workspaces))
        return self._listeners[all_workspaces].add(listener)

    def acknowledge(self, session_id: str) -> None:
        """Clear ``needs_attention`` (activity and ``idle_since`` are untouched)."""
        entry = self._entries.get(session_id)
        if entry is not None:
            self._apply_phase(session_id, witness_turn(entry.phase))

    def reveal(self, session_id: str) -> None:
        """Call the ``reveal`` callback the session was connected with, if any. Unknown ids: nothing."""
        entry = self._entries.get(session_id)
        if entry is not None and entry.reveal is not None:
            try:
                entry.reveal()
            except Exception:
                log.exception("reveal callback failed for %s", session_id)

    def register(
        self, info: AgentInfo, *, handle: Any = None, reveal: Callable[[], None] | None = None
    ) -> None:
        previous = self._entries.get(info.id)
        phase = TurnPhase(activity=info.activity, idle_since=info.idle_since)
        self._entries[info.id] = _Entry(info=info, phase=phase, handle=handle, reveal=reveal)
        if previous is None:
            log.debug("registered %s", info.id)
        self._changed()

    def unregister(self, session_id: str) -> None:
        if self._entries.pop(session_id, None) is not None:
            self._changed()

    def patch(self, entry_id: str, /, **fields: Any) -> None:
        entry = self._entries.get(entry_id)
        if entry is None:
            return
        updated = entry.info.model_copy(update=fields)
        if updated != entry.info:
            entry.info = updated
            self._changed()

    def _apply_phase(self, session_id: str, phase: TurnPhase) -> None:
        entry = self._entries.get(session_id)
        if entry is None:
            return
        entry.phase = phase
        self.patch(
            session_id,
            activity=phase.activity,
            needs_attention=phase.needs_attention,
            attention_since=phase.attention_since,
            working_since=phase.working_since,
            idle_since=phase.idle_since,
        )

    def begin_turn(self, session_id: str) -> None:
        entry = self._entries.get(session_id)
        if entry is not None:
            self._apply_phase(session_id, begin_turn(entry.phase, now_iso()))

    def end_turn(self, session_id: str, outcome: TurnOutcome) -> None:
        entry = self._entries.get(session_id)
        if entry is not None:
            witnessed = self._witnessed(session_id)
            self._apply_phase(
                session_id, end_turn(entry.phase, now=now_iso(), outcome=outcome, witnessed=witnessed)
            )

    def blocked(self, session_id: str) -> None:
        """A permission request is still unanswered after every listener ran."""
        entry = self._entries.get(session_id)
        if entry is None:
            return
        phase = entry.phase
        attention = phase.needs_attention or not self._witnessed(session_id)
        self._apply_phase(
            session_id,
            TurnPhase(
                activity="blocked",
                needs_attention=attention,
                attention_since=(phase.attention_since or now_iso()) if attention else None,
                working_since=phase.working_since or now_iso(),
                idle_since=None,
            ),
        )

    def unblocked(self, session_id: str) -> None:
        """A permission request was answered: back to working, attention cleared."""
        entry = self._entries.get(session_id)
        if entry is None:
            return
        phase = entry.phase
        self._apply_phase(
            session_id,
            TurnPhase(activity="working", working_since=phase.working_since or now_iso(), idle_since=None),
        )

    def resumed_in_place(self, entry_id: str, session_id: str) -> None:
        entry = self._entries.get(entry_id)
        if entry is None:
            return
        phase = replace(
            entry.phase, activity="idle", needs_attention=False, attention_since=None, working_since=None
        )
        self._apply_phase(entry_id, phase)
        self.patch(entry_id, session_id=session_id, chat_resume_state="resumed")

    def _witnessed(self, session_id: str) -> bool:
        try:
            return bool(self.is_witnessed(session_id))
        except Exception:
            log.exception("is_witnessed hook failed")
            return False

    def _compute(self, all_workspaces: bool) -> list[AgentInfo]:
        return [
            e.info
            for e in self._entries.values()
            if all_workspaces or e.info.workspace_id == self.workspace_id
        ]

    def _changed(self) -> None:
        for scope, listeners in self._listeners.items():
            if not listeners:
                continue
            fresh = self._compute(scope)
            old = self._snapshot.get(scope, [])
            if len(fresh) == len(old) and all(a is b for a, b in zip(fresh, old, strict=True)):
                continue
            self._snapshot[scope] = fresh
            listeners.emit(list(fresh))
