"""Turn tracking for one session: prompts in flight and agent-initiated turns (Silo §4.3).

- A ``prompt()`` opens a turn when none is in flight and closes it when the last one ends.
- Work updates (chunks, tool calls, plans) with no prompt in flight open an *agent* turn. It ends at
  Claude's explicit end marker (a ``usage_update`` whose ``_meta["_claude/origin"].kind`` is a string)
  or, for agents that never send one, after ``quiescence_seconds`` of silence with no tool call still
  running (Silo's ``TURN_QUIESCENCE_MS``).
- Each turn's end is journaled (improvement over Silo, which keeps no outcome): a synthesized
  ``turn_end`` line (``raw``: ``synthesized``, ``outcome`` finished/cancelled/failed, the turn's
  ``stopReason`` (``agentStopReason``: the agent's own, when a Stop made it "cancelled"), the ``error`` as
  the user saw it, ``signIn``: the method ids when the agent wants a
  sign-in; ``startedAt``/``endedAt``/``durationMs``, and the session's ``profile``, ``agent`` and
  ``config`` values at the end), recorded like the prompt line — journal and ``on_transcript`` — so a
  restored cell repaints a failed or cancelled turn as it ended live, and ``silo_nb.frame`` can describe
  each turn from the journal alone. Silo's readers skip kinds they do not know.
- A new session's opening (what the agent sends before the first prompt: pi's "pi v1.6.0" banner, as an
  ``agent_message_chunk`` right after ``session/new``) is not agent work: message chunks then open no
  turn (the session stays idle, as Silo shows pi), while a tool call or a plan still does.
- What it decides goes to the registry through :class:`~silo_nb.sessions.host.SessionRegistry`; it
  knows nothing else of the session.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from silo_nb.model import (
    TEXT_KINDS,
    WORK_KINDS,
    AgentSessionUpdate,
    TurnEndLine,
    token_counts,
)
from silo_nb.sessions.host import SessionRegistry
from silo_nb.sessions.status import TurnOutcome, now_iso

__all__ = [
    "TURN_QUIESCENCE_SECONDS",
    "TurnTracker",
    "is_turn_end_marker",
    "turn_end_line",
]

TURN_QUIESCENCE_SECONDS = 15.0
SETTLED_TOOL_STATUSES = frozenset({"completed", "failed", "cancelled"})


def is_turn_end_marker(update: AgentSessionUpdate) -> bool:
    """Claude's explicit turn end: a ``usage_update`` whose ``_meta["_claude/origin"].kind`` is a string (a
    subagent's ends the child's work, not its parent's turn)."""
    if update.kind != "usage_update" or update.child_session_id is not None:
        return False
    meta = update.raw.get("_meta")
    origin = meta.get("_claude/origin") if isinstance(meta, Mapping) else None
    return isinstance(origin, Mapping) and isinstance(origin.get("kind"), str)


def turn_end_line(
    outcome: TurnOutcome,
    *,
    stop_reason: str | None = None,
    error: str | None = None,
    sign_in: tuple[str, ...] = (),
    context: Mapping[str, object] | None = None,
    agent_stop_reason: str | None = None,
    usage: Mapping[str, object] | None = None,
) -> AgentSessionUpdate:
    """The synthesized journal line that ends a turn (see the module docstring)."""
    fields: dict[str, Any] = {"outcome": outcome, **(context or {})}
    tokens = token_counts(usage)
    if tokens:
        fields["usage"] = tokens
    if stop_reason:
        fields["stopReason"] = stop_reason
    if agent_stop_reason:
        fields["agentStopReason"] = agent_stop_reason
    if error:
        fields["error"] = error
    if sign_in:
        fields["signIn"] = list(sign_in)
    return TurnEndLine.written(fields, timestamp=now_iso())


class TurnTracker:
    """Turn state of one session; reports begin/end to the registry under ``entry_id()``."""

    def __init__(
        self,
        registry: SessionRegistry,
        entry_id: Callable[[], str],
        flush: Callable[[], None],
        record: Callable[[AgentSessionUpdate], None] | None = None,
        context: Callable[[], Mapping[str, object]] | None = None,
    ) -> None:
        self._registry = registry
        self._entry_id = entry_id
        self._flush = flush
        self._record = record
        self._context = context
        self._started: tuple[str, float] | None = None  # the open turn's start: ISO time, monotonic
        self.handshaking = True
        self.opening = True  # a new session before its first prompt (see the module docstring)
        self.closed = False
        self.quiescence_seconds = TURN_QUIESCENCE_SECONDS
        self.prompts_in_flight = 0
        self._agent_turn_open = False
        self._marks_turn_ends = False
        self._quiescence: asyncio.TimerHandle | None = None
        self._tools_in_flight: set[str] = set()

    # -- prompts ----------------------------------------------------------------------------------

    def prompt_started(self) -> None:
        """A prompt takes over any agent-initiated turn."""
        self.reset()
        self.opening = False
        if self.prompts_in_flight == 0:
            self._started = (now_iso(), time.monotonic())
            self._registry.begin_turn(self._entry_id())
        self.prompts_in_flight += 1

    def prompt_ended(
        self,
        outcome: TurnOutcome,
        *,
        stop_reason: str | None = None,
        error: str | None = None,
        sign_in: tuple[str, ...] = (),
        agent_stop_reason: str | None = None,
        usage: Mapping[str, object] | None = None,
    ) -> None:
        self.prompts_in_flight -= 1
        self._journal_end(
            outcome,
            stop_reason=stop_reason,
            error=error,
            sign_in=sign_in,
            agent_stop_reason=agent_stop_reason,
            usage=usage,
        )
        self._flush()
        if not self.closed and self.prompts_in_flight == 0:
            self._registry.end_turn(self._entry_id(), outcome)

    # -- agent-initiated turns --------------------------------------------------------------------

    def observe(self, update: AgentSessionUpdate) -> None:
        call = update.tool_call
        if call is not None:
            key = call.tool_call_id  # a subagent's ids are its own: they may repeat its parent's
            if update.child_session_id is not None:
                key = f"{update.child_session_id}\0{key}"
            if call.status in SETTLED_TOOL_STATUSES:
                self._tools_in_flight.discard(key)
            elif call.status is not None or update.kind == "tool_call":
                self._tools_in_flight.add(key)
        marker = is_turn_end_marker(update)
        if marker:
            self._marks_turn_ends = True
            self._stop_quiescence()
        if self.handshaking or self.prompts_in_flight:
            return
        if marker:
            if self._agent_turn_open:
                self._end_agent_turn("finished")
            return
        if update.kind in WORK_KINDS:
            if self.opening and update.kind in TEXT_KINDS and not self._agent_turn_open:
                return  # a banner, not a turn
            self.open_agent_turn()

    def permission_answered(self) -> None:
        """An answered permission with no prompt in flight is agent work too."""
        if not self.closed and not self.prompts_in_flight and not self.handshaking:
            self.open_agent_turn()

    def open_agent_turn(self) -> None:
        if not self._agent_turn_open:
            self._agent_turn_open = True
            self._started = (now_iso(), time.monotonic())
            self._registry.begin_turn(self._entry_id())
        if not self._marks_turn_ends:
            self._arm_quiescence()

    def connection_lost(self, reason: str = "") -> None:
        """The agent went away: an open agent turn fails (a prompt in flight fails on its own)."""
        was_open = self._agent_turn_open
        self.reset()
        if not self.handshaking and self.prompts_in_flight == 0:
            if was_open:
                self._journal_end("failed", error=reason.splitlines()[0] if reason else None)
            self._flush()
            self._registry.end_turn(self._entry_id(), "failed")
        else:
            self._flush()

    def reset(self) -> None:
        self._agent_turn_open = False
        self._stop_quiescence()
        self._tools_in_flight.clear()

    def _journal_end(
        self,
        outcome: TurnOutcome,
        *,
        stop_reason: str | None = None,
        error: str | None = None,
        sign_in: tuple[str, ...] = (),
        agent_stop_reason: str | None = None,
        usage: Mapping[str, object] | None = None,
    ) -> None:
        # Not refused once closed: a prompt cut short by dispose still ends (failed, as the user saw it),
        # journaled while the writer is still held (the handle drops lines after it lets it go).
        if self._record is None:
            return
        context: dict[str, object] = dict(self._context()) if self._context is not None else {}
        if self._started is not None:
            started_at, start = self._started
            ms = round((time.monotonic() - start) * 1000, 1)
            context.update(startedAt=started_at, endedAt=now_iso(), durationMs=ms)
        line = turn_end_line(
            outcome,
            stop_reason=stop_reason,
            error=error,
            sign_in=sign_in,
            context=context,
            agent_stop_reason=agent_stop_reason,
            usage=usage,
        )
        self._record(line)

    def _end_agent_turn(self, outcome: TurnOutcome) -> None:
        self.reset()
        self._journal_end(outcome)
        self._flush()
        self._registry.end_turn(self._entry_id(), outcome)

    # -- the quiet-period timer -------------------------------------------------------------------

    def _arm_quiescence(self) -> None:
        self._stop_quiescence()
        self._quiescence = asyncio.get_running_loop().call_later(
            self.quiescence_seconds, self._quiescence_fired
        )

    def _stop_quiescence(self) -> None:
        if self._quiescence is not None:
            self._quiescence.cancel()
            self._quiescence = None

    def _quiescence_fired(self) -> None:
        self._quiescence = None
        if not self._agent_turn_open or self.closed:
            return
        if self._tools_in_flight:
            self._arm_quiescence()
            return
        self._end_agent_turn("finished")
