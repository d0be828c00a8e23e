"""``run_grid(executor=)``: a user's own ``CellExecutor`` is used as written; other objects are refused."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import anyio
import pandas as pd
import pytest

import silo_nb
from silo_nb.acp.supervisor import process_table
from silo_nb.experiments import (
    CellExecutor,
    CellResult,
    CellSpec,
    DaskExecutor,
    LocalExecutor,
    expand_grid,
    run_cell_blocking,
    run_grid,
)
from silo_nb.experiments.executors import WORKER_DIED_TWICE, executor_for
from silo_nb.experiments.progress import format_counts
from tests.experiments.grid_checks import Recorder, agents_with

PROMPTS = ["hello there", "plan the release"]
CONFIGS = [{"model": "demo-fast"}, {"model": "demo-smart"}]


@pytest.fixture
def demo_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private demo state folder (also the marker that finds this test's agent processes)."""
    state = tmp_path / "demo-state"
    monkeypatch.setenv("SILO_NB_DEMO_STATE_DIR", str(state))
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0")
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)
    return state


class ThreadPoolExecutor:
    """A user's executor: each cell on a fresh loop in a worker thread of asyncio's default pool."""

    label = "threads"

    def __init__(self) -> None:
        self.specs: list[CellSpec] = []
        self.threads: set[int] = set()

    async def run(self, spec: CellSpec) -> CellResult:
        self.specs.append(spec)
        return await asyncio.to_thread(self._in_thread, spec)

    def _in_thread(self, spec: CellSpec) -> CellResult:
        self.threads.add(threading.get_ident())
        return run_cell_blocking(spec)


class Broken:
    """Delegates to LocalExecutor, except for the cells it was told to raise on or to answer wrongly."""

    label = "broken"

    def __init__(self, raise_on: str, garbage_on: str) -> None:
        self.raise_on, self.garbage_on = raise_on, garbage_on
        self.seen: list[str] = []

    async def run(self, spec: CellSpec) -> Any:
        self.seen.append(spec.cell)
        if spec.cell == self.raise_on:
            raise ConnectionError("worker lost\nsecond line")
        if spec.cell == self.garbage_on:
            return {"status": "finished"}
        return await LocalExecutor().run(spec)


def test_a_users_thread_pool_executor_runs_every_cell_and_names_the_results(
    tmp_path: Path, demo_state: Path
) -> None:
    executor = ThreadPoolExecutor()
    recorder = Recorder()
    df = anyio.run(
        lambda: run_grid(
            PROMPTS,
            configs=CONFIGS,
            concurrency=2,
            timeout=60.0,
            folder=tmp_path / "runs",
            name="pool-run",
            executor=executor,
            progress=recorder,
            config_dirs=[],
        )
    )
    expected = [cell["cell"] for cell in expand_grid(PROMPTS, profiles=["demo"], configs=CONFIGS, repeats=1)]
    assert sorted(spec.cell for spec in executor.specs) == sorted(expected)  # its run, once per cell
    assert threading.get_ident() not in executor.threads  # the cells really ran off the loop's thread
    assert list(df["cell"]) == expected and (df["cell_status"] == "finished").all()
    assert set(df["stop_reason"]) == {"end_turn"} and set(df["model"]) == {"demo-fast", "demo-smart"}
    assert (df["executor"] == "threads").all()
    assert {counts.executor for counts in recorder.seen} == {"threads"}
    assert format_counts(recorder.seen[-1]).startswith("pool-run on threads: 4/4 done")
    folder = Path(df.attrs["run_folder"])
    for cell in expected:
        assert json.loads((folder / "cells" / f"{cell}.json").read_text())["executor"] == "threads"
    pd.testing.assert_frame_equal(silo_nb.frame(folder), df)  # the column is rebuilt from the folder
    assert agents_with(str(demo_state)) == []


def test_a_failing_or_wrong_executor_fails_its_own_cells_only(tmp_path: Path, demo_state: Path) -> None:
    cells = [cell["cell"] for cell in expand_grid(PROMPTS, profiles=["demo"], configs=CONFIGS, repeats=1)]
    executor = Broken(raise_on=cells[0], garbage_on=cells[1])
    df = anyio.run(
        lambda: run_grid(
            PROMPTS,
            configs=CONFIGS,
            folder=tmp_path,
            executor=executor,
            progress=False,
            config_dirs=[],
        )
    )
    assert sorted(executor.seen) == sorted(cells)
    status = dict(zip(df["cell"], df["cell_status"], strict=True))
    errors = dict(zip(df["cell"], df["error"], strict=True))
    assert status == {cells[0]: "failed", cells[1]: "failed", cells[2]: "finished", cells[3]: "finished"}
    assert errors[cells[0]] == "ConnectionError: worker lost | second line"  # every line, on one
    assert errors[cells[1]] == "TypeError: broken: run() gave dict, not a CellResult"
    assert (df["executor"] == "broken").all()
    assert agents_with(str(demo_state)) == []


class Waiting:
    """An executor whose cells never end by themselves: it records how each was stopped."""

    label = "waiting"

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.started = 0
        self.all_started = anyio.Event()
        self.cancelled: list[str] = []

    async def run(self, spec: CellSpec) -> CellResult:
        self.started += 1
        if self.started == self.expected:
            self.all_started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(spec.cell)
            raise
        raise AssertionError("unreachable")


def test_cancelling_the_grid_cancels_a_users_executor_and_records_nothing(tmp_path: Path) -> None:
    executor = Waiting(expected=2)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: run_grid(PROMPTS, folder=tmp_path, name="stopped", executor=executor, progress=False)
            )
            await executor.all_started.wait()
            group.cancel_scope.cancel()  # the stop button

    anyio.run(main)
    assert sorted(executor.cancelled) == ["p0-demo-c0-r0", "p1-demo-c0-r0"]
    assert not list((tmp_path / "stopped").glob("cells/*.json"))  # both cells will run again next time


class SyncRun:
    label = "sync"

    def run(self, spec: CellSpec) -> CellResult:
        return CellResult(spec.cell)


class NumberLabel:
    label = 7

    async def run(self, spec: CellSpec) -> CellResult:
        return CellResult(spec.cell)


@pytest.mark.parametrize(
    ("given", "says"),
    [
        (42, "— not int."),
        ("tcp://scheduler:8786", "— not str."),
        (SyncRun(), "— SyncRun has both, but its `run` is not async."),
        (NumberLabel(), "— NumberLabel has both, but its `label` is not a str."),
        (LocalExecutor, "— not the class LocalExecutor; pass an instance, e.g. LocalExecutor()."),
    ],
)
def test_anything_else_is_one_line_that_says_what_executor_takes(
    given: Any, says: str, tmp_path: Path
) -> None:
    with pytest.raises(TypeError) as caught:
        executor_for(given)
    message = str(caught.value)
    assert message.startswith(
        "executor= takes None (this loop), a dask.distributed.Client, or a CellExecutor"
    )
    assert message.endswith(says) and "\n" not in message
    # Through run_grid too, before anything is written.
    with pytest.raises(TypeError, match="executor= takes None"):
        anyio.run(lambda: run_grid(PROMPTS, folder=tmp_path, name="bad", executor=given, progress=False))
    assert not (tmp_path / "bad").exists()


class FakeClient:
    """Enough of a dask.distributed.Client for the dispatch: a callable submit and a scheduler address."""

    def submit(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("not called by the dispatch")

    def scheduler_info(self) -> dict[str, Any]:
        return {"address": "tcp://10.0.0.5:8786"}


class OwnWithSubmit(ThreadPoolExecutor):
    """A user's executor that also happens to have a ``submit``: the protocol wins."""

    def submit(self, *args: Any) -> None:
        raise AssertionError("not a Dask client")


def test_none_a_dask_client_and_the_protocol_each_go_where_they_belong() -> None:
    assert isinstance(executor_for(None), LocalExecutor)
    local, own, both = LocalExecutor(), ThreadPoolExecutor(), OwnWithSubmit()
    assert executor_for(local) is local and executor_for(own) is own and executor_for(both) is both
    assert all(isinstance(e, CellExecutor) for e in (local, own, both))
    client = FakeClient()
    dask = executor_for(client)
    assert isinstance(dask, DaskExecutor) and dask.client is client
    assert dask.label == "dask tcp://10.0.0.5:8786"
    assert executor_for(dask) is dask  # an executor made beforehand is used as it is


def worker_of(pid: int) -> int | None:
    """The ancestor of ``pid`` that this process started: a LocalCluster's worker process."""
    parents = {p: ppid for p, _state, ppid, _pgrp in process_table() or []}
    while pid in parents:
        if parents[pid] == os.getpid():
            return pid
        pid = parents[pid]
    return None


async def kill_the_worker_of(cell: str, state: Path, times: int, killed: list[int]) -> None:
    """SIGKILL the Dask worker whose agent works on ``cell``, once per attempt, ``times`` times."""
    while len(killed) < times:
        for agent in agents_with(str(state)):
            try:
                cwd = os.readlink(f"/proc/{agent}/cwd")
            except OSError:
                continue
            # The cell's folder: silo-grid-<pid>-<cell>-…/work (grid_cell.run_cell).
            worker = worker_of(agent) if "/silo-grid-" in cwd and f"-{cell}-" in cwd else None
            if worker is not None and worker not in killed:
                os.kill(worker, signal.SIGKILL)
                killed.append(worker)
        await anyio.sleep(0.02)


def test_a_dask_worker_killed_mid_cell_is_retried_once_then_reported(
    tmp_path: Path, demo_state: Path
) -> None:
    distributed = pytest.importorskip("distributed")  # the test extra installs it; CI never skips
    prompts = ["slow please", "hello there"]
    killed_cell = "p0-demo-c0-r0"

    def grid(client: Any, name: str, times: int, killed: list[int]) -> Any:
        async def main() -> Any:
            async with anyio.create_task_group() as group:
                group.start_soon(kill_the_worker_of, killed_cell, demo_state, times, killed)
                df = await run_grid(
                    prompts,
                    folder=tmp_path,
                    name=name,
                    executor=client,
                    progress=False,
                    timeout=60,
                    scorers={"pid": lambda run: os.getpid()},  # where the scorer ran
                )
                group.cancel_scope.cancel()
            return df

        return anyio.run(main)

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
        once: list[int] = []
        df = grid(client, "killed-once", 1, once)
        twice: list[int] = []
        failed = grid(client, "killed-twice", 2, twice)
    assert len(once) == 1 and len(twice) == 2
    # Killed once: the cell ran again on another worker; one row each, nothing counted twice.
    assert list(df["cell"]) == [killed_cell, "p1-demo-c0-r0"] and (df["cell_status"] == "finished").all()
    record = json.loads((tmp_path / "killed-once" / "cells" / f"{killed_cell}.json").read_text())
    assert record["attempts"] == 2 and record["pid"] != once[0] and record["status"] == "finished"
    assert df.iloc[0]["attempts"] == 2 and df.iloc[0]["stop_reason"] == "end_turn"
    for row in df.to_dict("records"):  # scored on the worker that ran the cell, not here
        ran_on = json.loads((tmp_path / "killed-once" / "cells" / f"{row['cell']}.json").read_text())["pid"]
        assert row["score.pid"] == ran_on != os.getpid()
    assert "Counting slowly: 1" in df.iloc[0]["text"]
    # Killed on both attempts: reported failed, not run a third time.
    row = failed[failed["cell"] == killed_cell].iloc[0]
    assert row["cell_status"] == "failed" and row["error"] == WORKER_DIED_TWICE and row["attempts"] == 3
    assert failed[failed["cell"] != killed_cell]["cell_status"].tolist() == ["finished"]
    assert len(list((tmp_path / "killed-twice" / "cells").glob("*.json"))) == 2
    assert agents_with(str(demo_state)) == []
