"""``%silo frame NAME``: a session's turns as a table (``silo_nb.frame``), shown in the cell.

- NAME is a connection of this notebook (its live journal), else a session id of this workspace, a
  journal file or a run folder of ``run_grid``. The table shows the columns people compare (prompt, stop
  reason, duration, counts, tokens, cost, error); ``--all`` shows every column. Shown with readable
  widths (``render/frame_table.py``: one line per cell, long text cut with a tooltip, scrolling sideways).
- For the DataFrame itself (to plot or save), call ``silo_nb.frame(...)`` with the same argument.
"""

from __future__ import annotations

import argparse

from IPython.core.error import UsageError

from silo_nb.experiments import frame
from silo_nb.notebook._display import display
from silo_nb.notebook.magics.args import argument, magic_arguments
from silo_nb.notebook.magics.connections import NotebookSession
from silo_nb.notebook.render.column_order import reading_order
from silo_nb.notebook.render.frame_table import frame_bundle

__all__ = ["SHOWN", "frame_command"]

SHOWN = (
    "session",
    "turn",
    "prompt",
    "stop_reason",
    "duration_s",
    "updates",
    "tool_calls",
    "permissions_asked",
    "permissions_allowed",
    "permissions_rejected",
    "tokens_in",
    "tokens_out",
    "tokens_used",
    "cost",
    "error",
)


@magic_arguments("silo frame")
@argument("name", metavar="NAME", help="a connection, a session id, a journal file or a run folder")
@argument("--all", action="store_true", help="show every column")
async def frame_command(session: NotebookSession, args: argparse.Namespace) -> None:
    """Show a session's turns as a table, one row per turn (silo_nb.frame gives the DataFrame)."""
    connection = session.connections.get(args.name)
    try:
        if connection is not None:
            _, source = await session.handle(args.name)
            table = frame(source)
        else:
            table = frame(args.name, workspace_id=session.service.workspace_id)
    except FileNotFoundError as exc:
        known = ", ".join(session.connections) or "none"
        raise UsageError(f"%silo frame: {exc} (connections here: {known})") from None
    except ImportError as exc:  # no pandas: the install hint, in one line
        raise UsageError(f"%silo frame: {exc}") from None
    if table.empty:
        print(f"{args.name}: no turns yet.")
        return
    if not args.all:
        shown = [c for c in SHOWN if c != "session" or table["session"].nunique() > 1]
        table = table[reading_order([*[c for c in ("cell", "variant") if c in table.columns], *shown])]
    display(frame_bundle(table), raw=True)
