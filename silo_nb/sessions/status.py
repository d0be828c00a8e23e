"""Turn phases: Silo's shared turn core (``beginTurn`` / ``endTurn`` / ``witnessTurn``), as pure functions.

``AgentsService`` keeps one :class:`TurnPhase` per session and patches ``AgentInfo`` from it; keeping
the rules here, free of I/O and clocks (``now`` is passed in), makes them table-testable.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

from silo_nb.model import (
    AgentActivity,
)

__all__ = ["TurnOutcome", "TurnPhase", "begin_turn", "end_turn", "now_iso", "witness_turn"]

TurnOutcome = Literal["finished", "cancelled", "failed"]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class TurnPhase:
    activity: AgentActivity = "idle"
    needs_attention: bool = False
    attention_since: str | None = None
    working_since: str | None = None
    idle_since: str | None = None


def begin_turn(prev: TurnPhase, now: str) -> TurnPhase:
    return TurnPhase(activity="working", working_since=now)


def end_turn(
    prev: TurnPhase, *, now: str, outcome: TurnOutcome, witnessed: bool, is_agent: bool = True
) -> TurnPhase:
    was_working = prev.activity == "working"
    needs_attention, attention_since = prev.needs_attention, prev.attention_since
    if was_working and outcome == "finished":
        needs_attention = is_agent and not witnessed
        attention_since = now if needs_attention else None
    return TurnPhase(
        activity="error" if outcome == "failed" else "idle",
        needs_attention=needs_attention,
        attention_since=attention_since,
        working_since=None,
        idle_since=now if was_working else (prev.idle_since or now),
    )


def witness_turn(prev: TurnPhase) -> TurnPhase:
    if not prev.needs_attention and prev.attention_since is None:
        return prev
    return replace(prev, needs_attention=False, attention_since=None)
