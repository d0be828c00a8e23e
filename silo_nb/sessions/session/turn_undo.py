"""Undo of turns (issue 32): what ``handle.undo()`` takes back, in which order, and the conversation's part.

- ``undo(turn=N)`` goes back to before turn N: N and every later turn not undone yet, newest first
  (:func:`turns_to_undo`). A turn still running is refused, a turn already undone is refused, one line each.
- The parts that hold a turn's changes register on the session (:class:`UndoParts`): the session's own file
  checkpoints, and from the layers above the notebook's cells and the kernel's variables. Each is asked for
  each turn, newest first; each says per item what it restored or could not (``UndoItem``). A part that
  raises is one "not restored" item naming the error: an undo never half-fails silently.
- The conversation (:func:`rewind_conversation`): where the agent offers the ``_session/rewind`` extension
  (claude-agent-acp#966: ``_session/rewind_points`` lists the user messages it can go back to, newest last;
  ``_session/rewind`` with ``mode: "conversation"`` drops that message and everything after it), the agent
  is rewound to before turn N. Its points count the turns the agent still remembers, so turn N is the k-th
  point from the end, k being the turns from N on whose conversation was not rewound yet. An agent without
  it (the method is not found) keeps the turn: the report says the agent will still remember it — unless a
  fork was taken before the turn (``conversation_forks.py``), which the report then points at.
- The undo is journaled (``TurnUndoneLine``): a restore after a restart shows those turns undone, and a
  second undo of them is refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from silo_nb.acp import AcpRpcError
from silo_nb.model import (
    UNDO_PARTS,
    AgentSessionError,
    AgentSessionInputError,
    AgentSessionUpdate,
    TurnEndLine,
    TurnUndoneLine,
    UndoItem,
    UndoPart,
)
from silo_nb.updates import JournalTurn, split_turns
from silo_nb.util import Disposable

__all__ = [
    "TurnUndoPart",
    "UndoParts",
    "forked_before",
    "rewind_conversation",
    "turns_to_undo",
    "undo_with",
    "undone_turns",
]

METHOD_NOT_FOUND = -32601
REWIND_POINTS = "_session/rewind_points"
REWIND = "_session/rewind"

Request = Callable[[str, dict[str, Any]], Awaitable[Any]]


class TurnUndoPart(Protocol):
    """Something that holds what turns changed and can take a turn back."""

    @property
    def part(self) -> UndoPart: ...

    async def undo_turn(self, turn: int, updates: Sequence[AgentSessionUpdate]) -> list[UndoItem]:
        """Take turn ``turn`` back (``updates``: its share of the journal); one item per thing touched."""
        ...


class UndoParts:
    """The parts registered on one session, asked in the order files, cells, variables."""

    def __init__(self) -> None:
        self._parts: list[TurnUndoPart] = []

    def add(self, part: TurnUndoPart) -> Disposable:
        self._parts.append(part)
        return Disposable(lambda: self._parts.remove(part) if part in self._parts else None)

    def ordered(self) -> list[TurnUndoPart]:
        return sorted(self._parts, key=lambda p: UNDO_PARTS.index(p.part))


def undone_turns(updates: Sequence[AgentSessionUpdate]) -> dict[int, TurnUndoneLine]:
    """Turn number → the journal line of the undo that took it back."""
    undone: dict[int, TurnUndoneLine] = {}
    for update in updates:
        line = TurnUndoneLine.read(update)
        if line is not None:
            for number in line.turns:
                undone.setdefault(number, line)
    return undone


def turns_to_undo(
    updates: Sequence[AgentSessionUpdate], turn: int | None, *, label: str, running: bool
) -> list[JournalTurn]:
    """The turns an undo to before ``turn`` takes back, newest first (see the module docstring)."""
    if running:
        raise AgentSessionError(f"{label}: a turn is running — undo once it ends (or stop it first).")
    turns = [t for t in split_turns(updates) if t.number is not None]
    if not turns:
        raise AgentSessionError(f"{label}: no turn yet, so nothing to undo.")
    undone = undone_turns(updates)
    if turn is None:
        turn = turns[-1].number
    if isinstance(turn, bool) or not isinstance(turn, int) or not 1 <= turn <= len(turns):
        raise AgentSessionInputError(
            f"undo(turn=...) takes a turn number from 1 to {len(turns)} (this session's turns); got {turn!r}."
        )
    if turn in undone:
        later = [
            t.number for t in turns if t.number is not None and t.number < turn and t.number not in undone
        ]
        hint = f" — undo(turn={later[-1]}) takes back the one before" if later else ""
        raise AgentSessionError(f"{label}: turn {turn} is already undone{hint}.")
    return [
        t for t in reversed(turns) if t.number is not None and t.number >= turn and t.number not in undone
    ]


def _remembered_from(updates: Sequence[AgentSessionUpdate], turn: int) -> int:
    """How many turns from ``turn`` on the agent still remembers (their conversation not rewound yet)."""
    numbers = [t.number for t in split_turns(updates) if t.number is not None and t.number >= turn]
    rewound = {
        number
        for line in undone_turns(updates).values()
        if any(UndoItem.read(i) is not None and i.get("part") == "conversation" and i.get("restored") is True
               for i in line.items)
        for number in line.turns
    }  # fmt: skip
    return sum(1 for number in numbers if number not in rewound)


async def rewind_conversation(
    request: Request, session_id: str, updates: Sequence[AgentSessionUpdate], turn: int
) -> UndoItem:
    """Rewind the agent to before ``turn`` where it offers ``_session/rewind`` (see the module docstring)."""
    subject = f"session {session_id}"
    keeps = UndoItem(
        "conversation", subject, False, f"the agent will still remember turn {turn} (it offers no rewind)"
    )
    try:
        answer = await request(REWIND_POINTS, {"sessionId": session_id})
    except AcpRpcError as exc:
        if exc.code == METHOD_NOT_FOUND:
            return keeps
        return UndoItem(
            "conversation",
            subject,
            False,
            f"the agent would not list its rewind points: {exc.agent_message()}",
        )
    points = answer.get("points") if isinstance(answer, Mapping) else None
    k = _remembered_from(updates, turn)
    if not isinstance(points, list) or not 1 <= k <= len(points):
        listed = len(points) if isinstance(points, list) else "no"
        said = f"the agent listed {listed} rewind point(s), not the {k} turn(s) from turn {turn} on"
        return UndoItem("conversation", subject, False, said)
    point = points[-k]
    message_id = point.get("messageId") if isinstance(point, Mapping) else None
    if not isinstance(message_id, str):
        return UndoItem("conversation", subject, False, "the agent's rewind point has no messageId")
    try:
        answer = await request(
            REWIND, {"sessionId": session_id, "messageId": message_id, "mode": "conversation"}
        )
    except AcpRpcError as exc:
        return UndoItem("conversation", subject, False, f"the agent would not rewind: {exc.agent_message()}")
    outcome = answer.get("conversation") if isinstance(answer, Mapping) else None
    if not isinstance(outcome, Mapping) or outcome.get("rewound") is not True:
        error = outcome.get("error") if isinstance(outcome, Mapping) else None
        return UndoItem(
            "conversation", subject, False, f"the agent did not rewind{f': {error}' if error else ''}"
        )
    dropped = outcome.get("messagesDropped")
    count = f", {dropped} message(s) dropped" if isinstance(dropped, int) else ""
    return UndoItem(
        "conversation",
        subject,
        True,
        f"rewound to before turn {turn}{count}: the agent no longer remembers it",
    )


def fork_of(turn: JournalTurn) -> str | None:
    """The fork of the session taken before ``turn`` (``checkpoint_conversation = "fork"``), if any."""
    for update in turn.updates:
        line = TurnEndLine.read(update)
        if line is not None:
            return line.checkpoint_fork
    return None


def forked_before(turn: JournalTurn, profile_id: str) -> UndoItem | None:
    """Where the agent cannot rewind but a fork was taken before ``turn``: the item that points at it."""
    fork = fork_of(turn)
    if fork is None:
        return None
    said = (
        f"this session still remembers turn {turn.number}; the fork taken before it holds the conversation "
        f"as it was — continue there: %silo connect {profile_id} --resume {fork}"
    )
    return UndoItem("conversation", f"fork {fork}", True, said)


async def undo_with(
    parts: Sequence[TurnUndoPart],
    turns: Sequence[JournalTurn],
    conversation: Callable[[int], Awaitable[UndoItem]],
) -> list[UndoItem]:
    """Ask each part for each turn (newest first), then the conversation once, back to the oldest turn."""
    items: list[UndoItem] = []
    for journal_turn in turns:
        number = journal_turn.number
        assert number is not None
        for part in parts:
            try:
                items += await part.undo_turn(number, journal_turn.updates)
            except Exception as exc:  # a part's bug must not hide what the others did
                items.append(
                    UndoItem(
                        part.part, f"turn {number}", False, f"the undo failed: {type(exc).__name__}: {exc}"
                    )
                )
    items.append(await conversation(turns[-1].number or 0))
    return items
