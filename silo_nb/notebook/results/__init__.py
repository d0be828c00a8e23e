"""A run's results in the notebook and on a page: ``silo_nb.show`` and ``silo_nb.report``.

- ``loaded_run.py`` reads a run's folder once (its DataFrame, a row per cell, its summary);
  ``cell_page.py`` renders one cell (scores, diff, transcript with the ``%%prompt`` renderer);
  ``run_tables.py`` the summary, the cells and a folder's runs as static tables; ``figures.py`` the two
  plots as SVG; ``report_page.py`` the self-contained page. The interactive view is a widget
  (``widgets/results_view.py``); everything else here is plain HTML that reads without a kernel.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from silo_nb.experiments import DEFAULT_RUNS_FOLDER, find_run
from silo_nb.notebook.results.loaded_run import LoadedRun
from silo_nb.notebook.results.report_page import write_report

__all__ = ["live_view", "report", "run_path", "show"]


def run_path(run: Any, folder: str | os.PathLike[str] | None = None) -> Path:
    """A run's folder from what was given: a DataFrame of ``run_grid``, a run folder, or a run's name."""
    attrs = getattr(run, "attrs", None)
    if isinstance(attrs, dict) and attrs.get("run_folder"):
        return Path(attrs["run_folder"])
    if not isinstance(run, str | os.PathLike):
        raise TypeError(
            f"Give a run folder, a run's name or run_grid's DataFrame — not {type(run).__name__}."
        )
    return find_run(run, folder if folder is not None else DEFAULT_RUNS_FOLDER)


def show(run: Any, *, folder: str | os.PathLike[str] | None = None, cell: str | None = None) -> Any:
    """Show a run: its summary and a sortable, filterable table of cells; a chosen cell's page below.

    ``run`` is ``run_grid``'s DataFrame, a run folder, or a run's name under ``folder`` (default
    ``silo-runs``). In a kernel with the ``view`` extra (itables) this is a live ``ResultsView`` (returned;
    ``view.choose(cell)`` opens a cell); elsewhere, or without itables, a static page (None is returned).
    """
    from silo_nb.notebook._display import display

    loaded = LoadedRun.load(run_path(run, folder))
    view = live_view(loaded)
    if view is None:
        from silo_nb.notebook.widgets.results_view import static_html

        display({"text/html": static_html(loaded, cell), "text/plain": f"Run {loaded.name}"}, raw=True)
        return None
    if cell is not None:
        view.choose(cell)
    view.display_id = f"silo-results-{uuid.uuid4().hex}"
    display(view, display_id=view.display_id)
    return view


def live_view(loaded: LoadedRun) -> Any:
    """A ``ResultsView`` of ``loaded`` inside a Jupyter kernel with itables installed, else None."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    try:
        import itables.widget  # noqa: F401  (the view extra)
    except ImportError:
        return None
    from silo_nb.notebook.widgets.results_view import ResultsView

    return ResultsView(loaded)


def report(
    run: Any,
    path: str | os.PathLike[str] = "report.html",
    *,
    folder: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Path:
    """Write ``run`` as one self-contained HTML page (summary, plots, every cell's transcript collapsed).

    ``run`` as for :func:`show`. Returns the page's path.
    """
    return write_report(LoadedRun.load(run_path(run, folder)), path, title=title)
