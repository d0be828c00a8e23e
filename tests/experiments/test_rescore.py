"""rescore: a finished run scored again from its folder; no agent is asked (their own state says so)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.experiments import command_scorer, rescore, run_grid
from tests.experiments.grid_checks import FIX_PROMPTS, MODELS, TASK, agents_with, check_argv, demo_env

ALLOW = silo_nb.PermissionPolicy("allow *")


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def grid(tmp_path: Path, **options: Any) -> Any:
    return anyio.run(
        lambda: run_grid(
            FIX_PROMPTS[:2],
            configs=MODELS,
            policy=ALLOW,
            template=options.pop("template", TASK),
            folder=tmp_path / "runs",
            name=options.pop("name", "first"),
            config_dirs=[],
            progress=False,
            **options,
        )
    )


def rescored(folder: Path, scorers: dict[str, Any], state: Path, **options: Any) -> tuple[Any, list[int]]:
    """``rescore``, watching the process table for demo agents of this test the whole time."""
    seen: list[int] = []

    async def main() -> Any:
        async def watch() -> None:
            while True:
                seen.extend(agents_with(str(state)))
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            table = await rescore(folder, scorers, **options)
            group.cancel_scope.cancel()
        return table

    return anyio.run(main), seen


def test_rescore_scores_a_finished_run_again_and_calls_no_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = demo_env(monkeypatch, tmp_path / "demo-state")
    df = grid(tmp_path, scorers={"done": lambda run: "done" in run.final_text})
    folder = Path(df.attrs["run_folder"])
    assert "score.tests" not in df.columns
    agent_state = snapshot(state)  # every session the demo agent ever made is a file here
    journals = snapshot(folder / "journals")
    table, seen = rescored(
        folder, {"tests": command_scorer(check_argv), "lines": lambda r: r.lines_added}, state
    )
    assert seen == [] and agents_with(str(state)) == []  # no agent process, at any moment
    assert snapshot(state) == agent_state and snapshot(folder / "journals") == journals
    assert dict(zip(table["cell"], table["score.tests"], strict=True)) == {
        "p0-demo-c0-r0": True,  # mean: both models get it right
        "p0-demo-c1-r0": True,
        "p1-demo-c0-r0": False,  # median: only the smart model does
        "p1-demo-c1-r0": True,
    }
    assert table["score.done"].all()  # the run's own score is kept beside the new ones
    assert list(table["score.lines"]) == list(table["lines_added"].astype(float))
    pd_equal = silo_nb.frame(folder)
    assert pd_equal["score.tests"].tolist() == table["score.tests"].tolist()
    # replace=True drops the scores it was not given.
    table, _ = rescored(folder, {"tests": command_scorer(check_argv)}, state, replace=True)
    assert "score.done" not in table.columns and "score.lines" not in table.columns


def test_a_lost_template_falls_back_to_kept_copies_or_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = demo_env(monkeypatch, tmp_path / "demo-state")
    template = tmp_path / "template"
    shutil.copytree(TASK, template)
    kept = grid(tmp_path, template=template, name="kept", keep_workdirs=True)
    plain = grid(tmp_path, template=template, name="plain")
    kept_folder, plain_folder = Path(kept.attrs["run_folder"]), Path(plain.attrs["run_folder"])
    assert sorted(p.name for p in (kept_folder / "workdirs").iterdir()) == sorted(kept["cell"])
    assert (kept_folder / "workdirs" / "p1-demo-c1-r0" / "stats.py").read_text().count("sorted(values)") == 1
    shutil.rmtree(template)
    table, _ = rescored(kept_folder, {"tests": command_scorer(check_argv)}, state)
    assert table["score_error"].isna().all() and table["score.tests"].notna().all()
    table, _ = rescored(plain_folder, {"tests": command_scorer(check_argv)}, state)
    assert table["score.tests"].isna().all()
    assert set(table["score_error"]) == {
        f"tests: the working copy could not be rebuilt: the template {str(template)!r} is gone"
    }


def test_rescore_says_what_it_needs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a run folder"):
        anyio.run(lambda: rescore(tmp_path, {"x": lambda run: 1}))
    with pytest.raises(ValueError, match="needs at least one scorer"):
        anyio.run(lambda: rescore(tmp_path, {}))
