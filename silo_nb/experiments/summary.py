"""``summarize``: a run's DataFrame per group of cells — n, pass rates with intervals, pass@k, spreads.

- The DataFrame has a row per turn; a summary counts **cells** (the grid's unit). Per cell: its turns'
  durations, tool calls and updates are added up; tokens and cost are the cell's own (``cell_tokens``,
  ``cell_cost``: the agent's counts, ``tokens_used``/``cost`` of the last turn for a frame of journals).
- For each bool score column (``score.NAME``): ``NAME_n`` (cells that have the score), ``NAME_pass_rate``
  and its Wilson 95 % interval (``NAME_low``, ``NAME_high``; :func:`wilson_interval`), and ``NAME_pass@k``
  — the unbiased estimator over repeats of each prompt (:func:`pass_at_k`, averaged over the group's
  prompts; a prompt with fewer than k scored repeats is left out of that k). A cell whose scorer
  failed has no score (NaN), so it is not in ``NAME_n``; ``NAME_errors`` counts those.
- For each number score and for duration, tokens, cost and tool calls: ``_mean`` and ``_std``.
- Cells the grid's budget kept from starting are not counted, only shown (``not_run``). A retried cell
  (``run_grid(retry=)``) counts once: only its final attempt's rows (``final``) are read.
- ``summary.attrs`` records ``by``, the bool and number scores and the ks, for the plots (``summary_plots``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from silo_nb.experiments._pandas import require_pandas
from silo_nb.experiments.run_rows import SCORE_PREFIX

__all__ = ["Z_95", "cells_frame", "pass_at_k", "summarize", "wilson_interval"]

Z_95 = 1.959963984540054  # the normal quantile of 0.975


def wilson_interval(passed: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of ``passed`` successes in ``n`` trials (NaN, NaN when n is 0)."""
    if n <= 0:
        return math.nan, math.nan
    p = passed / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of ``c`` passes in ``n`` samples: 1 - C(n-c, k) / C(n, k) (Chen et al. 2021)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n — got n={n}, c={c}, k={k}.")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def cells_frame(df: Any) -> Any:
    """One row per cell: grid and cell columns from its first turn, the turns' counts added up."""
    key = "cell" if "cell" in df.columns else "session"
    table = df[~df["final"].eq(False)].copy() if "final" in df.columns else df.copy()  # retried: the last
    if "cell_tokens" not in table.columns:
        table["cell_tokens"] = table.get("tokens_used")
    if "cell_cost" not in table.columns:
        table["cell_cost"] = table.get("cost_total")
    summed = {name: "sum" for name in ("duration_s", "tool_calls", "updates") if name in table.columns}
    firsts = {name: "first" for name in table.columns if name != key and name not in summed}
    if "cell_tokens" in firsts and "cell" not in df.columns:
        firsts["cell_tokens"] = "max"
    cells = table.groupby(key, sort=False, dropna=False).agg({**firsts, **summed}).reset_index()
    if "duration_s" in summed:  # a cell with no timed turn has no duration, not 0 s
        timed = table.groupby(key, sort=False, dropna=False)["duration_s"].count().to_numpy()
        cells.loc[timed == 0, "duration_s"] = math.nan
    return cells


def summarize(df: Any, by: Sequence[str] | str | None = None, *, k: int | Iterable[int] | None = None) -> Any:
    """Per group of ``by`` (default: ``variant``): n, pass rates and intervals, pass@k, means and spreads.

    ``df`` is ``run_grid``'s DataFrame (or ``silo_nb.frame`` of a run); ``k`` the pass@k to give (an int
    or several; default 1 and the smallest number of repeats of a prompt).
    """
    pd = require_pandas()
    groups = [by] if isinstance(by, str) else list(by or (["variant"] if "variant" in df.columns else []))
    missing = [name for name in groups if name not in df.columns]
    if missing:
        raise ValueError(f"summarize(by=) names no column {missing[0]!r} — columns: {', '.join(df.columns)}.")
    if not groups:
        raise ValueError("summarize needs by= — the columns to group on, e.g. by=['profile', 'model'].")
    cells = cells_frame(df)
    not_run = cells[cells["cell_status"] == "not_run"] if "cell_status" in cells.columns else cells[:0]
    cells = cells.drop(not_run.index)
    score_columns = [c for c in cells.columns if c.startswith(SCORE_PREFIX)]
    flags = [c for c in score_columns if str(cells[c].dtype) == "boolean" or cells[c].dtype == bool]
    numbers = [c for c in score_columns if c not in flags]
    ks = _ks(cells, flags, k)
    skipped = {_key(values): len(group) for values, group in not_run.groupby(groups, dropna=False)}
    rows = []
    for values, group in cells.groupby(groups, sort=True, dropna=False):
        row: dict[str, Any] = dict(zip(groups, _key(values), strict=True))
        row["n"] = len(group)
        if skipped:
            row["not_run"] = skipped.get(_key(values), 0)
        for column in flags:
            row.update(_flag(group, column, ks))
        for column, label in [(c, c[len(SCORE_PREFIX) :]) for c in numbers] + [
            ("duration_s", "duration"),
            ("cell_tokens", "tokens"),
            ("cell_cost", "cost"),
            ("tool_calls", "tool_calls"),
        ]:
            if column in group.columns:
                series = pd.to_numeric(group[column], errors="coerce")
                row[f"{label}_mean"], row[f"{label}_std"] = series.mean(), series.std()
        rows.append(row)
    summary = pd.DataFrame(rows)
    summary.attrs.update(
        by=groups,
        flags=[c[len(SCORE_PREFIX) :] for c in flags],
        numbers=[c[len(SCORE_PREFIX) :] for c in numbers],
        ks=ks,
    )
    return summary


def _key(values: Any) -> tuple[Any, ...]:
    return values if isinstance(values, tuple) else (values,)


def _ks(cells: Any, flags: list[str], k: int | Iterable[int] | None) -> list[int]:
    if k is not None:
        ks = [k] if isinstance(k, int) else list(k)
        if not ks or not all(isinstance(x, int) and x >= 1 for x in ks):
            raise ValueError(f"k={k!r} — give a whole number of repeats (1 or more), or a list of them.")
        return sorted(set(ks))
    if not flags or "prompt_index" not in cells.columns:
        return [1]
    counts = cells.groupby(["variant", "prompt_index"] if "variant" in cells.columns else ["prompt_index"])
    smallest = int(counts.size().min()) if len(cells) else 1
    return sorted({1, smallest})


def _flag(group: Any, column: str, ks: list[int]) -> dict[str, Any]:
    name = column[len(SCORE_PREFIX) :]
    scored = group[group[column].notna()]
    passed = int(scored[column].astype(bool).sum())
    n = len(scored)
    low, high = wilson_interval(passed, n)
    out: dict[str, Any] = {
        f"{name}_n": n,
        f"{name}_errors": len(group) - n,
        f"{name}_pass_rate": passed / n if n else math.nan,
        f"{name}_low": low,
        f"{name}_high": high,
    }
    prompt = "prompt_index" if "prompt_index" in scored.columns else None
    tasks = scored.groupby(prompt)[column] if prompt else [(0, scored[column])]
    for k in ks:
        estimates = [
            pass_at_k(len(series), int(series.astype(bool).sum()), k)
            for _, series in tasks
            if len(series) >= k
        ]
        out[f"{name}_pass@{k}"] = sum(estimates) / len(estimates) if estimates else math.nan
    return out
