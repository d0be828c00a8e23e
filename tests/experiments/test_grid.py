"""``run_grid`` on real demo-agent subprocesses: rows that match the journals, resume after a kill, Dask."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pandas as pd
import pytest

import silo_nb
from silo_nb.experiments import run_grid
from tests.experiments.grid_checks import Recorder, agents_with, recount

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = ["hello there", "please edit notes.md", "plan the release"]
CONFIGS = [{"mode": "ask", "model": "demo-fast"}, {"mode": "code", "model": "demo-smart"}]
POLICY = silo_nb.PermissionPolicy("allow read", "allow edit inside", "reject edit outside")
COMPARED = [
    "cell",
    "variant",
    "prompt",
    "stop_reason",
    "updates",
    "tool_calls",
    "permissions_allowed",
    "tokens_used",
]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A private demo state folder (also the marker that finds this module's agent processes)."""
    root = tmp_path_factory.mktemp("grid")
    saved = {
        k: os.environ.get(k) for k in ("SILO_NB_DEMO_STATE_DIR", "SILO_NB_DEMO_DELAY", "SILO_NB_PROFILES")
    }
    os.environ.update(SILO_NB_DEMO_STATE_DIR=str(root / "demo-state"), SILO_NB_DEMO_DELAY="0")
    os.environ.pop("SILO_NB_PROFILES", None)
    yield root
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def grid(folder: Path, **options: Any) -> Any:
    options = {
        "configs": CONFIGS,
        "repeats": 3,
        "concurrency": 4,
        "policy": POLICY,
        "timeout": 60.0,
        **options,
    }
    return anyio.run(lambda: run_grid(PROMPTS, folder=folder, config_dirs=[], **options))


@pytest.fixture(scope="module")
def local_run(env: Path) -> tuple[Any, Recorder]:
    recorder = Recorder()
    return grid(env / "runs", name="local", progress=recorder), recorder


def test_grid_of_18_cells_matches_its_journals(env: Path, local_run: tuple[Any, Recorder]) -> None:
    df, recorder = local_run
    assert len(df) == 18 and df["cell"].is_unique
    assert (df["cell_status"] == "finished").all() and df["error"].isna().all()
    assert max(counts.running for counts in recorder.seen) == 4  # the concurrency limit, reached and kept
    assert recorder.seen[-1].done == 18 and recorder.seen[-1].failed == 0
    assert sorted(df.groupby(["prompt", "variant"]).size()) == [3] * 6
    assert set(df["mode"]) == {"ask", "code"} and set(df["model"]) == {"demo-fast", "demo-smart"}
    folder = Path(df.attrs["run_folder"])
    for row in df.itertuples():
        expected = recount(folder / "journals" / f"{row.cell}.jsonl")
        assert {k: getattr(row, k) for k in expected} == expected, row.cell
    edits = df[df["prompt"] == "please edit notes.md"]
    assert (edits["permissions_allowed"] == 1).all() and (edits["tool_status_completed"] == 2).all()
    # The frame of the run's folder is the same table, rebuilt from the files alone.
    pd.testing.assert_frame_equal(silo_nb.frame(folder), df)
    assert agents_with(str(env / "demo-state")) == []


def test_a_second_call_skips_finished_cells_and_a_different_grid_is_refused(
    env: Path, local_run: tuple[Any, Recorder]
) -> None:
    recorder = Recorder()
    again = grid(env / "runs", name="local", progress=recorder)
    assert recorder.seen[0].skipped == 18 and max(c.running for c in recorder.seen) == 0
    pd.testing.assert_frame_equal(again, local_run[0])
    with pytest.raises(ValueError, match="was started with a different grid"):
        grid(env / "runs", name="local", repeats=2)


def test_bad_arguments_say_what_to_give(env: Path) -> None:
    for options, message in [
        ({"repeats": 0}, "repeats=0"),
        ({"concurrency": 0}, "concurrency=0"),
        ({"timeout": -1}, "timeout=-1"),
        ({"configs": {"mode": "ask"}}, "configs= takes a non-empty list of dicts"),
        ({"profiles": ["ghost"]}, "Unknown profile 'ghost' — known profiles: demo"),
        ({"name": "../up"}, "use letters, digits"),
        ({"template": env / "nope"}, "is not a folder"),
    ]:
        with pytest.raises(ValueError, match=message):
            grid(env / "bad", **options)
    with pytest.raises(ValueError, match="non-empty list of prompts"):
        anyio.run(lambda: run_grid("hello", folder=env / "bad"))


def test_a_cell_over_its_timeout_fails_alone_and_leaves_no_agent(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = tmp_path / "template"
    template.mkdir()
    (template / "notes.md").write_text("# Notes\n")
    # The slow turn takes 40 s, so a timeout that leaves a loaded machine ample time to connect still cuts it.
    monkeypatch.setenv("SILO_NB_DEMO_SLOW_PAUSE", "1")
    df = anyio.run(
        lambda: run_grid(
            ["slow please", "hello"],
            timeout=8,
            folder=tmp_path,
            template=template,
            config_dirs=[],
            progress=False,
        )
    )
    slow, quick = df.iloc[0], df.iloc[1]
    assert slow["cell_status"] == "failed" and slow["error"] == "timed out after 8 s"
    assert slow["stop_reason"] == "cancelled" and 0 < slow["duration_s"] < 8
    assert quick["cell_status"] == "finished" and quick["stop_reason"] == "end_turn"
    assert agents_with(str(env / "demo-state")) == []


KILLED_RUN = """
import anyio, sys, silo_nb
async def main():
    await silo_nb.run_grid(
        {prompts!r}, configs={configs!r}, repeats=3, concurrency=4,
        policy=silo_nb.PermissionPolicy("allow *"),
        name="killed", folder=sys.argv[1], config_dirs=[], progress=False,
    )
anyio.run(main)
"""


def test_killed_mid_run_then_rerun_finishes_only_the_missing_cells(env: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(KILLED_RUN.format(prompts=PROMPTS, configs=CONFIGS))
    child_env = {**os.environ, "PYTHONPATH": str(ROOT), "SILO_NB_DEMO_DELAY": "0.05"}
    child = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], env=child_env, cwd=tmp_path)
    records = tmp_path / "killed" / "cells"
    try:
        deadline = time.monotonic() + 60
        while len(list(records.glob("*.json"))) < 4:
            assert child.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "no cell finished within 60 s"
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)  # the kernel dies: no finally, no cleanup of its own
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
    before = {path.name: path.read_bytes() for path in records.glob("*.json")}
    assert 4 <= len(before) < 18
    # Every agent of the killed run goes (its supervisor sees the lifeline close).
    deadline = time.monotonic() + 15
    while agents_with(str(env / "demo-state")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert agents_with(str(env / "demo-state")) == []
    recorder = Recorder()
    df = grid(tmp_path, name="killed", progress=recorder, policy=silo_nb.PermissionPolicy("allow *"))
    assert recorder.seen[0].skipped == len(before)
    assert recorder.seen[-1].done == 18 and recorder.seen[-1].failed == 0
    assert {path.name: path.read_bytes() for path in records.glob("*.json") if path.name in before} == before
    assert len(df) == 18 and df["cell"].is_unique and (df["cell_status"] == "finished").all()
    for row in df.itertuples():
        expected = recount(tmp_path / "killed" / "journals" / f"{row.cell}.jsonl")
        assert {k: getattr(row, k) for k in expected} == expected, row.cell


def test_the_same_grid_on_a_dask_local_cluster_gives_the_same_rows(
    env: Path, local_run: tuple[Any, Recorder]
) -> None:
    distributed = pytest.importorskip("distributed")  # the test extra installs it; CI never skips
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=2,
            processes=True,
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        worker_pids = set(client.run(os.getpid).values())
        df = grid(env / "runs", name="on-dask", executor=client, progress=False)
    folder = Path(df.attrs["run_folder"])
    records = [silo_nb.frame(folder)]  # written by the notebook side, under the run's folder
    assert len(records[0]) == 18
    ran_on = {int(line.split('"pid": ')[1].split(",")[0]) for line in _records(folder)}
    assert ran_on <= worker_pids and len(ran_on) == 2  # every cell ran on a worker, on both workers
    local = local_run[0][COMPARED].sort_values("cell").reset_index(drop=True)
    on_dask = df[COMPARED].sort_values("cell").reset_index(drop=True)
    pd.testing.assert_frame_equal(on_dask, local)
    assert agents_with(str(env / "demo-state")) == []


def _records(folder: Path) -> list[str]:
    return [" ".join(path.read_text().split()) for path in sorted((folder / "cells").glob("*.json"))]
