"""A turns table (``silo_nb.frame``'s DataFrame) as readable HTML and text, for ``%silo frame``.

pandas' own HTML lets the browser squeeze a wide table into the output's width: a prompt column wraps
into three-line cells and the right-hand columns are clipped. Here every cell stays on one line
(``white-space:nowrap``), long text is cut at :data:`CELL_CHARS` with "…" and the whole value as the
cell's tooltip, numbers are right-aligned and rounded to what a reader compares (seconds to 2 places,
money to 4), and the table scrolls sideways inside its own box instead of being clipped. The text form
shows the same cells in aligned columns.
"""

from __future__ import annotations

import math
from typing import Any

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.labels import esc

__all__ = ["CELL_CHARS", "frame_bundle"]

CELL_CHARS = 40
_DECIMALS = {"duration_s": 2, "cost": 4}
_CELL = "padding:2px 8px;white-space:nowrap;border-bottom:1px solid " + styles.rgba(styles.GREY, 0.25)


def _shown(column: str, value: Any) -> tuple[str, bool]:
    """(text, is a number) of one cell."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "", False
    if isinstance(value, bool):
        return str(value), False
    if isinstance(value, int | float) or hasattr(value, "dtype"):
        try:
            number = float(value)
        except (TypeError, ValueError):
            return str(value), False
        if number.is_integer() and column not in _DECIMALS:
            return f"{int(number):,}", True
        return f"{number:,.{_DECIMALS.get(column, 2)}f}", True
    return " ".join(str(value).split()), False


def _cut(text: str) -> str:
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def frame_bundle(table: Any) -> dict[str, str]:
    """``text/html`` and ``text/plain`` of a DataFrame of turns."""
    columns = [str(c) for c in table.columns]
    head = "".join(f'<th style="{_CELL};text-align:left;font-weight:600">{esc(c)}</th>' for c in columns)
    rows = []
    shown_rows: list[list[tuple[str, bool]]] = []
    for record in table.itertuples(index=False, name=None):
        cells = []
        shown_row = []
        for column, value in zip(columns, record, strict=True):
            text, numeric = _shown(column, value)
            tip = f' title="{esc(text)}"' if len(text) > CELL_CHARS else ""
            align = "right" if numeric else "left"
            cells.append(f'<td style="{_CELL};text-align:{align}"{tip}>{esc(_cut(text))}</td>')
            shown_row.append((_cut(text), numeric))
        rows.append(f"<tr>{''.join(cells)}</tr>")
        shown_rows.append(shown_row)
    html = (
        f'<div class="silo-frame" style="{styles.SCROLL_BOX}">'
        f'<table style="border-collapse:collapse;{styles.SMALL};width:auto;table-layout:auto">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )
    return {"text/html": html, "text/plain": _text(columns, shown_rows)}


def _text(columns: list[str], rows: list[list[tuple[str, bool]]]) -> str:
    """The same cells as plain text: columns as wide as their widest cell, numbers right-aligned."""
    widths = [max([len(c), *(len(row[i][0]) for row in rows)]) for i, c in enumerate(columns)]
    numeric = [any(row[i][1] for row in rows) for i in range(len(columns))]
    lines = [
        "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(columns, widths, numeric, strict=True))
    ]
    for row in rows:
        cells = zip(row, widths, strict=True)
        lines.append(
            "  ".join(text.rjust(w) if is_number else text.ljust(w) for (text, is_number), w in cells)
        )
    return "\n".join(line.rstrip() for line in lines)
