"""A kernel started by a Jupyter server for a notebook (so it has the server's environment and
``JPY_SESSION_NAME``), driven from here as the page would drive it."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

from jupyter_client import BlockingKernelClient

from tests.support.lab import LabServer

__all__ = ["kernel_for", "run"]


def kernel_for(server: LabServer, state: Path, path: str | None) -> BlockingKernelClient:
    """A client of a new kernel of ``server``, started for the notebook ``path`` (a session, as the page
    makes one), or for none (``None``: a bare kernel, as a console's)."""
    if path is None:
        kernel_id = server.api("POST", "kernels", timeout=60, body={"name": "python3"})["id"]
    else:
        body = {"path": path, "type": "notebook", "kernel": {"name": "python3"}}
        kernel_id = server.api("POST", "sessions", timeout=60, body=body)["kernel"]["id"]
    connection = state / "runtime" / f"kernel-{kernel_id}.json"
    deadline = time.monotonic() + 30
    while not connection.is_file():
        assert time.monotonic() < deadline, "the kernel's connection file never appeared"
        time.sleep(0.1)
    client = BlockingKernelClient(connection_file=str(connection))
    client.load_connection_file()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    return client


def run(client: BlockingKernelClient, code: str, cell_id: str | None = None, timeout: float = 120) -> str:
    """Run ``code`` in the kernel as the cell ``cell_id`` of the notebook (JupyterLab sends the id with the
    execution, ``metadata.cellId``); what it printed (an error fails the test with its traceback)."""
    content = {"code": textwrap.dedent(code), "silent": False, "store_history": True, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": True}  # fmt: skip
    message = client.session.msg("execute_request", content, metadata={"cellId": cell_id} if cell_id else {})
    client.shell_channel.send(message)
    printed: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        assert time.monotonic() < deadline, f"the cell did not end in {timeout:.0f} s: {''.join(printed)}"
        out = client.get_iopub_msg(timeout=timeout)
        if out["parent_header"].get("msg_id") != message["header"]["msg_id"]:
            continue
        kind, body = out["msg_type"], out["content"]
        if kind == "stream":
            printed.append(body["text"])
        elif kind == "error":
            printed.append("\n".join(body["traceback"]))
            raise AssertionError("".join(printed))
        elif kind == "status" and body["execution_state"] == "idle":
            return "".join(printed)
