"""``%silo frame NAME`` in a real ``InteractiveShell``, and the progress bar ``run_grid`` shows there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import comm
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import CapturedIO, capture_output

from silo_nb.experiments.progress import GridCounts
from silo_nb.notebook.magics import NotebookSession, session_of, use_session
from silo_nb.notebook.widgets.grid_progress import GridProgressBar
from tests.conftest import Workspace

SILO_FIXTURE = Path(__file__).resolve().parent / "silo-format.jsonl"


class QuietComm(comm.base_comm.BaseComm):  # type: ignore[misc]
    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, **keys: Any) -> None:
        pass


@pytest.fixture
def shell(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.setattr(comm, "create_comm", QuietComm)
    ip = InteractiveShell.instance()
    ip.extension_manager.load_extension("silo_nb")
    use_session(ip, NotebookSession(ip, workspace.service()))
    yield ip
    for connection in list(session_of(ip).connections.values()):
        if connection.handle is not None:
            connection.handle.dispose()
    use_session(ip, None)


async def run(ip: InteractiveShell, cell: str) -> tuple[CapturedIO, Any]:
    with capture_output() as captured, anyio.fail_after(60):
        result = await ip.run_cell_async(cell, transformed_cell=ip.transform_cell(cell))
    return captured, result


async def test_silo_frame_of_a_connection_and_of_a_journal_file(shell: InteractiveShell) -> None:
    await run(shell, "%silo connect demo")
    await run(shell, "%%prompt demo\nhello there")
    captured, result = await run(shell, "%silo frame demo")
    assert result.success, result.error_in_exec
    (table,) = [o.data for o in captured.outputs if "text/html" in o.data]
    assert "hello there" in table["text/html"] and ">stop_reason</th>" in table["text/html"]
    assert "end_turn" in table["text/html"] and "tools_by_kind" not in table["text/html"]
    captured, _ = await run(shell, f"%silo frame {SILO_FIXTURE} --all")
    (table,) = [o.data for o in captured.outputs if "text/html" in o.data]
    assert "Now run the tests" in table["text/html"] and "tool_kind_execute" in table["text/html"]


async def test_silo_frame_of_an_unknown_name_is_one_line(shell: InteractiveShell) -> None:
    _, result = await run(shell, "%silo frame ghost")
    assert not result.success
    message = str(result.error_in_exec)
    assert "No journal for session 'ghost'" in message and "connections here: none" in message
    assert "\n" not in message


def test_the_progress_bar_ends_as_a_static_snapshot(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``capture_output`` records displays only where an IPython shell exists (``shell``): without one, the
    # test passed only when an earlier test on its worker had made one.
    monkeypatch.setattr(comm, "create_comm", QuietComm)
    bar = GridProgressBar()
    with capture_output() as captured:
        bar.started(GridCounts("run-1", total=4))
        bar.changed(GridCounts("run-1", total=4, done=3, running=1, failed=1, elapsed=65))
        bar.finished(GridCounts("run-1", total=4, done=4, failed=1, elapsed=70))
    first, last = captured.outputs[0].data, captured.outputs[-1].data
    assert "application/vnd.jupyter.widget-view+json" in first and "text/html" in first
    assert bar.bar.value == 4 and bar.bar.bar_style == "danger"
    assert set(last) == {"text/plain", "text/html"}  # no widget left in the saved output
    assert last["text/plain"] == "⚠ run-1: 4/4 done · 0 running · 1 failed · 1:10 elapsed"
