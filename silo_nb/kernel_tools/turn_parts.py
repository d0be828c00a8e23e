"""The kernel's share of a turn's undo (issue 32): its variables and its notebook cells, as parts a session's
``handle.undo()`` asks (``sessions/session/turn_undo.py``).

- :class:`VariableCheckpoints`: before each allowed ``run_code``/``run_cell`` of a turn, the names the code
  may change (``checkpoint.names_changed_by``) that this turn has not saved yet are saved
  (``checkpoint.take_checkpoint``) — so the turn's checkpoint is the namespace as it was before the turn's
  first change of each name. A name that could not be saved is said at once in the tool's answer and again
  by the undo. Within the profile's ``checkpoint_max_bytes`` across the turns kept: a new checkpoint gets
  the whole budget and the oldest turns' checkpoints are dropped to make room (their undo says so).
- After each run the names it touched are noted as they stand (their object ``id`` and, for DataFrames and
  arrays, a sampled fingerprint): an undo leaves a name the user rebound or changed since as it is (the
  person who changed it wins), as files do. Values of other kinds changed in place are not seen.
- Checkpoints live in the kernel's memory: after a restart (or a new connection) a turn that ran code has
  none, and the undo says "not restorable: the kernel restarted".
- :class:`CellUndo`: the notebook edits of a turn, taken back from the journal (each applied change's
  ``kernel_tool`` line carries the request that undoes it; ``notebook_tools.undo_cell_changes``): it works
  after a restart too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from silo_nb.kernel_tools.checkpoint import (
    DEFAULT_MAX_BYTES,
    Checkpoint,
    NotRestorable,
    names_changed_by,
    take_checkpoint,
)
from silo_nb.kernel_tools.fingerprints import fingerprint
from silo_nb.kernel_tools.namespace import KernelNamespace
from silo_nb.kernel_tools.notebook_tools import undo_cell_changes
from silo_nb.model import AgentSessionUpdate, KernelToolLine, UndoItem, UndoPart
from silo_nb.server import NotebookChannel

__all__ = ["CODE_TOOLS", "RAN_STATUSES", "CellUndo", "VariableCheckpoints"]

CODE_TOOLS = ("run_code", "run_cell")
RAN_STATUSES = ("completed", "error", "interrupted", "timed_out")  # a code tool's statuses once it ran
_ABSENT = object()


def _mark(value: Any) -> tuple[int, str | None]:
    """How a name stands after a run: its object, and for a frame or an array its sampled content."""
    module = type(value).__module__
    sampled = module.startswith(("pandas", "numpy")) and hasattr(value, "shape")
    return id(value), (fingerprint(value) if sampled else None)


@dataclass
class _TurnVariables:
    checkpoint: Checkpoint = field(default_factory=Checkpoint)
    after: dict[str, tuple[int, str | None] | None] = field(default_factory=dict)  # None: absent after

    def covers(self, name: str) -> bool:
        cp = self.checkpoint
        return name in cp.saved or name in cp.absent or any(n.name == name for n in cp.not_restorable)


class VariableCheckpoints:
    """The kernel variables' checkpoints of one session's turns (see the module docstring)."""

    part: UndoPart = "variables"

    def __init__(
        self, namespace: KernelNamespace, *, max_bytes: int = DEFAULT_MAX_BYTES, seconds: float = 2.0
    ) -> None:
        self.namespace, self.max_bytes, self.seconds = namespace, max_bytes, seconds
        self._turns: dict[int, _TurnVariables] = {}
        self._dropped: set[int] = set()

    @property
    def bytes(self) -> int:
        """The estimated size of every copy kept."""
        return sum(t.checkpoint.bytes for t in self._turns.values())

    def turns(self) -> list[int]:
        """The turns that have a checkpoint, oldest first."""
        return sorted(self._turns)

    async def before_run(self, turn: int, code: str) -> list[str]:
        """Save what ``code`` may change that turn ``turn`` has not saved yet; one line per name that could
        not be saved (for the tool's answer)."""
        kept = self._turns.setdefault(turn, _TurnVariables())
        names = [name for name in names_changed_by(code) if not kept.covers(name)]
        if not names:
            return []
        room = self.max_bytes - kept.checkpoint.bytes
        taken = await take_checkpoint(self.namespace.user_ns, names, max_bytes=room, seconds=self.seconds)
        kept.checkpoint.saved.update(taken.saved)
        kept.checkpoint.absent += taken.absent
        kept.checkpoint.not_restorable += taken.not_restorable
        kept.checkpoint.bytes += taken.bytes
        self._make_room(turn)
        said = "not checkpointed (an undo cannot restore it)"
        return [f"{said}: {n.name} — {n.reason}" for n in taken.not_restorable]

    def after_run(self, turn: int, code: str) -> None:
        """Note how the names ``code`` may have changed stand now (see the module docstring)."""
        kept = self._turns.get(turn)
        if kept is None:
            return
        ns = self.namespace.user_ns
        for name in names_changed_by(code):
            value = ns.get(name, _ABSENT)
            kept.after[name] = None if value is _ABSENT else _mark(value)

    def _make_room(self, turn: int) -> None:
        for older in sorted(self._turns):
            if self.bytes <= self.max_bytes or older == turn:
                break
            del self._turns[older]
            self._dropped.add(older)

    async def undo_turn(self, turn: int, updates: Sequence[AgentSessionUpdate]) -> list[UndoItem]:
        kept = self._turns.pop(turn, None)
        if kept is None:
            if not _ran_code(updates):
                return []
            why = (
                "dropped to keep the checkpoints within checkpoint_max_bytes"
                if turn in self._dropped
                else "the kernel restarted (or the notebook connected again) since the turn: its checkpoint "
                "was in the kernel's memory"
            )
            return [UndoItem("variables", "kernel", False, f"not restorable: {why}")]
        ns = self.namespace.user_ns
        changed_since = [name for name, mark in kept.after.items() if _changed_since(ns, name, mark)]
        checkpoint = kept.checkpoint
        for name in changed_since:
            checkpoint.saved.pop(name, None)
            if name in checkpoint.absent:
                checkpoint.absent.remove(name)
        for name in [n for n, saved in checkpoint.saved.items() if _unchanged(saved, ns.get(n, _ABSENT))]:
            del checkpoint.saved[name]  # the turn only read it (``df.groupby(...)`` looked like a change)
        report = checkpoint.restore(ns)
        items = [UndoItem("variables", n, False, "changed since the turn — left as it is (your change wins)")
                 for n in changed_since]  # fmt: skip
        items += [UndoItem("variables", n, True, f"put back as before turn {turn}") for n in report.restored]
        items += [UndoItem("variables", n, True, f"made by turn {turn}: removed") for n in report.removed]
        items += [_not_restorable(n) for n in report.not_restorable if n.name not in report.restored]
        return items


def _not_restorable(entry: NotRestorable) -> UndoItem:
    return UndoItem("variables", entry.name, False, f"not restorable: {entry.reason}")


def _changed_since(ns: Mapping[str, Any], name: str, mark: tuple[int, str | None] | None) -> bool:
    value = ns.get(name, _ABSENT)
    if mark is None:
        return value is not _ABSENT
    return value is _ABSENT or _mark(value) != mark


def _unchanged(saved: Any, now: Any) -> bool:
    """Whether a saved name is as it was, where that can be told without running the user's code: the very
    same immutable value, or a frame or an array equal to its copy. Anything else is put back regardless."""
    if now is _ABSENT:
        return False
    if saved is now:
        return True
    try:
        module = type(now).__module__
        if type(saved) is type(now) and module.startswith("pandas") and hasattr(now, "equals"):
            return bool(now.equals(saved))  # values, dtypes and axes
        if type(saved) is type(now) and module.startswith("numpy") and hasattr(now, "shape"):
            import numpy as np

            nan_equal = now.dtype.kind in "fc"
            return bool(now.dtype == saved.dtype and np.array_equal(now, saved, equal_nan=nan_equal))
    except Exception:  # an odd subclass: put it back
        return False
    return False


def _ran_code(updates: Sequence[AgentSessionUpdate]) -> bool:
    for update in updates:
        line = KernelToolLine.read(update)
        if line is not None and line.tool in CODE_TOOLS and line.status in RAN_STATUSES:
            return True
    return False


class CellUndo:
    """The notebook edits of a session's turns (see the module docstring)."""

    part: UndoPart = "cells"

    def __init__(
        self, channel: Callable[[], NotebookChannel | str] = NotebookChannel.from_environment
    ) -> None:
        self._channel = channel

    async def undo_turn(self, turn: int, updates: Sequence[AgentSessionUpdate]) -> list[UndoItem]:
        undos = []
        for update in updates:
            line = KernelToolLine.read(update)
            if line is not None and line.status == "completed" and line.undo:
                undos.append(line.undo)
        if not undos:
            return []
        done = await undo_cell_changes(undos, self._channel)
        return [UndoItem("cells", subject, restored, said) for subject, restored, said in done]
