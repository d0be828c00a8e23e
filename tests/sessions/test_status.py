"""The shared turn core (silo-agents-api.md §4.1) and the chat transitions built on it (§4.2)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from silo_nb.sessions.status import TurnPhase, begin_turn, end_turn, now_iso, witness_turn

T0 = "2026-09-01T10:00:00.000Z"
T1 = "2026-09-01T10:00:05.000Z"
NOW = "2026-09-01T10:01:00.000Z"

IDLE = TurnPhase(activity="idle", idle_since=T0)
WORKING = TurnPhase(activity="working", working_since=T1)
WORKING_WITH_ATTENTION = TurnPhase(
    activity="working", needs_attention=True, attention_since=T0, working_since=T1
)
BLOCKED = TurnPhase(activity="blocked", needs_attention=True, attention_since=T1, working_since=T1)
IDLE_WITH_ATTENTION = TurnPhase(activity="idle", needs_attention=True, attention_since=T0, idle_since=T0)


# -- begin_turn --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prev",
    [TurnPhase(), IDLE, IDLE_WITH_ATTENTION, WORKING, BLOCKED, TurnPhase(activity="error", idle_since=T0)],
    ids=["fresh", "idle", "idle+attention", "working", "blocked", "error"],
)
def test_begin_turn(prev: TurnPhase) -> None:
    phase = begin_turn(prev, NOW)
    assert phase == TurnPhase(
        activity="working", needs_attention=False, attention_since=None, working_since=NOW, idle_since=None
    )


# -- end_turn ----------------------------------------------------------------------------------------

# (prev, outcome, witnessed, is_agent) -> expected fields
END_TURN_TABLE: list[tuple[str, TurnPhase, str, bool, bool, dict[str, Any]]] = [
    (
        "finished-unwitnessed-raises-attention",
        WORKING,
        "finished",
        False,
        True,
        {"activity": "idle", "needs_attention": True, "attention_since": NOW, "idle_since": NOW},
    ),
    (
        "finished-witnessed-no-attention",
        WORKING,
        "finished",
        True,
        True,
        {"activity": "idle", "needs_attention": False, "attention_since": None, "idle_since": NOW},
    ),
    (
        "finished-witnessed-clears-old-attention",
        WORKING_WITH_ATTENTION,
        "finished",
        True,
        True,
        {"activity": "idle", "needs_attention": False, "attention_since": None, "idle_since": NOW},
    ),
    (
        "finished-unwitnessed-restamps-attention",
        WORKING_WITH_ATTENTION,
        "finished",
        False,
        True,
        {"activity": "idle", "needs_attention": True, "attention_since": NOW, "idle_since": NOW},
    ),
    (
        "finished-not-an-agent",
        WORKING,
        "finished",
        False,
        False,
        {"activity": "idle", "needs_attention": False, "attention_since": None, "idle_since": NOW},
    ),
    (
        "cancelled-keeps-no-attention",
        WORKING,
        "cancelled",
        False,
        True,
        {"activity": "idle", "needs_attention": False, "attention_since": None, "idle_since": NOW},
    ),
    (
        "cancelled-keeps-attention",
        WORKING_WITH_ATTENTION,
        "cancelled",
        True,
        True,
        {"activity": "idle", "needs_attention": True, "attention_since": T0, "idle_since": NOW},
    ),
    (
        "failed-keeps-no-attention",
        WORKING,
        "failed",
        False,
        True,
        {"activity": "error", "needs_attention": False, "attention_since": None, "idle_since": NOW},
    ),
    (
        "failed-keeps-attention",
        WORKING_WITH_ATTENTION,
        "failed",
        True,
        True,
        {"activity": "error", "needs_attention": True, "attention_since": T0, "idle_since": NOW},
    ),
    (
        "failed-unwitnessed-does-not-raise",
        WORKING,
        "failed",
        False,
        True,
        {"activity": "error", "needs_attention": False, "attention_since": None, "idle_since": NOW},
    ),
    (
        "not-working-finished-leaves-attention-and-idle-since",
        IDLE_WITH_ATTENTION,
        "finished",
        True,
        True,
        {"activity": "idle", "needs_attention": True, "attention_since": T0, "idle_since": T0},
    ),
    (
        "not-working-finished-unwitnessed-does-not-raise",
        IDLE,
        "finished",
        False,
        True,
        {"activity": "idle", "needs_attention": False, "attention_since": None, "idle_since": T0},
    ),
    (
        "not-working-without-idle-since-uses-now",
        TurnPhase(activity="idle"),
        "finished",
        False,
        True,
        {"activity": "idle", "needs_attention": False, "attention_since": None, "idle_since": NOW},
    ),
    (
        "blocked-cancelled-keeps-attention",
        BLOCKED,
        "cancelled",
        False,
        True,
        {"activity": "idle", "needs_attention": True, "attention_since": T1, "idle_since": NOW},
    ),
    (
        "blocked-failed-is-error",
        BLOCKED,
        "failed",
        False,
        True,
        {"activity": "error", "needs_attention": True, "attention_since": T1, "idle_since": NOW},
    ),
    (
        "error-then-failed-again",
        TurnPhase(activity="error", idle_since=T0),
        "failed",
        False,
        True,
        {"activity": "error", "needs_attention": False, "attention_since": None, "idle_since": T0},
    ),
]


@pytest.mark.parametrize(
    ("prev", "outcome", "witnessed", "is_agent", "expected"),
    [pytest.param(*row[1:], id=row[0]) for row in END_TURN_TABLE],
)
def test_end_turn(
    prev: TurnPhase, outcome: Any, witnessed: bool, is_agent: bool, expected: dict[str, Any]
) -> None:
    phase = end_turn(prev, now=NOW, outcome=outcome, witnessed=witnessed, is_agent=is_agent)
    assert phase == TurnPhase(working_since=None, **expected)


def test_end_turn_default_is_agent() -> None:
    assert end_turn(WORKING, now=NOW, outcome="finished", witnessed=False).needs_attention is True


def test_full_turn_cycle() -> None:
    phase = begin_turn(IDLE_WITH_ATTENTION, T1)
    assert (phase.needs_attention, phase.idle_since, phase.working_since) == (False, None, T1)
    phase = end_turn(phase, now=NOW, outcome="finished", witnessed=False)
    assert (phase.activity, phase.needs_attention, phase.attention_since, phase.idle_since) == (
        "idle",
        True,
        NOW,
        NOW,
    )
    acknowledged = witness_turn(phase)
    assert acknowledged == replace(phase, needs_attention=False, attention_since=None)
    assert acknowledged.idle_since == NOW


# -- witness_turn ------------------------------------------------------------------------------------


@pytest.mark.parametrize("prev", [TurnPhase(), IDLE, WORKING, TurnPhase(activity="error", idle_since=T0)])
def test_witness_turn_returns_same_object_when_nothing_pending(prev: TurnPhase) -> None:
    assert witness_turn(prev) is prev


@pytest.mark.parametrize(
    "prev",
    [
        IDLE_WITH_ATTENTION,
        BLOCKED,
        WORKING_WITH_ATTENTION,
        TurnPhase(activity="idle", needs_attention=False, attention_since=T0),
        TurnPhase(activity="idle", needs_attention=True),
    ],
)
def test_witness_turn_clears_attention_only(prev: TurnPhase) -> None:
    phase = witness_turn(prev)
    assert phase is not prev
    assert phase == replace(prev, needs_attention=False, attention_since=None)
    assert (phase.activity, phase.idle_since, phase.working_since) == (
        prev.activity,
        prev.idle_since,
        prev.working_since,
    )


def test_phases_are_immutable() -> None:
    phase = TurnPhase()
    with pytest.raises(AttributeError):
        phase.activity = "working"  # type: ignore[misc]


def test_now_iso_format() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", now_iso())
