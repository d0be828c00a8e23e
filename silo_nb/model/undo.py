"""What an undo of a turn did (issue 32): one :class:`UndoItem` per thing it touched, and the report.

- Parts: ``files`` (the session's folders, from the turn's file checkpoints), ``cells`` (the notebook edits
  of the turn), ``variables`` (kernel names an allowed ``run_code``/``run_cell`` may have changed) and
  ``conversation`` (the agent's memory of the turn: rewound, forked, or still there).
- An item is restored or not, with one line saying what happened or why not; nothing is ever skipped
  silently. The report is plain data: it is journaled (``TurnUndoneLine``) and shown in the cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["UNDO_PARTS", "UndoItem", "UndoPart", "UndoReport"]

UndoPart = Literal["files", "cells", "variables", "conversation"]
UNDO_PARTS: tuple[UndoPart, ...] = ("files", "cells", "variables", "conversation")


@dataclass(frozen=True)
class UndoItem:
    """One thing an undo restored or could not: ``subject`` is a path, a cell id, a name or the session."""

    part: UndoPart
    subject: str
    restored: bool
    said: str  # one line: what was done, or why not

    def text(self) -> str:
        mark = "restored" if self.restored else "not restored"
        return f"{self.part} · {self.subject}: {mark} — {self.said}"

    def wire(self) -> dict[str, Any]:
        return {"part": self.part, "subject": self.subject, "restored": self.restored, "said": self.said}

    @classmethod
    def read(cls, raw: Any) -> UndoItem | None:
        """From its journaled form; None for one that does not fit."""
        if not isinstance(raw, dict) or raw.get("part") not in UNDO_PARTS:
            return None
        subject, said = str(raw.get("subject", "")), str(raw.get("said", ""))
        return cls(raw["part"], subject, raw.get("restored") is True, said)


@dataclass(frozen=True)
class UndoReport:
    """What ``handle.undo()`` did: the turns it took back (newest first) and every item, in order."""

    turns: tuple[int, ...]
    items: tuple[UndoItem, ...] = ()
    fork_session_id: str | None = None  # a fork of the session from before the first undone turn
    notes: tuple[str, ...] = field(default=())

    @property
    def restored(self) -> list[UndoItem]:
        return [item for item in self.items if item.restored]

    @property
    def not_restored(self) -> list[UndoItem]:
        return [item for item in self.items if not item.restored]

    def part(self, name: UndoPart) -> list[UndoItem]:
        return [item for item in self.items if item.part == name]

    def text(self) -> str:
        turns = ", ".join(str(n) for n in self.turns)
        head = f"Undid turn {turns}" if len(self.turns) == 1 else f"Undid turns {turns}"
        lines = [f"{head}: {len(self.restored)} restored, {len(self.not_restored)} not restored."]
        lines += [item.text() for item in self.items]
        lines += list(self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()
