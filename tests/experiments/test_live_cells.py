"""Live grid cells (issue 33, item 5): a running cell of the real demo agent, attached to from this loop or
from a Dask worker's, answered and stopped through the channel; a finished cell shows its turn; bad input."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.experiments import AttachedCell, LocatedCell, locate_cell, run_grid
from silo_nb.model import AgentPermissionRequest, AgentSessionUpdate
from tests.experiments.grid_checks import agents_with

EDIT = "please edit notes.md"  # the demo agent asks before it edits
ONLY_READS = silo_nb.PermissionPolicy("allow read")  # no rule covers the edit: it goes to a viewer


@pytest.fixture
def demo_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "demo-state"
    monkeypatch.setenv("SILO_NB_DEMO_STATE_DIR", str(state))
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0")
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)
    return state


async def running_cell(folder: Path, name: str, out: dict[str, Any]) -> LocatedCell:
    """The run's first running cell, once it has one (bounded; the grid ending first fails the test)."""
    with anyio.fail_after(60):
        while True:
            assert "df" not in out, f"the grid ended before a viewer attached: {out['df'].to_dict('records')}"
            try:
                located = locate_cell(name, folder=folder)
            except LookupError:
                await anyio.sleep(0.02)
                continue
            if located.state == "running":
                return located


class Viewer:
    """What an attached viewer sees: the updates, the requests and the ending."""

    def __init__(self, link: AttachedCell) -> None:
        self.link = link
        self.updates: list[AgentSessionUpdate] = []
        self.requests: list[AgentPermissionRequest] = []
        self.ended: tuple[str, str | None] | None = None
        self.asked = anyio.Event()
        link.on_update = self.updates.append
        link.on_permission = self._asked
        link.on_end = lambda status, error: setattr(self, "ended", (status, error))

    def _asked(self, request: AgentPermissionRequest) -> None:
        self.requests.append(request)
        self.asked.set()


async def with_viewer(
    grid: Callable[[], Awaitable[Any]], folder: Path, name: str, act: Callable[[Viewer], Awaitable[None]]
) -> tuple[Any, Viewer]:
    """Run ``grid`` while a viewer attaches to its running cell and does ``act``."""
    out: dict[str, Any] = {}

    async def run() -> None:
        out["df"] = await grid()

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        located = await running_cell(folder, name, out)
        viewer = Viewer(await AttachedCell.connect(located))
        group.start_soon(viewer.link.pump)
        await act(viewer)
    return out["df"], viewer


def _text(update: AgentSessionUpdate) -> str:
    return update.text or (getattr(update.content, "text", None) or "")


async def allow(viewer: Viewer) -> None:
    with anyio.fail_after(60):
        await viewer.asked.wait()
    viewer.requests[0].respond("allow-once")  # what the Allow button's click calls


def test_a_viewer_answers_a_running_local_cells_permission(tmp_path: Path, demo_state: Path) -> None:
    """Two viewers see the request; the first answer wins and the other sees it answered."""
    others: list[Viewer] = []

    async def two_viewers(viewer: Viewer) -> None:
        with anyio.fail_after(60):
            await viewer.asked.wait()
        other = Viewer(await AttachedCell.connect(viewer.link.located))
        others.append(other)
        async with anyio.create_task_group() as group:
            group.start_soon(other.link.pump)
            with anyio.fail_after(60):
                await other.asked.wait()  # a request still waiting is sent to who attaches
            await allow(viewer)
            with anyio.fail_after(60):
                while not other.requests[0].answered:
                    await anyio.sleep(0.02)
            assert other.requests[0].answer == "allow-once"
            other.requests[0].respond("reject-once")  # too late: changes nothing
            other.link.close()

    async def main() -> tuple[Any, Viewer]:
        grid = lambda: run_grid(  # noqa: E731
            [EDIT],
            folder=tmp_path,
            name="local",
            policy=ONLY_READS,
            attach_wait=60,
            progress=False,
            timeout=60,
        )
        return await with_viewer(grid, tmp_path, "local", two_viewers)

    df, viewer = anyio.run(main)
    row = df.iloc[0]
    assert row["cell_status"] == "finished" and row["permissions_allowed"] == 1
    assert row["tool_status_completed"] == 2  # the read, then the edit the viewer allowed
    assert viewer.requests[0].title == "Edit notes.md"
    kinds = [u.kind for u in viewer.updates]
    assert "permission_request" in kinds and "permission_decision" in kinds
    assert viewer.ended is not None and viewer.ended[0] == "finished"
    assert not (tmp_path / "local" / "live").exists() or not list((tmp_path / "local" / "live").iterdir())
    # Attached after the end: the finished turn, from the run's folder.
    finished = locate_cell("local", "p0-demo-c0-r0", folder=tmp_path)
    assert finished.state == "finished" and any("Edited notes.md" in line for line in finished.lines)
    assert agents_with(str(demo_state)) == []


def test_stop_cancels_the_cells_turn_and_its_row_says_so(tmp_path: Path, demo_state: Path) -> None:
    async def stop(viewer: Viewer) -> None:
        with anyio.fail_after(60):  # once the agent has started counting
            while not any("Counting slowly" in _text(u) for u in viewer.updates):
                await anyio.sleep(0.02)
        viewer.link.stop()

    async def main() -> tuple[Any, Viewer]:
        grid = lambda: run_grid(  # noqa: E731
            [["slow please", "hello there"]], folder=tmp_path, name="stopped", progress=False, timeout=60
        )
        return await with_viewer(grid, tmp_path, "stopped", stop)

    df, viewer = anyio.run(main)
    row = df.iloc[0]
    assert row["cell_status"] == "failed" and "cancelled by the user" in row["error"]
    assert row["stop_reason"] == "cancelled"
    assert len(df) == 1  # one row per turn: the second prompt was not sent
    assert viewer.ended is not None and "cancelled by the user" in (viewer.ended[1] or "")


def test_unattended_the_policy_answers_after_attach_wait(tmp_path: Path, demo_state: Path) -> None:
    df = anyio.run(
        lambda: run_grid(
            [EDIT], folder=tmp_path, name="alone", policy=ONLY_READS, attach_wait=0.2, progress=False
        )
    )
    row = df.iloc[0]
    assert row["cell_status"] == "finished" and row["permissions_allowed"] == 0
    journal = (tmp_path / "alone" / "journals" / "p0-demo-c0-r0.jsonl").read_text()
    assert "no attached viewer answered; policy otherwise: cancel" in journal


def test_a_dask_cell_is_attached_to_and_answered(tmp_path: Path, demo_state: Path) -> None:
    distributed = pytest.importorskip("distributed")  # the test extra installs it; CI never skips

    with (
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):

        async def main() -> tuple[Any, Viewer]:
            grid = lambda: run_grid(  # noqa: E731
                [EDIT],
                folder=tmp_path,
                name="on-dask",
                policy=ONLY_READS,
                attach_wait=60,
                executor=client,
                progress=False,
                timeout=60,
            )
            return await with_viewer(grid, tmp_path, "on-dask", allow)

        df, viewer = anyio.run(main)
    row = df.iloc[0]
    assert row["cell_status"] == "finished" and row["permissions_allowed"] == 1
    assert row["tool_status_completed"] == 2
    assert viewer.ended is not None and viewer.ended[0] == "finished"


def test_unknown_runs_and_cells_are_named_in_one_line(tmp_path: Path, demo_state: Path) -> None:
    anyio.run(lambda: run_grid(["hello there"], folder=tmp_path, name="done", progress=False))
    with pytest.raises(LookupError, match=r"No run 'nope' in .* runs there: done") as caught:
        locate_cell("nope", folder=tmp_path)
    assert "\n" not in str(caught.value)
    with pytest.raises(LookupError, match=r"has no cell 'x' — its cells: p0-demo-c0-r0"):
        locate_cell("done", "x", folder=tmp_path)
    with pytest.raises(LookupError, match=r"No cell of 'done' is running — name one"):
        locate_cell("done", folder=tmp_path)
    with pytest.raises(ValueError, match="attach_wait"):
        anyio.run(lambda: run_grid(["hi"], folder=tmp_path, attach_wait=-1, progress=False))


def test_a_viewer_answers_the_cells_question_checked_against_its_form(
    tmp_path: Path, demo_state: Path
) -> None:
    async def answer(viewer: Viewer) -> None:
        asked: list[Any] = []
        viewer.link.on_question = asked.append
        with anyio.fail_after(60):
            while not asked:
                await anyio.sleep(0.02)
        (question,) = asked
        with pytest.raises(ValueError, match="confirm"):  # checked here, before anything is sent
            question.accept({"confirm": "maybe"})
        assert not question.answered
        question.accept({"confirm": True, "reason": "tidy"})

    async def main() -> tuple[Any, Viewer]:
        grid = lambda: run_grid(  # noqa: E731
            ["do the risky step"], folder=tmp_path, name="asked", attach_wait=60, progress=False, timeout=60
        )
        return await with_viewer(grid, tmp_path, "asked", answer)

    df, _viewer = anyio.run(main)
    assert "You said yes (tidy)" in df.iloc[0]["text"]


def test_a_viewer_that_leaves_leaves_the_cell_running_and_the_policy_answers(
    tmp_path: Path, demo_state: Path
) -> None:
    """Detached (after sending garbage, an unknown request and a second viewer's late answer), the cell
    goes on; the request falls back to the policy's ``otherwise``, saying nobody answered."""

    async def leave(viewer: Viewer) -> None:
        with anyio.fail_after(60):
            await viewer.asked.wait()
        second = await AttachedCell.connect(viewer.link.located)
        viewer.link.send({"t": "permission", "id": "silo-permission-99", "option": "allow-once"})
        viewer.link._writer.write(b"not json\n[1, 2]\n")
        await anyio.sleep(0.2)
        viewer.link.close()
        second.close()

    async def main() -> tuple[Any, Viewer]:
        grid = lambda: run_grid(  # noqa: E731
            [EDIT],
            folder=tmp_path,
            name="left",
            policy=ONLY_READS,
            attach_wait=0.5,
            progress=False,
            timeout=60,
        )
        return await with_viewer(grid, tmp_path, "left", leave)

    df, _viewer = anyio.run(main)
    row = df.iloc[0]
    assert row["cell_status"] == "finished" and row["permissions_allowed"] == 0
    journal = (tmp_path / "left" / "journals" / "p0-demo-c0-r0.jsonl").read_text()
    assert "no attached viewer answered; policy otherwise: cancel" in journal
    assert "Edited notes.md" not in row["text"]  # the edit never ran


def test_a_link_whose_process_is_gone_is_one_line(tmp_path: Path, demo_state: Path) -> None:
    """A cell killed with its link left behind: attach says so, instead of hanging or raising."""
    anyio.run(
        lambda: run_grid(["hello there"], folder=tmp_path, name="gone", progress=False, retry_failed=False)
    )
    record = tmp_path / "gone" / "cells" / "p0-demo-c0-r0.json"
    record.unlink()  # as if the cell had been killed before its record was written
    live = tmp_path / "gone" / "live"
    live.mkdir(exist_ok=True)
    link = {"socket": str(tmp_path / "no-such-socket"), "pid": os.getpid(), "host": socket.gethostname()}
    (live / "p0-demo-c0-r0.json").write_text(json.dumps(link))
    assert locate_cell("gone", folder=tmp_path).state == "running"  # its pid lives: this process's
    with pytest.raises(LookupError, match=r"has a link but its process is gone \(killed\?\) — run_grid"):
        anyio.run(lambda: silo_nb.attach_cell("gone", folder=tmp_path))
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    (live / "p0-demo-c0-r0.json").write_text(json.dumps({**link, "pid": int(dead.stdout)}))
    with pytest.raises(LookupError, match="No cell of 'gone' is running"):
        locate_cell("gone", folder=tmp_path)  # a dead link is not offered as the running cell
    with pytest.raises(LookupError, match=r"has a link but its process \(pid \d+\) is gone"):
        locate_cell("gone", "p0-demo-c0-r0", folder=tmp_path)
    (live / "p0-demo-c0-r0.json").write_text(json.dumps({**link, "host": "elsewhere.example"}))
    with pytest.raises(LookupError, match=r"runs on elsewhere\.example: attach works on the machine"):
        anyio.run(lambda: silo_nb.attach_cell("gone", folder=tmp_path))


def test_a_peer_gone_at_once_is_let_go_quietly(
    tmp_path: Path, demo_state: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process's stale-folder sweep probes a running cell's socket (connect, close): the cell lets
    it go at its first failed write — no "socket.send() raised exception." per journal line (which a
    kernel printed into a cell's output) — and goes on."""

    async def probe(viewer: Viewer) -> None:
        with anyio.fail_after(60):
            await viewer.asked.wait()
        for _ in range(3):
            with socket.socket(socket.AF_UNIX) as peer:
                peer.connect(viewer.link.located.socket)
            await anyio.sleep(0.1)
        await allow(viewer)

    async def main() -> tuple[Any, Viewer]:
        grid = lambda: run_grid(  # noqa: E731
            [EDIT],
            folder=tmp_path,
            name="probed",
            policy=ONLY_READS,
            attach_wait=30,
            progress=False,
            timeout=60,
        )
        return await with_viewer(grid, tmp_path, "probed", probe)

    with caplog.at_level(logging.WARNING, logger="asyncio"):
        df, viewer = anyio.run(main)
    assert len(viewer.updates) > 5  # more journal lines than asyncio's quiet writes to a lost peer
    assert df.iloc[0]["cell_status"] == "finished" and df.iloc[0]["permissions_allowed"] == 1
    assert not [r for r in caplog.records if "socket.send" in r.getMessage()]
