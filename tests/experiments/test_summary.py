"""summarize: Wilson intervals and pass@k against hand-computed values, per group of cells; the plots."""

from __future__ import annotations

import math
from typing import Any

import matplotlib
import pandas as pd
import pytest

from silo_nb.experiments import pass_at_k, plot_cost_vs_pass, plot_pass_rates, summarize, wilson_interval

matplotlib.use("Agg")


@pytest.mark.parametrize(
    ("passed", "n", "low", "high"),
    [
        # By hand, z = 1.959964: centre = (p + z²/2n) / (1 + z²/n), half = z √(p(1-p)/n + z²/4n²) / (1 + z²/n)
        (5, 10, 0.236593, 0.763407),
        (0, 10, 0.0, 0.277533),
        (10, 10, 0.722467, 1.0),
        (1, 4, 0.0455873, 0.6993582),
        (8, 12, 0.3906221, 0.8618799),
    ],
)
def test_wilson_intervals_match_hand_computed_values(passed: int, n: int, low: float, high: float) -> None:
    got = wilson_interval(passed, n)
    assert got == pytest.approx((low, high), abs=1e-6)
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 2 / 5),
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (5, 2, 3, 1 - 1 / 10),  # 1 - C(3,3)/C(5,3)
        (5, 2, 4, 1.0),  # n - c < k: every draw of 4 holds a pass
        (10, 0, 5, 0.0),
        (10, 3, 2, 1 - 21 / 45),  # 1 - C(7,2)/C(10,2)
    ],
)
def test_pass_at_k_is_the_unbiased_estimator(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_refuses_impossible_counts() -> None:
    for n, c, k in [(3, 4, 1), (3, 1, 0), (3, 1, 4)]:
        with pytest.raises(ValueError, match="pass@k needs"):
            pass_at_k(n, c, k)


def cells(model: str, prompt: int, outcomes: list[Any], cost: float, seconds: float) -> list[dict[str, Any]]:
    return [
        {
            "cell": f"p{prompt}-{model}-r{r}",
            "variant": f"model={model}",
            "model": model,
            "profile": "demo",
            "prompt_index": prompt,
            "repeat": r,
            "cell_status": "finished",
            "duration_s": seconds,
            "tool_calls": 2,
            "updates": 5,
            "cell_tokens": 1000.0,
            "cell_cost": cost,
            "score.tests": outcome,
            "score.lines": 3.0,
        }
        for r, outcome in enumerate(outcomes)
    ]


def frame() -> Any:
    rows = (
        cells("fast", 0, [True, False, False], 0.01, 1.0)
        + cells("fast", 1, [False, False, None], 0.03, 3.0)  # one scorer failed: NaN, not a fail
        + cells("smart", 0, [True, True, True], 0.05, 2.0)
        + cells("smart", 1, [True, False, True], 0.07, 4.0)
    )
    # A second turn of one cell: cells are counted once, their turns' durations and tool calls added up.
    rows.append({**rows[0], "duration_s": 1.5, "tool_calls": 1})
    df = pd.DataFrame(rows)
    df["score.tests"] = pd.array(df["score.tests"].tolist(), dtype="boolean")
    return df


def test_a_summary_counts_cells_and_matches_hand_computed_rates() -> None:
    summary = summarize(frame(), by=["model"]).set_index("model")
    fast, smart = summary.loc["fast"], summary.loc["smart"]
    assert (fast["n"], smart["n"]) == (6, 6)
    assert (fast["tests_n"], fast["tests_errors"], smart["tests_n"]) == (5, 1, 6)
    assert fast["tests_pass_rate"] == pytest.approx(1 / 5) and smart["tests_pass_rate"] == pytest.approx(
        5 / 6
    )
    assert (fast["tests_low"], fast["tests_high"]) == pytest.approx(wilson_interval(1, 5))
    # pass@k per prompt, averaged: fast p0 (n=3, c=1), p1 (n=2, c=0); smart p0 (3, 3), p1 (3, 2)
    assert fast["tests_pass@1"] == pytest.approx((1 / 3 + 0) / 2)
    assert smart["tests_pass@1"] == pytest.approx((1 + 2 / 3) / 2)
    assert summary.attrs["ks"] == [1, 3]  # default: 1 and the grid's repeats (the fewest of a prompt)
    # pass@3 needs 3 scored repeats: fast p1 has 2, so only p0 counts (n - c = 2 < 3: 1.0)
    assert fast["tests_pass@3"] == pytest.approx(1.0) and smart["tests_pass@3"] == pytest.approx(1.0)
    assert fast["cost_mean"] == pytest.approx(0.02) and fast["cost_std"] == pytest.approx(
        pd.Series([0.01] * 3 + [0.03] * 3).std()
    )
    assert fast["duration_mean"] == pytest.approx((2.5 + 1 + 1 + 3 + 3 + 3) / 6)
    assert fast["tool_calls_mean"] == pytest.approx((3 + 2 * 5) / 6)
    assert fast["lines_mean"] == 3.0  # a number score: mean and spread, no pass rate
    assert "lines_pass_rate" not in summary.columns


def test_explicit_ks_and_groups_and_what_summarize_refuses() -> None:
    summary = summarize(frame(), by="profile", k=[2, 3])
    assert list(summary["profile"]) == ["demo"] and summary.attrs["ks"] == [2, 3]
    # One group, the prompts pooled: p0 n=6 c=4, p1 n=5 c=2.
    both = summary.iloc[0]
    assert both["tests_pass@2"] == pytest.approx(
        ((1 - 1 / 15) + (1 - 3 / 10)) / 2
    )  # C(2,2)/C(6,2); C(3,2)/C(5,2)
    assert both["tests_pass@3"] == pytest.approx((1.0 + (1 - 1 / 10)) / 2)  # n - c = 2 < 3; C(3,3)/C(5,3)
    with pytest.raises(ValueError, match="names no column 'nope'"):
        summarize(frame(), by=["nope"])
    with pytest.raises(ValueError, match="k=0"):
        summarize(frame(), by="model", k=0)


def test_cells_the_budget_kept_from_starting_are_shown_not_counted() -> None:
    df = frame()
    extra = {**df.iloc[-2].to_dict(), "cell": "p9", "cell_status": "not_run", "score.tests": None}
    df = pd.concat([df, pd.DataFrame([extra]).astype(df.dtypes.to_dict())], ignore_index=True)
    summary = summarize(df, by=["model"]).set_index("model")
    assert summary.loc["smart", "n"] == 6 and summary.loc["smart", "not_run"] == 1


def test_the_plots_show_the_summarys_own_numbers() -> None:
    summary = summarize(frame(), by=["model"])
    figure = plot_pass_rates(summary)
    axes = figure.axes[0]
    heights = [bar.get_height() for bar in axes.patches]
    assert heights == pytest.approx(list(summary["tests_pass_rate"]))
    assert [t.get_text() for t in axes.get_xticklabels()] == ["fast", "smart"]
    assert [t.get_text() for t in axes.texts] == ["1/5", "5/6"]
    figure = plot_cost_vs_pass(summary)
    line = figure.axes[0].lines[0]
    assert list(line.get_xdata()) == pytest.approx(list(summary["cost_mean"]))
    assert list(line.get_ydata()) == pytest.approx(list(summary["tests_pass_rate"]))
    with pytest.raises(ValueError, match="no pass rate of 'lines'"):
        plot_pass_rates(summary, "lines")


def _inside_and_apart(figure: Any, texts: list[Any]) -> None:
    """Every text drawn lies inside the figure, and no two overlap."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    page = figure.bbox
    boxes = [t.get_window_extent(renderer) for t in texts if t.get_text()]
    for box in boxes:
        assert (
            page.x0 - 1 <= box.x0
            and box.x1 <= page.x1 + 1
            and page.y0 - 1 <= box.y0
            and box.y1 <= page.y1 + 1
        )
    for i, box in enumerate(boxes):
        assert not any(box.overlaps(other) for other in boxes[i + 1 :]), [t.get_text() for t in texts]


def test_long_group_labels_wrap_apart_and_nothing_is_clipped() -> None:
    matplotlib.use("Agg")
    long_names = {"fast": "claude-sonnet-4-5 · plan mode", "smart": "gpt-5-codex-high · ask mode"}
    df = frame().assign(model=lambda d: d["model"].map(long_names))
    summary = summarize(df, by=["model", "profile"])
    figure = plot_pass_rates(summary)
    labels = figure.axes[0].get_xticklabels()
    assert labels[0].get_text().split("\n") == ["claude-sonnet-4-5", "plan mode", "demo"]
    assert all(len(line) <= 17 for t in labels for line in t.get_text().split("\n"))
    _inside_and_apart(figure, [*labels, *figure.axes[0].texts])
    figure = plot_cost_vs_pass(summary)
    _inside_and_apart(figure, figure.axes[0].texts)
