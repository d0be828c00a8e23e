"""``ResultsView``: a run's cells in a sortable, filterable table; choosing one shows its whole page.

- The table is itables' ``ITable`` widget (DataTables: a search box, a sort on every column, row
  selection), one row per cell; under it the chosen cell's page (``results/cell_page.py``): how it went,
  its scores and their output, its diff, its transcript as a ``%%prompt`` cell shows it. Above it the
  run's summary per group.
- :meth:`choose` is the Python twin of a click on a row (it selects the row in the browser too).
- The display bundle carries a static snapshot (``SnapshotMixin``): the summary, the table of cells and
  the chosen cell's page, so nbconvert and GitHub read it. Shown under a ``display_id``, the output is
  re-sent when another cell is chosen, so the saved notebook's snapshot shows that cell.
- Needs the ``view`` extra (itables); without it ``silo_nb.show`` displays the static page alone.
"""

from __future__ import annotations

from typing import Any

from silo_nb.notebook._display import update_display
from silo_nb.notebook.render import styles
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.results.cell_page import cell_html
from silo_nb.notebook.results.loaded_run import LoadedRun
from silo_nb.notebook.results.run_tables import cells_table_html, summary_table_html, summary_text
from silo_nb.notebook.widgets._common import close_tree, ipw, log
from silo_nb.notebook.widgets.snapshot import SnapshotMixin

__all__ = ["SNAPSHOT_CELLS", "ResultsView", "static_html"]

SNAPSHOT_CELLS = 200  # rows of the cells table a saved snapshot keeps (the report has them all)
# The search box always (itables drops it, with the other controls, for a table that fits in one page).
_LAYOUT = {"topStart": "info", "topEnd": "search", "bottomStart": "pageLength", "bottomEnd": "paging"}
_HINT = "Choose a row to see that cell's scores, diff and transcript."


def static_html(loaded: LoadedRun, chosen: str | None = None) -> str:
    """The run without widgets: its summary, its cells, and the chosen cell's page."""
    head = (
        f'<div style="font-weight:600;font-size:1.1em">Run {esc(loaded.name)}</div>'
        f'<div style="{styles.SMALL};{styles.MUTED}">{esc(loaded.shown_path)}</div>'
    )
    detail = f'<div style="margin-top:.6em">{cell_html(loaded, chosen)}</div>' if chosen else ""
    return (
        f'<div class="silo-results">{head}{summary_table_html(loaded.summary)}'
        f"{cells_table_html(loaded.cells, limit=SNAPSHOT_CELLS)}{detail}</div>"
    )


def _table_frame(loaded: LoadedRun) -> Any:
    """The cells as the interactive table shows them (missing values as blanks)."""
    table = loaded.cells.copy()
    for column in table.columns:
        if str(table[column].dtype) == "boolean":
            table[column] = table[column].map(
                lambda v: "—" if v is None or str(v) == "<NA>" else ("pass" if v else "fail")
            )
    return table.astype(object).where(table.notna(), None)


class ResultsView(SnapshotMixin, ipw.VBox):  # type: ignore[misc]
    """A run's cells and the page of the one chosen (see the module docstring)."""

    def __init__(self, loaded: LoadedRun) -> None:
        from itables.widget import ITable  # the view extra

        self.loaded = loaded
        self.ids = loaded.cell_ids()
        self.chosen: str | None = None
        self.display_id: str | None = None  # set by whoever displays it, to keep its saved snapshot current
        self.heading = ipw.HTML(
            f'<div style="font-weight:600">Run {esc(loaded.name)}</div>{summary_table_html(loaded.summary)}'
        )
        self.table = ITable(
            _table_frame(loaded),
            select={"style": "single"},
            maxBytes=0,
            pageLength=15,
            lengthMenu=[15, 50, 200, 1000],
            showIndex=False,
            classes="display compact nowrap",
            layout=_LAYOUT,
            scrollX=True,  # wider than the window: it scrolls inside the output, scores stay reachable
        )
        self.detail = ipw.HTML(f'<div style="{styles.MUTED}">{_HINT}</div>')
        self.table.observe(self._selected, names="selected_rows")
        super().__init__([self.heading, self.table, self.detail])

    def _selected(self, change: dict[str, Any]) -> None:
        rows = list(change.get("new") or [])
        if not rows or not 0 <= rows[0] < len(self.ids):
            return
        cell = self.ids[rows[0]]
        if cell != self.chosen:
            self.chosen = cell
            self.detail.value = cell_html(self.loaded, cell)
            if self.display_id is not None:  # the saved notebook's snapshot shows the chosen cell too
                try:
                    update_display(self, display_id=self.display_id)
                except Exception:
                    log.exception("could not refresh the results view's snapshot")

    def choose(self, cell: str) -> None:
        """Show ``cell``'s page, as a click on its row does."""
        if cell not in self.ids:
            self.loaded.cell(cell)  # says which cells there are
            raise ValueError(f"The cell {cell!r} has not run yet.")
        self.table.selected_rows = [self.ids.index(cell)]

    def snapshot(self) -> tuple[str, str]:
        text = f"Run {self.loaded.name}\n{summary_text(self.loaded.summary)}"
        return static_html(self.loaded, self.chosen), text

    def close_all(self) -> None:
        close_tree(self)
