"""``%silo undo-cells [NAME]``: take back the cell changes the connection's last turn applied to this
notebook (its inserted cells removed, edited sources put back, deleted cells put back where they were,
moved cells moved back), newest first.

- What to undo comes from the journal (each applied change's ``kernel_tool`` line carries the request that
  takes it back), so it works after a kernel restart too.
- A cell changed since the turn is left as it is (the person who changed it wins) and said so; a turn
  still running is refused in one line; with no open notebook to change, one line says why.
- The whole undo of a turn (files, cells, variables, the conversation) is ``%silo undo`` and the **Undo turn
  N** row under each finished turn (``undo_turn.py``); this takes back the cells alone.
"""

from __future__ import annotations

import argparse

from IPython.core.error import UsageError

from silo_nb.kernel_tools import undo_changes
from silo_nb.model import TURN_END_KIND, KernelToolLine
from silo_nb.notebook.magics.args import argument, magic_arguments
from silo_nb.notebook.magics.connections import NotebookSession
from silo_nb.updates import split_turns

__all__ = ["undo_cells_command"]


@magic_arguments("silo undo-cells")
@argument("name", nargs="?", metavar="NAME", help="the connection (default: the most recent one)")
async def undo_cells_command(session: NotebookSession, args: argparse.Namespace) -> None:
    """Take back the cell changes of the connection's last turn (newest first)."""
    connection, handle = await session.handle(args.name)
    journal = await session.service.sessions.read_journal(handle.session_id)
    turns = [turn for turn in split_turns(journal) if turn.number is not None]
    if not turns:
        print(f"{connection.name}: no turn yet, so no cell to take back.")
        return
    last = turns[-1]
    if not any(update.kind == TURN_END_KIND for update in last.updates):
        raise UsageError(
            f"%silo undo-cells: {connection.name}'s turn is still running: undo it once it ends."
        )
    undos = []
    for update in last.updates:
        line = KernelToolLine.read(update)
        if line is not None and line.status == "completed" and line.undo:
            undos.append(line.undo)
    if not undos:
        print(f"{connection.name}: its last turn (turn {last.number}) changed no cell.")
        return
    for said in await undo_changes(undos):
        print(said)
