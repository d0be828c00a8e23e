"""``%silo attach RUN [CELL]``: watch and answer a running grid cell here (``live_cell_view.py``).

- RUN is a run's name (under ``--folder``, ``silo-runs`` by default) or its folder; without CELL, the
  first running cell. A finished cell shows its finished turn. What is not there: one line listing what is.
- The view stays referenced (:data:`ATTACHED`, one per cell): attaching again to a cell detaches the
  earlier view, never the cell.
"""

from __future__ import annotations

import argparse

from IPython.core.error import UsageError

from silo_nb.notebook._display import display
from silo_nb.notebook.live_cell_view import CellView, attach_cell
from silo_nb.notebook.magics.args import argument, magic_arguments
from silo_nb.notebook.magics.connections import NotebookSession

__all__ = ["ATTACHED", "attach_command"]

ATTACHED: dict[tuple[str, str], CellView] = {}


@magic_arguments("silo attach")
@argument("run", metavar="RUN", help="a run's name or folder")
@argument("cell", metavar="CELL", nargs="?", default=None, help="a cell id (default: the first running)")
@argument("--folder", default=None, help="the folder of runs (default: silo-runs)")
async def attach_command(session: NotebookSession, args: argparse.Namespace) -> None:
    """Show a grid cell's turn: live and answerable while it runs, else its finished turn."""
    try:
        view = await attach_cell(args.run, args.cell, folder=args.folder)
    except (LookupError, ValueError) as exc:
        raise UsageError(f"%silo attach: {exc}") from None
    key = (str(view.located.run), view.located.cell)
    earlier = ATTACHED.pop(key, None)
    if earlier is not None:
        earlier.detach()
    ATTACHED[key] = view
    display(view.view)
