"""``silo_nb.report``: a run as one self-contained HTML page to send to someone without Jupyter.

- The summary per group (rates with Wilson intervals, pass@k, means and spreads), the two plots as
  inline SVG, the table of cells (sortable and filterable by a few lines of inline script; without
  script it is a plain table), then every cell's page collapsed (``<details>``): its scores and their
  output, its diff, its transcript — the ``%%prompt`` renderer's (``cell_page.py``).
- No external resource: fonts and colours from the export page's stylesheet (``render/page.py``),
  light and dark schemes. Written whole to a temporary sibling and renamed over the target.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

from silo_nb.experiments import atomic_write
from silo_nb.notebook.render import styles
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.page import PAGE_CSS
from silo_nb.notebook.results.cell_page import cell_html, score_value_html, status_html
from silo_nb.notebook.results.figures import summary_svgs
from silo_nb.notebook.results.loaded_run import LoadedRun
from silo_nb.notebook.results.run_tables import cells_table_html, summary_table_html

__all__ = ["report_html", "write_report"]

REPORT_CSS = (
    "main{max-width:80em}"
    "h2{font-size:1.2em;margin:1.4em 0 .4em}"
    ".silo-plots{display:flex;flex-wrap:wrap;gap:16px}.silo-plots svg{max-width:100%;height:auto}"
    f"details.silo-cell{{margin:6px 0;padding:4px 8px;border:1px solid {styles.rgba(styles.GREY, 0.3)};"
    "border-radius:4px}"
    "details.silo-cell>summary{cursor:pointer}"
    "table.silo-cells th{cursor:pointer}"
    "#silo-filter{margin:.3em 0;padding:2px 6px;min-width:20em}"
)

# Sort the cells table by a click on a heading (numbers as numbers), filter it by the text box.
SORT_SCRIPT = """
document.querySelectorAll('table.silo-cells').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, column) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0], rows = Array.from(body.rows);
      var down = th.dataset.order !== 'up'; th.dataset.order = down ? 'up' : 'down';
      rows.sort(function (a, b) {
        var x = a.cells[column].innerText.trim(), y = b.cells[column].innerText.trim();
        var nx = parseFloat(x.replace(/,/g, '')), ny = parseFloat(y.replace(/,/g, ''));
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return down ? c : -c;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
var filter = document.getElementById('silo-filter');
if (filter) filter.addEventListener('input', function () {
  var words = filter.value.toLowerCase();
  document.querySelectorAll('table.silo-cells tbody tr').forEach(function (row) {
    row.style.display = row.innerText.toLowerCase().indexOf(words) >= 0 ? '' : 'none';
  });
});
"""


def _cell_summary(loaded: LoadedRun, row: dict[str, Any]) -> str:
    scores = [
        f"{esc(name[len('score.') :])} {score_value_html(value)}"
        for name, value in row.items()
        if name.startswith("score.")
    ]
    status = status_html(str(row.get("cell_status")))
    return f"<b>{esc(row['cell'])}</b> · {esc(row.get('variant', ''))} {status} " + " ".join(scores)


def report_html(loaded: LoadedRun, *, title: str | None = None) -> str:
    """The report page of ``loaded`` (see the module docstring)."""
    heading = title or f"Run {loaded.name}"
    cells = loaded.cells
    count = len(cells) if cells is not None else 0
    done = sum(1 for c in loaded.run.cells if loaded.run.record(c["cell"]) is not None)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    meta = f"{done} of {len(loaded.run.cells)} cells done · {loaded.shown_path} · written {stamp}"
    plots = "".join(f"<div>{svg}</div>" for svg in summary_svgs(loaded.summary))
    sections = []
    for row in cells.to_dict("records") if count else []:
        cell = str(row["cell"])
        summary = _cell_summary(loaded, row)
        sections.append(
            f'<details class="silo-cell" id="cell-{esc(cell)}"><summary>{summary}</summary>'
            f"{cell_html(loaded, cell)}</details>"
        )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        f"<title>{esc(heading)}</title><style>{PAGE_CSS}{REPORT_CSS}</style></head>\n"
        f'<body><main class="silo-report"><h1>{esc(heading)}</h1>'
        f'<div class="silo-page-meta">{esc(meta)}</div>\n'
        f"<h2>Summary</h2>{summary_table_html(loaded.summary)}"
        + (f'<div class="silo-plots">{plots}</div>' if plots else "")
        + f'<h2>Cells</h2><input id="silo-filter" type="search" placeholder="filter the cells">'
        f"{cells_table_html(cells, link=True)}\n"
        + "<h2>Every cell</h2>"
        + f'<div style="{styles.SMALL};{styles.MUTED}">Open one for its scores, diff and transcript.</div>'
        + "\n".join(sections)
        + f"\n</main><script>{SORT_SCRIPT}</script></body></html>\n"
    )


def write_report(loaded: LoadedRun, path: str | os.PathLike[str], *, title: str | None = None) -> Path:
    """Write the report to ``path`` (atomically); its resolved path."""
    target = Path(path).expanduser()
    if target.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"report path {os.fspath(path)!r} must end in .html (it is one HTML page).")
    if not target.parent.is_dir():
        raise ValueError(f"No folder {str(target.parent)!r} for the report — create it first.")
    atomic_write(target, report_html(loaded, title=title))
    target.chmod(0o644)
    return target.resolve()
