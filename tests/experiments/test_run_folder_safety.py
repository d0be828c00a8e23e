"""Issue 21, lower-harm items for ``run_grid``: a run's folder is private and this user's alone, a run is
run by one ``run_grid`` at a time, a crash's cause reaches the ``error`` column whole, and the temporary
folders of a grid killed with ``kill -9`` are swept by the next run.

Real demo-agent subprocesses (and ``tests/agents/raw_agent.py crash-mid-turn``) as in ``test_grid.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from silo_nb.experiments import run_grid
from tests.conftest import OTHER_USER, ROOT, make_other_user, raw_agent


@pytest.fixture
def quiet_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SILO_NB_DEMO_STATE_DIR", str(tmp_path / "demo-state"))
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0")
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)
    return tmp_path


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_run_folder_is_private_whatever_the_umask(quiet_demo: Path, open_umask: None) -> None:
    """Before: files 0666 and folders 0777 under umask 000 — another user could forge a cell's result."""
    anyio.run(
        lambda: run_grid(
            ["hello there"], name="r", folder=quiet_demo / "runs", config_dirs=[], progress=False
        )
    )
    run = quiet_demo / "runs" / "r"
    for path in (run, run / "journals", run / "cells"):
        assert mode(path) == 0o700, path
    for path in (run / "run.json", *run.glob("*/*")):
        if path.is_file():
            assert mode(path) == 0o600, path


def test_a_run_folder_others_may_write_is_refused_in_one_line(quiet_demo: Path) -> None:
    run = quiet_demo / "runs" / "shared"
    run.mkdir(parents=True)
    os.chmod(run, 0o777)
    with pytest.raises(PermissionError, match="writable by other users") as caught:
        anyio.run(
            lambda: run_grid(
                ["hello there"], name="shared", folder=quiet_demo / "runs", config_dirs=[], progress=False
            )
        )
    assert "\n" not in str(caught.value) and "chmod 700" in str(caught.value)
    assert list(run.iterdir()) == []


def test_another_user_can_neither_forge_a_result_nor_lend_a_run_folder(
    quiet_demo: Path, open_umask: None
) -> None:
    """Through a real second account (root only: CI runs as root; without root the modes above stand
    alone). Before, under umask 000, that user could write a cell's result into our run folder; and a run
    folder that user made was used."""
    other = make_other_user()  # skips without root
    base = Path(tempfile.mkdtemp(prefix="silo-nb-shared-runs-"))  # under /tmp: any user may reach it
    try:
        os.chmod(base, 0o755)  # only silo_nb's own modes stand between that user and the run
        anyio.run(lambda: run_grid(["hello there"], name="r", folder=base, config_dirs=[], progress=False))
        target = base / "r" / "cells" / "forged.json"
        result = subprocess.run(
            ["/bin/sh", "-c", f"echo forged > {target}"],
            user=OTHER_USER,
            capture_output=True,
            text=True,
            check=False,
        )
        assert "Permission denied" in result.stderr and not target.exists()
        lent = base / "lent"
        lent.mkdir(mode=0o700)
        os.chown(lent, other.pw_uid, other.pw_gid)
        with pytest.raises(PermissionError, match="belongs to another user") as caught:
            anyio.run(
                lambda: run_grid(["hello there"], name="lent", folder=base, config_dirs=[], progress=False)
            )
        assert "\n" not in str(caught.value)
        assert list(lent.iterdir()) == []
    finally:
        shutil.rmtree(base)


def test_two_run_grid_calls_on_one_run_never_run_a_cell_twice(quiet_demo: Path) -> None:
    """Before: both calls ran every cell (each found no done record yet)."""
    os.environ["SILO_NB_DEMO_DELAY"] = "0.02"
    outcomes: list[Any] = []

    async def both() -> None:
        async def one() -> None:
            try:
                outcomes.append(
                    await run_grid(
                        ["hello there", "plan the release"],
                        repeats=2,
                        name="twice",
                        folder=quiet_demo / "runs",
                        config_dirs=[],
                        progress=False,
                    )
                )
            except RuntimeError as exc:
                outcomes.append(exc)

        async with anyio.create_task_group() as group:
            group.start_soon(one)
            group.start_soon(one)

    anyio.run(both)
    errors = [o for o in outcomes if isinstance(o, RuntimeError)]
    assert len(errors) == 1 and "is being run by another run_grid" in str(errors[0])
    journals = sorted((quiet_demo / "runs" / "twice" / "journals").glob("*.jsonl"))
    assert len(journals) == 4
    for journal in journals:
        prompts = [
            line
            for line in journal.read_text().splitlines()
            if json.loads(line)["kind"] == "user_message_chunk"
        ]
        assert len(prompts) == 1, journal.name  # sent once, by one of the two calls


def test_a_crash_cause_reaches_the_error_column_whole(quiet_demo: Path) -> None:
    """Before: ``agent exited with code 1:`` and nothing after (the cause was on the next lines)."""
    config = quiet_demo / "config"
    (config / "silo").mkdir(parents=True)
    profile = raw_agent("crash-mid-turn")
    (config / "silo" / "profiles.json").write_text(json.dumps({"profiles": [profile]}))
    df = anyio.run(
        lambda: run_grid(
            ["go"],
            profiles=[profile["id"]],
            name="crash",
            folder=quiet_demo / "runs",
            config_dirs=[config],
            progress=False,
        )
    )
    error = df.iloc[0]["error"]
    assert "exited with code 1" in error and "fatal: the model backend went away" in error
    assert "\n" not in error


KILLED = """
import anyio, os, sys, silo_nb
async def main():
    await silo_nb.run_grid(["slow please"], name="killed", folder=sys.argv[1], config_dirs=[],
                           progress=False, timeout=60)
anyio.run(main)
"""


def grid_folders() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("silo-grid-*")}


def kill_9_then_run_again(runs: Path, script: str, *args: str, when: Any, waiting_for: str) -> None:
    """Run ``script`` (a grid) in a child, SIGKILL it once ``when()`` holds, check it left a cell folder,
    run another grid in ``runs``, and check that one swept what the killed one left."""
    before = grid_folders()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), str(runs), *args], env=env)
    try:
        deadline = time.monotonic() + 60

        def own() -> set[str]:  # the child's own folders: other xdist workers' grids come and go meanwhile
            return {name for name in grid_folders() - before if name.startswith(f"silo-grid-{child.pid}-")}

        while not (when(before) and own()):
            assert child.poll() is None and time.monotonic() < deadline, waiting_for
            time.sleep(0.05)
        # What it leaves, seen before the kill: once its pid is dead, another xdist worker's grid may sweep
        # them first (a full run did), which is what is tested — swept by the next run, whoever runs it.
        left = own()
        child.send_signal(signal.SIGKILL)  # the kernel dies: no finally, no cleanup of its own
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
    assert left, "the killed run left its cell's folder (what the next run must sweep)"
    anyio.run(lambda: run_grid(["hello there"], name="next", folder=runs, config_dirs=[], progress=False))
    assert not (grid_folders() - before) & left


def test_temporary_folders_of_a_grid_killed_with_kill_9_are_swept_by_the_next_run(quiet_demo: Path) -> None:
    kill_9_then_run_again(
        quiet_demo / "runs",
        KILLED,
        when=lambda before: grid_folders() - before,
        waiting_for="no cell started",
    )


KILLED_WHILE_SCORING = """
import anyio, pathlib, sys, time, silo_nb
def slow_scorer(run):
    pathlib.Path(sys.argv[2]).write_text("scoring")
    time.sleep(60)
    return 1.0
async def main():
    await silo_nb.run_grid(["hello"], name="scored", folder=sys.argv[1], config_dirs=[], progress=False,
                           timeout=60, scorers={"slow": slow_scorer}, score_timeout=90)
anyio.run(main)
"""


def test_a_grid_killed_while_scoring_leaves_nothing_the_next_run_does_not_sweep(
    quiet_demo: Path, tmp_path: Path
) -> None:
    """What the killed grid was scoring in goes with its cell's folder (a scoring folder apart leaked)."""
    marker = tmp_path / "scoring"
    kill_9_then_run_again(
        quiet_demo / "runs",
        KILLED_WHILE_SCORING,
        str(marker),
        when=lambda _before: marker.exists(),
        waiting_for="the scorer never ran",
    )
