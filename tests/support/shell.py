"""A real ``InteractiveShell`` with silo_nb loaded on a test's workspace (widgets on a recording comm, no
kernel): the ``shell`` fixture and the helpers the notebook tests share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import anyio
import comm
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import CapturedIO, capture_output

from silo_nb.notebook.magics import NotebookSession, session_of, use_session
from tests.conftest import Workspace

__all__ = ["RecordingComm", "drop_session", "final_bundle", "restart", "run", "shell"]


class RecordingComm(comm.base_comm.BaseComm):  # type: ignore[misc]
    sent: ClassVar[list[tuple[str, Any]]] = []

    def publish_msg(
        self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
    ) -> None:
        RecordingComm.sent.append((msg_type, data))


def drop_session(ip: InteractiveShell) -> None:
    """What a kernel's end does to silo_nb's state: every connected agent let go, the state gone."""
    for connection in list(session_of(ip).connections.values()):
        if connection.handle is not None:
            connection.handle.dispose()
    use_session(ip, None)


@pytest.fixture
def shell(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    RecordingComm.sent = []
    monkeypatch.setattr(comm, "create_comm", RecordingComm)
    ip = InteractiveShell.instance()
    ip.extension_manager.load_extension("silo_nb")
    use_session(ip, NotebookSession(ip, workspace.service()))
    yield ip
    drop_session(ip)


async def run(ip: InteractiveShell, cell: str) -> tuple[CapturedIO, Any]:
    with capture_output() as captured, anyio.fail_after(60):
        result = await ip.run_cell_async(cell, transformed_cell=ip.transform_cell(cell))
    return captured, result


def restart(ip: InteractiveShell, workspace: Workspace) -> None:
    """A kernel restart, as far as silo_nb can tell: fresh extension state, agents gone."""
    drop_session(ip)
    use_session(ip, NotebookSession(ip, workspace.service()))


def final_bundle(captured: CapturedIO) -> Any:
    # A turn's bundle has Markdown; the panels' refreshes sent at each turn's end do not.
    updates = [o for o in captured.outputs if "text/markdown" in o.data]
    assert updates, [o.data.keys() for o in captured.outputs]
    return updates[-1]


def said(captured: object) -> str:
    return str(getattr(captured, "stderr", "")) + str(getattr(captured, "stdout", ""))
