"""``%silo attach RUN [CELL]`` in a real ``InteractiveShell``: a running grid cell of the demo agent shown
with the live turn's widgets — its permission answered by clicking Allow, its turn stopped by clicking
Stop — a finished cell's turn, and a run that is not there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import comm
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import CapturedIO, capture_output

import silo_nb
from silo_nb.experiments import locate_cell, run_grid
from silo_nb.notebook import CellView
from silo_nb.notebook.magics import NotebookSession, use_session
from silo_nb.notebook.magics.attach import ATTACHED
from silo_nb.notebook.widgets.grid_progress import GridProgressBar
from tests.conftest import Workspace
from tests.experiments.grid_checks import agents_with


class QuietComm(comm.base_comm.BaseComm):  # type: ignore[misc]
    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, **keys: Any) -> None:
        pass


@pytest.fixture
def attach_shell(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[InteractiveShell]:
    monkeypatch.setattr(comm, "create_comm", QuietComm)
    monkeypatch.setenv("SILO_NB_DEMO_STATE_DIR", str(tmp_path / "attach-demo-state"))
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0")
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)
    ip = InteractiveShell.instance()
    ip.extension_manager.load_extension("silo_nb")
    use_session(ip, NotebookSession(ip, workspace.service()))
    yield ip
    for view in ATTACHED.values():
        view.detach()
    ATTACHED.clear()
    use_session(ip, None)


async def run(ip: InteractiveShell, cell: str) -> tuple[CapturedIO, Any]:
    with capture_output() as captured, anyio.fail_after(60):
        result = await ip.run_cell_async(cell, transformed_cell=ip.transform_cell(cell))
    return captured, result


async def attached_view(ip: InteractiveShell, runs: Path, name: str, out: dict[str, Any]) -> CellView:
    """``%silo attach`` once the run has a running cell; the view it shows."""
    with anyio.fail_after(60):
        while True:
            assert "df" not in out, "the grid ended before the view attached"
            try:
                if locate_cell(name, folder=runs).state == "running":
                    break
            except LookupError:
                pass
            await anyio.sleep(0.02)
    captured, result = await run(ip, f"%silo attach {name} --folder {runs}")
    assert result.success, result.error_in_exec
    assert any("application/vnd.jupyter.widget-view+json" in o.data for o in captured.outputs)
    (view,) = [v for (run_path, _cell), v in ATTACHED.items() if Path(run_path).name == name]
    return view


async def until(check: Any) -> None:
    with anyio.fail_after(60):
        while not check():
            await anyio.sleep(0.02)


async def test_allow_clicked_in_the_attached_view_answers_the_cell(
    attach_shell: InteractiveShell, tmp_path: Path
) -> None:
    runs, out = tmp_path / "runs", {}

    async def grid() -> None:
        out["df"] = await run_grid(
            ["please edit notes.md"],
            folder=runs,
            name="nb-allow",
            policy=silo_nb.PermissionPolicy("allow read"),
            attach_wait=60,
            progress=False,
            timeout=60,
            config_dirs=[],
        )

    async with anyio.create_task_group() as group:
        group.start_soon(grid)
        view = await attached_view(attach_shell, runs, "nb-allow", out)
        await until(lambda: view.view.rows)
        (row,) = view.view.rows
        assert "Edit notes.md" in row.title_html.value and "allow-once" in row.buttons
        row.buttons["allow-once"].click()  # the button's own click handler
        await until(lambda: "df" in out)
        await until(lambda: not view.running)
    df = out["df"]
    assert df.iloc[0]["permissions_allowed"] == 1 and df.iloc[0]["tool_status_completed"] == 2
    assert view.transcript.status == "finished" and "Edited notes.md" in view.view.html
    assert row.answered and row.buttons["allow-once"].disabled
    # Attached again once finished: the finished turn, not an error, and nothing to stop.
    _captured, result = await run(attach_shell, f"%silo attach nb-allow p0-demo-c0-r0 --folder {runs}")
    assert result.success, result.error_in_exec
    again = ATTACHED[(str(runs / "nb-allow"), "p0-demo-c0-r0")]
    assert again is not view and not again.running and "Edited notes.md" in again.view.html
    assert again.view.stop_button.disabled
    assert agents_with(str(tmp_path / "attach-demo-state")) == []


async def test_stop_clicked_in_the_attached_view_cancels_the_cell(
    attach_shell: InteractiveShell, tmp_path: Path
) -> None:
    runs, out = tmp_path / "runs", {}

    async def grid() -> None:
        out["df"] = await run_grid(
            [["slow please", "hello there"]],
            folder=runs,
            name="nb-stop",
            progress=False,
            timeout=60,
            config_dirs=[],
        )

    async with anyio.create_task_group() as group:
        group.start_soon(grid)
        view = await attached_view(attach_shell, runs, "nb-stop", out)
        await until(
            lambda: any("Counting slowly" in getattr(e, "text", "") for e in view.transcript.state.entries)
        )
        view.view.stop_button.click()
        await until(lambda: "df" in out)
        await until(lambda: not view.running)
    row = out["df"].iloc[0]
    assert row["cell_status"] == "failed" and "cancelled by the user" in row["error"]
    assert len(out["df"]) == 1 and view.transcript.status == "cancelled"


async def test_attach_to_a_run_that_is_not_there_is_one_line(
    attach_shell: InteractiveShell, tmp_path: Path
) -> None:
    _captured, result = await run(attach_shell, f"%silo attach nowhere --folder {tmp_path}")
    assert not result.success
    message = str(result.error_in_exec)
    assert message.startswith("%silo attach: No run 'nowhere'") and "\n" not in message


async def test_the_progress_views_attach_button_shows_the_running_cell(
    attach_shell: InteractiveShell, tmp_path: Path
) -> None:
    runs, out = tmp_path / "runs", {}
    bar = GridProgressBar()

    async def grid() -> None:
        out["df"] = await run_grid(
            ["please edit notes.md"],
            folder=runs,
            name="nb-button",
            policy=silo_nb.PermissionPolicy("allow read"),
            attach_wait=60,
            progress=bar,
            timeout=60,
            config_dirs=[],
        )

    with capture_output():
        async with anyio.create_task_group() as group:
            group.start_soon(grid)
            await until(lambda: "p0-demo-c0-r0" in bar.attach_buttons)
            bar.attach_buttons["p0-demo-c0-r0"].click()
            await until(lambda: bar.views and bar.views[0].view.rows)
            (view,) = bar.views
            view.view.rows[0].buttons["allow-once"].click()
            await until(lambda: "df" in out)
    assert out["df"].iloc[0]["permissions_allowed"] == 1
    assert not bar.attach_buttons and view.transcript.status == "finished"
    assert "Edited notes.md" in view.view.html
