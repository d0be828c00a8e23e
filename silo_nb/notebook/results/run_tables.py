"""A run's tables as static HTML and text: the summary per group, the cells, and the runs of a folder.

- Plain ``<table>`` s with inline styles: they read in nbconvert, on GitHub and in a mail client. The
  report adds a small script that sorts them; nothing here needs one.
- A pass rate reads ``50 % (15–85 %)``: the rate and its Wilson 95 % interval, from ``summarize``.
"""

from __future__ import annotations

import math
from typing import Any

from silo_nb.experiments import SCORE_PREFIX, RunInfo
from silo_nb.notebook.render import styles
from silo_nb.notebook.render.labels import elapsed_text, esc
from silo_nb.notebook.results.cell_page import score_value_html, status_html

__all__ = ["cells_table_html", "runs_table_html", "runs_text", "summary_table_html", "summary_text"]

_TABLE = f"border-collapse:collapse;{styles.SMALL};margin:.3em 0"
_TH = (
    f"text-align:left;padding:3px 8px;border-bottom:1px solid {styles.rgba(styles.GREY, 0.5)};"
    "white-space:nowrap"
)
_TD = f"padding:3px 8px;border-bottom:1px solid {styles.rgba(styles.GREY, 0.2)};vertical-align:top"
_HEADINGS = {
    "cell_status": "status",
    "stop_reason": "stop reason",
    "files_changed": "files",
    "lines_added": "+",
    "lines_removed": "−",
    "cell_tokens": "tokens",
    "cell_cost": "cost",
    "duration_s": "seconds",
    "tool_calls": "tool calls",
    "budget_exceeded": "budget",
    "score_error": "score error",
}


def _table(css_class: str, head: str, body: str) -> str:
    """A table that scrolls sideways when it is wider than the page (a notebook's output area)."""
    return (
        f'<div style="{styles.SCROLL_BOX}"><table class="{css_class}" style="{_TABLE}"><thead><tr>{head}</tr>'
        f"</thead><tbody>{body}</tbody></table></div>"
    )


def _heading(column: str) -> str:
    if column.startswith(SCORE_PREFIX):
        return column[len(SCORE_PREFIX) :]
    return _HEADINGS.get(column, column)


_WRAPPED = ("error", "score_error")  # the long texts of a cells table; the rest stays on one line


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value) in ("<NA>", "NaT")


def _number(value: Any, digits: int = 3) -> str:
    if _missing(value):
        return "—"
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def _rate(row: Any, name: str) -> str:
    rate, low, high = row.get(f"{name}_pass_rate"), row.get(f"{name}_low"), row.get(f"{name}_high")
    if _missing(rate):
        return "—"
    return f"{rate * 100:.0f} % ({low * 100:.0f}–{high * 100:.0f} %)"


def _summary_columns(summary: Any) -> list[tuple[str, Any]]:
    """(heading, row → text) for each column of the summary table."""
    columns: list[tuple[str, Any]] = [
        (name, lambda row, name=name: str(row[name])) for name in summary.attrs["by"]
    ]
    columns.append(("cells", lambda row: str(int(row["n"]))))
    if "not_run" in summary.columns:
        columns.append(("not run", lambda row: str(int(row["not_run"]))))
    for name in summary.attrs.get("flags") or []:
        columns.append((f"{name}: pass rate (95 %)", lambda row, name=name: _rate(row, name)))
        for k in summary.attrs.get("ks") or []:
            columns.append(
                (f"{name}: pass@{k}", lambda row, name=name, k=k: _number(row.get(f"{name}_pass@{k}")))
            )
    measures = [*(summary.attrs.get("numbers") or []), "tokens", "cost", "duration", "tool_calls"]
    for name in measures:
        if f"{name}_mean" in summary.columns:
            columns.append(
                (
                    f"{name.replace('_', ' ')} (mean ± sd)",
                    lambda row, name=name: f"{_number(row[f'{name}_mean'])} ± {_number(row[f'{name}_std'])}",
                )
            )
    return columns


def summary_table_html(summary: Any) -> str:
    """The summary per group (``summarize``'s table), one row per group."""
    if summary is None or summary.empty:
        return f'<div style="{styles.MUTED}">No finished cell yet.</div>'
    columns = _summary_columns(summary)
    head = "".join(f'<th style="{_TH}">{esc(heading)}</th>' for heading, _ in columns)
    body = "".join(
        "<tr>"
        + "".join(f'<td style="{_TD};white-space:nowrap">{esc(show(row))}</td>' for _, show in columns)
        + "</tr>"
        for _, row in summary.iterrows()
    )
    return _table("silo-summary", head, body)


def summary_text(summary: Any) -> str:
    if summary is None or summary.empty:
        return "No finished cell yet."
    columns = _summary_columns(summary)
    lines = [" | ".join(heading for heading, _ in columns)]
    lines += [" | ".join(show(row) for _, show in columns) for _, row in summary.iterrows()]
    return "\n".join(lines)


def _cell_value(column: str, value: Any) -> str:
    if column == "cell_status":
        return status_html(str(value))
    if column.startswith(SCORE_PREFIX):
        return score_value_html(None if _missing(value) else value)
    if column in ("lines_added", "lines_removed", "files_changed", "tool_calls", "attempts"):
        return esc(_number(value if _missing(value) else int(value)))
    if column in ("cell_tokens", "cell_cost", "duration_s"):
        return esc(_number(value))
    return f'<span style="{styles.MUTED}">—</span>' if _missing(value) else esc(value)


def cells_table_html(cells: Any, *, limit: int | None = None, link: bool = False) -> str:
    """A row per cell; with ``link`` each cell id links to ``#cell-<id>`` (the report's sections)."""
    if cells is None or cells.empty:
        return f'<div style="{styles.MUTED}">No finished cell yet.</div>'
    shown = cells if limit is None else cells.head(limit)
    columns = list(shown.columns)
    head = "".join(f'<th style="{_TH}">{esc(_heading(c))}</th>' for c in columns)
    rows = []
    for record in shown.to_dict("records"):
        cells_html = []
        for column in columns:
            value = record[column]
            text = _cell_value(column, value)
            if column == "cell" and link:
                text = f'<a href="#cell-{esc(value)}" style="color:inherit">{text}</a>'
            wrap = "" if column in _WRAPPED else ";white-space:nowrap"
            cells_html.append(f'<td style="{_TD}{wrap}">{text}</td>')
        rows.append(f'<tr data-cell="{esc(record["cell"])}">{"".join(cells_html)}</tr>')
    more = ""
    if limit is not None and len(cells) > limit:
        left = f"… {len(cells) - limit:,} more cells (silo_nb.report has them all)."
        more = f'<div style="{styles.SMALL};{styles.MUTED}">{left}</div>'
    return _table("silo-cells", head, "".join(rows)) + more


def _pass_rates(info: RunInfo) -> str:
    parts = [
        f"{name} {passed}/{scored} ({passed / scored * 100:.0f} %)"
        for name, (passed, scored) in info.pass_rates.items()
        if scored
    ]
    return ", ".join(parts) or "—"


def _size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size} B"


def _runs_rows(runs: list[RunInfo]) -> list[list[str]]:
    return [
        [
            info.name,
            f"{info.done}/{info.cells}",
            str(info.failed),
            _size(info.size_bytes),
            f"{elapsed_text(info.age_seconds)} ago",
            _pass_rates(info),
        ]
        for info in runs
    ]


_RUNS_HEADINGS = ("run", "done", "failed", "size", "age", "pass rates")


def runs_table_html(runs: list[RunInfo], folder: str) -> str:
    if not runs:
        return f'<div style="{styles.MUTED}">No runs in {esc(folder)}.</div>'
    head = "".join(f'<th style="{_TH}">{esc(h)}</th>' for h in _RUNS_HEADINGS)
    body = "".join(
        "<tr>" + "".join(f'<td style="{_TD}">{esc(value)}</td>' for value in row) + "</tr>"
        for row in _runs_rows(runs)
    )
    return _table("silo-runs", head, body)


def runs_text(runs: list[RunInfo], folder: str) -> str:
    if not runs:
        return f"No runs in {folder}."
    rows = [list(_RUNS_HEADINGS), *_runs_rows(runs)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_RUNS_HEADINGS))]
    return "\n".join(
        "  ".join(value.ljust(width) for value, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )
