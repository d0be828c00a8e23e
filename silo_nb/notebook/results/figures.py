"""The summary's two plots as inline SVG for a page (matplotlib's own figures, closed once drawn).

- Drawn by ``experiments.summary_plots`` from the summary's numbers, saved as SVG text and closed at
  once, so a notebook's inline backend never shows them a second time at the end of the cell.
- No plot when the run has no bool score; no cost plot when the agent reported no cost. Without
  matplotlib there is simply no plot (the tables say the same).
"""

from __future__ import annotations

import io
import logging
import math
from typing import Any

from silo_nb.experiments import plot_cost_vs_pass, plot_pass_rates

__all__ = ["summary_svgs"]

log = logging.getLogger("silo_nb.notebook")


def _svg(figure: Any) -> str:
    import matplotlib.pyplot as plt

    try:
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", bbox_inches="tight")
    finally:
        plt.close(figure)
    text = buffer.getvalue()
    return text[text.find("<svg") :]  # the XML prologue and doctype do not belong inside a page


def summary_svgs(summary: Any) -> list[str]:
    """The pass-rate plot and the cost plot of ``summary`` (those that apply), as ``<svg>`` text."""
    flags = list(summary.attrs.get("flags") or []) if summary is not None else []
    if not flags or summary.empty:
        return []
    try:
        import matplotlib  # noqa: F401  (the plots need it; without it there are none)
    except ImportError:
        return []
    figures = []
    try:
        figures.append(_svg(plot_pass_rates(summary)))
        costs = summary["cost_mean"] if "cost_mean" in summary.columns else []
        if any(not math.isnan(float(cost)) for cost in costs):
            figures.append(_svg(plot_cost_vs_pass(summary)))
    except Exception:  # a plot must never stop a page
        log.exception("could not draw the summary plots")
    return figures
