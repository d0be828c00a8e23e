"""Budgets: a cell's tokens, cost or seconds stop its turn within one update; the grid's total, new cells."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import anyio
import pandas as pd
import pytest

import silo_nb
from silo_nb.experiments import run_grid
from silo_nb.experiments.budgets import BudgetWatch, CellBudget, GridSpend, check_grid_budget
from silo_nb.experiments.progress import format_counts
from silo_nb.model.models import AgentSessionCost, AgentSessionUpdate, AgentSessionUsage
from tests.experiments.grid_checks import TASK, Recorder, agents_with, demo_env

ALLOW = silo_nb.PermissionPolicy("allow *")


def usage(used: int, cost: float | None = None) -> AgentSessionUpdate:
    amount = AgentSessionCost(amount=cost, currency="USD") if cost is not None else None
    return AgentSessionUpdate(kind="usage_update", usage=AgentSessionUsage(used=used, size=1000, cost=amount))


def test_the_watch_trips_on_the_update_that_passes_a_limit_and_cancels_once() -> None:
    cancels: list[int] = []
    watch = BudgetWatch(CellBudget(max_tokens=500, max_cost=1.0), lambda: cancels.append(1))
    watch.on_update(AgentSessionUpdate(kind="agent_message_chunk", text="hi"))
    watch.on_update(usage(400, 0.2))
    watch.on_update(usage(500, 0.3))  # at the limit is not past it
    assert watch.exceeded is None and cancels == []
    watch.on_update(usage(501, 0.4))
    assert watch.exceeded == {"limit": "max_tokens", "value": 501.0, "max": 500}
    watch.on_update(usage(900, 5.0))
    assert cancels == [1] and watch.exceeded["limit"] == "max_tokens"  # the first limit passed stays
    assert watch.usage() == {"tokens": 900.0, "cost": 5.0, "currency": "USD"}


def test_the_prompt_answers_usage_counts_too_and_the_highest_count_is_kept() -> None:
    watch = BudgetWatch(CellBudget(max_tokens=1000), lambda: None)
    watch.on_update(usage(800))
    watch.on_answer({"totalTokens": 1200, "inputTokens": 900})
    assert watch.exceeded == {"limit": "max_tokens", "value": 1200.0, "max": 1000}
    watch.on_update(usage(100))  # context shrank (a /clear): the count does not go down
    assert watch.tokens == 1200.0


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"max_tokens": 0}, "max_tokens=0"),
        ({"max_cost": -1}, "max_cost=-1"),
        ({"max_seconds": True}, "max_seconds=True"),
    ],
)
def test_bad_limits_say_what_to_give(given: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        CellBudget(**given)
    for bad in ({"dollars": 5}, {}, 5, {"cost": 0}):
        with pytest.raises(ValueError, match="budget"):
            check_grid_budget(bad)  # type: ignore[arg-type]


def test_grid_spend_adds_up_and_says_why_it_stopped() -> None:
    spend = GridSpend({"cost": 0.05})
    spend.add({"cost": 0.03, "tokens": 100})
    assert spend.reached() is None
    spend.add({"cost": 0.03, "tokens": None})
    assert spend.reached() == "the grid's budget is spent: cost 0.06 of 0.05"


def test_a_nan_infinite_or_negative_cost_is_unknown_never_a_pass_nor_a_refund() -> None:
    cancels: list[int] = []
    watch = BudgetWatch(CellBudget(max_cost=1.0), lambda: cancels.append(1))
    watch.on_update(usage(100, 0.5))
    for bad in (-5.0, math.nan, math.inf, -math.inf):
        watch.on_update(usage(100, bad))
        assert watch.cost == 0.5 and watch.exceeded is None  # the last cost known stands
    assert "ignored" in watch.usage()["note"] and "-5" in watch.usage()["note"]
    watch.on_update(usage(100, 1.5))
    assert watch.exceeded == {"limit": "max_cost", "value": 1.5, "max": 1.0} and cancels == [1]
    # A cost that was never known is not a pass either: a NaN the watch was handed trips the check.
    blind = BudgetWatch(CellBudget(max_cost=1.0), lambda: None)
    blind.cost = math.nan
    blind.check()
    assert blind.exceeded is not None and blind.exceeded["limit"] == "max_cost"


def test_grid_spend_never_goes_down_for_a_nan_or_negative_cost() -> None:
    spend = GridSpend({"cost": 0.05})
    spend.add({"cost": 0.04, "tokens": 100})
    for bad in (-1.0, math.nan, math.inf, -5):
        spend.add({"cost": bad, "tokens": -1000})
    assert spend.spent == {"cost": 0.04, "tokens": 100.0}
    assert len(spend.notes) == 8 and "cost of -1.0" in spend.notes[0]  # each count left out says so
    spend.add({"cost": 0.02})
    assert spend.reached() == "the grid's budget is spent: cost 0.06 of 0.05"


def journal_lines(folder: Path, cell: str) -> list[dict[str, Any]]:
    path = folder / "journals" / f"{cell}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def after_the_limit(lines: list[dict[str, Any]], passed: Any) -> list[str]:
    """The agent's own updates journaled after the first usage update that passed the limit."""
    first = next(
        i for i, line in enumerate(lines) if line["kind"] == "usage_update" and passed(line["usage"])
    )
    return [
        line["kind"]
        for line in lines[first + 1 :]
        if not line.get("raw", {}).get("synthesized") and line["kind"] != "turn_end"
    ]


@pytest.mark.parametrize(
    ("limit", "value", "config", "passed"),
    [
        ("max_tokens", 3000, {"model": "demo-smart"}, lambda u: u["used"] > 3000),
        ("max_cost", 0.015, {"model": "demo-fast"}, lambda u: u["cost"]["amount"] > 0.015),
    ],
)
def test_a_budget_stops_the_turn_within_one_update_and_sends_no_further_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, value: float, config: Any, passed: Any
) -> None:
    state = demo_env(monkeypatch, tmp_path / "demo-state")
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0.05")  # an agent that takes a moment per step, as real ones do
    df = anyio.run(
        lambda: run_grid(
            [["fix median in stats.py", "and now say hello"]],
            configs=[config],
            policy=ALLOW,
            template=TASK,
            folder=tmp_path,
            name="budget",
            config_dirs=[],
            progress=False,
            **{limit: value},
        )
    )
    assert len(df) == 1  # the second prompt was never sent
    row = df.iloc[0]
    assert row["cell_status"] == "finished" and row["stop_reason"] == "budget"
    assert row["budget_exceeded"] == limit and row["error"] is None
    lines = journal_lines(tmp_path / "budget", row["cell"])
    assert sum(line["kind"] == "user_message_chunk" for line in lines) == 1
    assert len(after_the_limit(lines, passed)) <= 1
    (end,) = [line["raw"] for line in lines if line["kind"] == "turn_end"]
    assert end["stopReason"] == "cancelled"  # the journal says what the agent did; the row says why
    record = json.loads((tmp_path / "budget" / "cells" / f"{row['cell']}.json").read_text())
    assert record["budget"]["limit"] == limit and record["budget"]["value"] > value
    assert agents_with(str(state)) == []


def test_max_seconds_stops_a_long_turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = demo_env(monkeypatch, tmp_path / "demo-state")
    df = anyio.run(
        lambda: run_grid(
            ["slow please"], max_seconds=0.5, folder=tmp_path, name="clock", config_dirs=[], progress=False
        )
    )
    row = df.iloc[0]
    assert row["stop_reason"] == "budget" and row["budget_exceeded"] == "max_seconds"
    assert row["cell_status"] == "finished" and "40." not in row["text"]  # the count never ended
    assert agents_with(str(state)) == []


def test_the_grids_budget_stops_new_cells_and_a_later_call_runs_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = demo_env(monkeypatch, tmp_path / "demo-state")

    recorder = Recorder()

    def grid(budget: dict[str, float]) -> Any:
        return anyio.run(
            lambda: run_grid(
                ["hello there"],
                repeats=4,
                concurrency=1,
                budget=budget,
                folder=tmp_path,
                name="spend",
                config_dirs=[],
                progress=recorder,
            )
        )

    df = grid({"cost": 0.03})  # each cell costs about 0.019
    assert recorder.seen[-1].not_run == 2 and format_counts(recorder.seen[-1]).count(
        "2 not run (budget spent)"
    )
    assert list(df["cell_status"]) == ["finished", "finished", "not_run", "not_run"]
    reason = df.iloc[2]["error"]
    assert reason.startswith("the grid's budget is spent: cost 0.0373") and reason.endswith("of 0.03")
    assert df["cell_cost"].iloc[:2].sum() >= 0.03 and df["cell_cost"].iloc[2:].isna().all()
    listed = json.loads((tmp_path / "spend" / "not_run.json").read_text())
    assert listed["cells"] == ["p0-demo-c0-r2", "p0-demo-c0-r3"]
    pd.testing.assert_frame_equal(silo_nb.frame(tmp_path / "spend"), df)  # the folder says it too
    again = grid({"cost": 1.0})  # the two done cells count against it too
    assert list(again["cell_status"]) == ["finished"] * 4
    assert not (tmp_path / "spend" / "not_run.json").exists()
    assert agents_with(str(state)) == []
