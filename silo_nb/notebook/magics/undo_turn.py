"""``%silo undo [NAME] [TURN]`` and the **Undo turn N** row under each finished ``%%prompt`` turn (issue 32).

- ``%silo undo NAME`` takes back the connection's last turn, ``%silo undo NAME 3`` goes back to before turn 3
  (it and the later turns not undone yet): ``handle.undo()``, which restores the turns' files, cells and
  kernel variables and rewinds the agent where it can. It prints what was restored and what was not, and
  the turns' own rows (if their cells are in this kernel) say "undone" too.
- A turn already undone is not an error here: the magic prints what that undo did (journaled), so a
  notebook that undoes a turn runs top to bottom again after a restart. A running turn is refused in one
  line (the API raises for both).
- The row shows under a turn that changed something an undo puts back (code run in the kernel, cells,
  files); ``%silo undo`` works for any turn.
- ``NAME`` may be left out (the most recent connection); ``%silo undo 3`` is turn 3 of it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from silo_nb.kernel_tools import RAN_STATUSES
from silo_nb.model import AgentSessionError, AgentSessionUpdate, TurnUndoneLine, UndoItem, UndoReport
from silo_nb.notebook.magics.args import argument, magic_arguments
from silo_nb.notebook.magics.connections import NotebookSession
from silo_nb.notebook.widgets.undo_turn_row import UndoTurnRow, undone_text
from silo_nb.updates import KernelToolEntry, TranscriptState

if TYPE_CHECKING:
    from silo_nb.sessions import AgentSessionHandle

__all__ = ["changed_something", "offer_undo_turn_row", "undo_command"]

_CHANGING_TOOLS = (
    "run_code",
    "run_cell",
    "insert_cell",
    "edit_cell",
    "replace_cell",
    "delete_cell",
    "move_cell",
)


@magic_arguments("silo undo")
@argument("name", nargs="?", metavar="NAME", help="the connection (default: the most recent one)")
@argument("turn", nargs="?", type=int, metavar="TURN", help="go back to before this turn (default: the last)")
async def undo_command(session: NotebookSession, args: argparse.Namespace) -> None:
    """Take back the connection's last turn (or go back to before TURN)."""
    name: str | None = args.name
    turn: int | None = args.turn
    if turn is None and name is not None and name.isdigit():
        turn = int(name)
        name = None
    connection, handle = await session.handle(name)
    try:
        report = await handle.undo(turn)
    except AgentSessionError as exc:
        earlier = _earlier_undo(handle.journal_updates(), turn if turn is not None else handle.current_turn)
        if "already undone" in str(exc) and earlier is not None:
            number, items = earlier
            print(f"{connection.name}: turn {number} was undone already.\n{undone_text(number, items)}")
            return
        raise UsageError(f"%silo undo: {str(exc).splitlines()[0]}") from None
    session.undo_rows.mark(handle.session_id, report)
    print(report.text())


def _earlier_undo(updates: Iterable[AgentSessionUpdate], turn: int) -> tuple[int, list[UndoItem]] | None:
    for update in reversed(list(updates)):
        line = TurnUndoneLine.read(update)
        if line is not None and turn in line.turns:
            return turn, [item for raw in line.items if (item := UndoItem.read(raw)) is not None]
    return None


def changed_something(handle: AgentSessionHandle, turn: int, state: TranscriptState) -> bool:
    """Whether a finished turn left something an undo puts back: code it ran in the kernel (allowed), cells
    it changed, or files (its checkpoints differ). A turn that only talked gets no row: ``%silo undo`` still
    rewinds the agent."""
    for entry in state.entries:
        if (
            isinstance(entry, KernelToolEntry)
            and entry.status in RAN_STATUSES
            and entry.tool in _CHANGING_TOOLS
        ):
            return True
    files = handle.file_checkpoints
    return files is not None and files.changed_files(turn) is True


def offer_undo_turn_row(
    session: NotebookSession, name: str, handle: AgentSessionHandle, turn: int, state: TranscriptState
) -> None:
    """Under a finished turn that changed something (:func:`changed_something`): its Undo row
    (``handle.undo(turn=N)`` on a click)."""
    if not changed_something(handle, turn, state):
        return

    async def undo(number: int) -> UndoReport:
        report = await handle.undo(number)
        session.undo_rows.mark(handle.session_id, report)  # the later turns it took back too
        return report

    row = UndoTurnRow(turn, undo=undo, name=name)
    session.shown.show(row)
    session.undo_rows.add(handle.session_id, row)
