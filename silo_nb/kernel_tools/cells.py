"""``read_cells`` and ``show_figure``: the kernel's recent cells (IPython's ``In`` and ``Out``) and the
current matplotlib figure, bounded (:data:`~.limits.MAX_CELLS` cells, :data:`~.limits.CELL_CHARS` of each
input and output; one figure)."""

from __future__ import annotations

from typing import Any

from silo_nb.kernel_tools import plot_capture as figures
from silo_nb.kernel_tools.limits import CELL_CHARS, MAX_CELLS, OUTPUT_CHARS
from silo_nb.kernel_tools.namespace import KernelNamespace
from silo_nb.kernel_tools.report_text import capped_repr, cut
from silo_nb.kernel_tools.variables import ToolInputError

__all__ = ["current_figure", "read_cells"]


def read_cells(ns: KernelNamespace, last: Any = 5) -> str:
    """The last ``last`` inputs with their ``Out`` values' text (a cell that printed shows no value)."""
    if type(last) is not int or not 1 <= last <= MAX_CELLS:
        raise ToolInputError(f"last must be a whole number from 1 to {MAX_CELLS} (got {last!r}).")
    inputs = ns.user_ns.get("In")
    outputs = ns.user_ns.get("Out")
    if not isinstance(inputs, list) or len(inputs) <= 1:
        return "No cells have run in this kernel yet (or it keeps no history)."
    outputs = outputs if isinstance(outputs, dict) else {}
    first = max(1, len(inputs) - last)
    parts = []
    for number in range(first, len(inputs)):
        source = inputs[number] if isinstance(inputs[number], str) else ""
        part = f"In [{number}]:\n```python\n{cut(source, CELL_CHARS)}\n```"
        if number in outputs:
            value = outputs[number]
            text = ns.format_value(value).get("text/plain") if ns.format_value is not None else None
            shown = cut(str(text), CELL_CHARS) if text is not None else capped_repr(value, CELL_CHARS)
            part += f"\nOut [{number}]:\n```\n{shown}\n```"
        parts.append(part)
    return cut("\n\n".join(parts), OUTPUT_CHARS)


def current_figure() -> tuple[str, figures.Rendered | None]:
    """(a line about it, the rendered figure) of matplotlib's current figure; None when there is none."""
    plt = figures.pyplot()
    if plt is None or not plt.get_fignums():
        return "There is no open matplotlib figure (inline figures close when their cell ends).", None
    figure = plt.gcf()
    rendered = figures.render(figure)
    axes = len(figure.get_axes())
    return f"figure {figure.number}: {rendered.width}×{rendered.height} px, {axes} axes", rendered
