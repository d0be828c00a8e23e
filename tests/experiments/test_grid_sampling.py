"""A sampling run (``silo_sample`` / ``$SILO_NB_SAMPLE``) of a named ``run_grid`` asks the agent again
instead of skipping the cells an earlier process finished, and keeps that earlier run whole beside it
(issue 34, item 3). Another process is a real subprocess, as a second papermill run is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from silo_nb.cli.demo_notebook import agent_prompts
from silo_nb.experiments import run_grid
from silo_nb.experiments.run_folder import set_aside
from silo_nb.sessions.sampling import SAMPLE_ENV

GRID = textwrap.dedent(
    """
    import sys, anyio
    from silo_nb.experiments import run_grid
    anyio.run(lambda: run_grid(["hello there"], name="r", folder=sys.argv[1], config_dirs=[], progress=False))
    """
)


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SILO_NB_DEMO_STATE_DIR", str(tmp_path / "demo-state"))
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0")
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)
    monkeypatch.delenv(SAMPLE_ENV, raising=False)
    return tmp_path


def grid_here(runs: Path) -> None:
    anyio.run(lambda: run_grid(["hello there"], name="r", folder=runs, config_dirs=[], progress=False))


def grid_in_another_process(runs: Path, **env: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", GRID, str(runs)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_a_sampling_run_asks_again_and_keeps_the_earlier_run(demo: Path) -> None:
    runs = demo / "runs"
    grid_in_another_process(runs)
    grid_in_another_process(runs)  # not sampling: the earlier run is resumed, nothing asked
    assert len(agent_prompts(demo / "demo-state")) == 1
    grid_in_another_process(runs, **{SAMPLE_ENV: "1"})
    assert len(agent_prompts(demo / "demo-state")) == 2  # before: 1, the done cell skipped
    assert sorted(p.name for p in runs.iterdir()) == ["r", "r.1"]
    assert json.loads((runs / "r.1" / "run.json").read_text())["name"] == "r.1"
    assert (runs / "r.1" / "cells" / "p0-demo-c0-r0.json").is_file()  # the earlier sample, whole


def test_a_sampling_process_resumes_its_own_run(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The notebook's "same run, resumed" cell in one sampling kernel still only does what is missing."""
    monkeypatch.setenv(SAMPLE_ENV, "1")
    grid_here(demo / "runs")
    grid_here(demo / "runs")
    assert len(agent_prompts(demo / "demo-state")) == 1
    assert [p.name for p in (demo / "runs").iterdir()] == ["r"]


def test_a_run_being_run_elsewhere_is_not_set_aside(demo: Path) -> None:
    grid_in_another_process(demo / "runs")
    run = demo / "runs" / "r"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); fcntl.lockf(fd, fcntl.LOCK_EX); "
            "print('held', flush=True); sys.stdin.read()",
            str(run / ".run.lock"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RuntimeError, match="is being run by another run_grid — wait for it"):
            set_aside(run, "r")
        assert sorted(p.name for p in run.parent.iterdir()) == ["r"]
    finally:
        holder.communicate("", timeout=30)


def test_a_bad_sampling_value_is_one_line_and_makes_nothing(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SAMPLE_ENV, "maybe")
    with pytest.raises(ValueError, match="SILO_NB_SAMPLE='maybe' is neither on nor off"):
        grid_here(demo / "runs")
    assert not (demo / "runs").exists()
