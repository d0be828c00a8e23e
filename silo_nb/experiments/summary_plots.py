"""The two plots people expect of a summary, drawn from its numbers (matplotlib, imported when called).

- :func:`plot_pass_rates`: a bar per group, the pass rate of one bool score, the Wilson 95 % interval as
  error bars, ``passed/n`` above each bar.
- :func:`plot_cost_vs_pass`: a point per group, mean cost per cell (x, with its standard deviation) against
  the pass rate (y, with its interval): what a better score costs.
- Both read only ``summarize``'s table (the same numbers as the table shows) and return the matplotlib
  ``Figure``; pass ``ax=`` to draw into axes of your own.
- Readable as drawn: a group label longer than :data:`LABEL_CHARS` wraps at its " · " (and spaces), so
  neighbouring labels never overlap; a point's label beside it turns to its left side when it would run
  past the axes; the layout is made after the labels, so none is clipped at the figure's edge.
"""

from __future__ import annotations

import textwrap
from typing import Any

__all__ = ["plot_cost_vs_pass", "plot_pass_rates"]


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            'The plots need matplotlib — run `pip install "silo-nb[view]"` (or `pip install matplotlib`).'
        ) from exc
    return plt


def _score(summary: Any, score: str | None) -> str:
    flags = list(summary.attrs.get("flags") or [])
    if score is None:
        if not flags:
            raise ValueError("The summary has no bool score — run the grid with scorers= that return a bool.")
        return str(flags[0])
    if f"{score}_pass_rate" not in summary.columns:
        raise ValueError(f"The summary has no pass rate of {score!r} — its bool scores: {', '.join(flags)}.")
    return score


LABEL_CHARS = 14  # a tick label's line: longer group labels wrap


def group_labels(summary: Any) -> list[str]:
    """One label per summary row: its ``by`` values joined."""
    by = list(summary.attrs.get("by") or [])
    return [" · ".join(str(row[name]) for name in by) for _, row in summary.iterrows()]


def _wrapped(label: str) -> str:
    """A tick label on lines of at most :data:`LABEL_CHARS` (a word longer than that keeps its line)."""
    parts = label.split(" · ")
    lines = [
        line
        for part in parts
        for line in textwrap.wrap(part, LABEL_CHARS, break_long_words=False, break_on_hyphens=False)
    ]
    return "\n".join(lines) or label


def _axes(ax: Any, size: tuple[float, float]) -> tuple[Any, Any]:
    if ax is not None:
        return ax.figure, ax
    figure, axes = _pyplot().subplots(figsize=size)
    return figure, axes


def plot_pass_rates(summary: Any, score: str | None = None, *, ax: Any = None) -> Any:
    """Pass rate of ``score`` (default: the first bool score) per group, with Wilson 95 % intervals."""
    name = _score(summary, score)
    figure, axes = _axes(ax, (max(4.0, 1.2 * len(summary) + 2), 3.4))
    rates = summary[f"{name}_pass_rate"].astype(float)
    below = (rates - summary[f"{name}_low"]).clip(lower=0)
    above = (summary[f"{name}_high"] - rates).clip(lower=0)
    labels = group_labels(summary)
    positions = list(range(len(summary)))
    axes.bar(positions, rates, color="C0", alpha=0.85)
    axes.errorbar(positions, rates, yerr=[below, above], fmt="none", ecolor="C7", capsize=5)
    tops = summary[f"{name}_high"].astype(float).fillna(rates)
    for x, rate, top, n in zip(positions, rates, tops, summary[f"{name}_n"], strict=True):
        passed = round(rate * n) if n else 0
        axes.annotate(f"{passed}/{n}", (x, top), textcoords="offset points", xytext=(0, 4), ha="center")
    axes.set_xticks(positions, [_wrapped(label) for label in labels])
    axes.set_ylim(0, 1.12)
    axes.set_ylabel(f"{name}: pass rate")
    axes.set_title(f"{name}: pass rate with 95 % Wilson intervals")
    figure.tight_layout()
    return figure


def plot_cost_vs_pass(summary: Any, score: str | None = None, *, ax: Any = None) -> Any:
    """Mean cost per cell against the pass rate of ``score``, one point per group."""
    name = _score(summary, score)
    if "cost_mean" not in summary.columns:
        raise ValueError("The summary has no cost — the agent reported none (usage_update with a cost).")
    figure, axes = _axes(ax, (5.5, 3.6))
    rates = summary[f"{name}_pass_rate"].astype(float)
    below = (rates - summary[f"{name}_low"]).clip(lower=0)
    above = (summary[f"{name}_high"] - rates).clip(lower=0)
    costs = summary["cost_mean"].astype(float)
    spread = summary["cost_std"].astype(float).fillna(0.0)
    axes.errorbar(costs, rates, xerr=spread, yerr=[below, above], fmt="o", capsize=4, color="C3")
    axes.margins(x=0.3)  # room for the labels beside the points
    middle = (float(costs.min()) + float(costs.max())) / 2 if len(costs) else 0.0
    for label, x, y in zip(group_labels(summary), costs, rates, strict=True):
        left = len(costs) > 1 and x > middle  # the right-hand points' labels go on their left
        axes.annotate(
            label,
            (x, y),
            textcoords="offset points",
            xytext=(-6 if left else 6, 6),
            ha="right" if left else "left",
        )
    axes.set_xlabel("mean cost per cell")
    axes.set_ylabel(f"{name}: pass rate")
    axes.set_ylim(0, 1.1)
    axes.set_title(f"Cost vs {name} pass rate")
    figure.tight_layout()
    return figure
