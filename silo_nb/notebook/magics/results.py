"""``%silo runs [NAME]`` and ``%silo diff RUN CELL``: a folder's runs, one run's results, one cell's diff.

- ``%silo runs`` lists the runs in ``--folder`` (default ``silo-runs``, run_grid's default): cells done
  of all, failed, size on disk, age and each bool score's pass rate. ``%silo runs NAME`` shows that run
  (``silo_nb.show``: the live view, or its static page with ``--static``). NAME is a run's name in the
  folder or a run folder's path.
- ``%silo diff RUN CELL`` shows what the cell changed, highlighted (the saved notebook keeps it as
  HTML, with the plain diff as its text form).
- A name that is not a run, or a cell that is not in it, is one ``UsageError`` line listing what is.
"""

from __future__ import annotations

import argparse

from IPython.core.error import UsageError

from silo_nb.experiments import DEFAULT_RUNS_FOLDER, find_run, list_runs
from silo_nb.notebook._display import display
from silo_nb.notebook.magics.args import argument, magic_arguments
from silo_nb.notebook.magics.connections import NotebookSession
from silo_nb.notebook.results import live_view
from silo_nb.notebook.results.cell_page import diff_html
from silo_nb.notebook.results.loaded_run import LoadedRun
from silo_nb.notebook.results.run_tables import runs_table_html, runs_text

__all__ = ["diff_command", "runs_command"]


@magic_arguments("silo runs")
@argument("name", nargs="?", metavar="NAME", help="a run's name in the folder, or a run folder")
@argument("--folder", default=DEFAULT_RUNS_FOLDER, metavar="DIR", help="where the runs are (silo-runs)")
@argument("--static", action="store_true", help="the static page only (no widget)")
async def runs_command(session: NotebookSession, args: argparse.Namespace) -> None:
    """List the runs in a folder (size, age, pass rates), or show one run's results (silo_nb.show)."""
    if args.name is None:
        runs = list_runs(args.folder)
        display(
            {"text/html": runs_table_html(runs, args.folder), "text/plain": runs_text(runs, args.folder)},
            raw=True,
        )
        return
    try:
        path = find_run(args.name, args.folder)
    except ValueError as exc:
        raise UsageError(f"%silo runs: {exc}") from None
    loaded = LoadedRun.load(path)
    view = None if args.static else live_view(loaded)
    if view is None:
        from silo_nb.notebook.widgets.results_view import static_html

        display({"text/html": static_html(loaded), "text/plain": f"Run {loaded.name}"}, raw=True)
        return
    view.display_id = session.shown.show(view)  # its snapshot is kept current with the other widgets


@magic_arguments("silo diff")
@argument("run", metavar="RUN", help="a run's name in the folder, or a run folder")
@argument("cell", metavar="CELL", help="a cell id of that run, e.g. p0-demo-c1-r2")
@argument("--folder", default=DEFAULT_RUNS_FOLDER, metavar="DIR", help="where the runs are (silo-runs)")
async def diff_command(session: NotebookSession, args: argparse.Namespace) -> None:
    """Show what one grid cell changed in its working copy (the unified diff, highlighted)."""
    try:
        loaded = LoadedRun.load(find_run(args.run, args.folder))
        loaded.cell(args.cell)
    except ValueError as exc:
        raise UsageError(f"%silo diff: {exc}") from None
    if loaded.run.record(args.cell) is None:
        raise UsageError(f"%silo diff: the cell {args.cell!r} of {loaded.name!r} has not run yet.")
    diff = loaded.diff(args.cell)
    where = str(loaded.run.diff_path(args.cell))
    display({"text/html": diff_html(diff, where=where), "text/plain": diff or "No changes."}, raw=True)
