"""What made an agent's answer stale (issue 32): a turn read a variable or a cell, and it changed since.

A :class:`StaleTurn` names the turn (as the journal numbers turns: ``handle.current_turn``) and says, one
phrase each, what changed since its answer: ``df changed``, ``df was deleted``, ``cell 3 changed``,
``cell In [4] ran again``. ``handle.stale_turns()`` lists them; the cell's **stale** badge shows them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StaleTurn"]


@dataclass(frozen=True)
class StaleTurn:
    """A turn whose answer was based on something that changed since: ``changed``, one phrase each."""

    turn: int
    changed: tuple[str, ...]

    def text(self) -> str:
        """``df changed, x was deleted since this answer`` (the badge's words)."""
        return f"{', '.join(self.changed)} since this answer"

    def __str__(self) -> str:
        return f"turn {self.turn}: {self.text()}"
