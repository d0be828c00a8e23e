"""Two real kernels on one workspace: a session open in one is listed by the other's ``%silo agents`` as
"open in another kernel" (the journal lock's owner, by pid) with no Resume button, and as dormant again,
with its button, once the first kernel lets it go."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from silo_nb.sessions.journal.locks import PROCESS_LOCKS, lock_owner
from tests.conftest import Workspace
from tests.integration.kernel_harness import KernelHarness, button_opened, kernel_env


def printed(kernel: KernelHarness, msg_id: str) -> str:
    return "".join(m["content"].get("text", "") for m in kernel.outputs(msg_id, "stream"))


@pytest.fixture
async def kernels(workspace: Workspace) -> AsyncIterator[tuple[KernelHarness, KernelHarness]]:
    env = kernel_env(workspace, demo_delay="0")
    first = await KernelHarness.start(workspace.folder, {**env, "JPY_SESSION_NAME": "one.ipynb"})
    second = await KernelHarness.start(workspace.folder, {**env, "JPY_SESSION_NAME": "two.ipynb"})
    try:
        yield first, second
    finally:
        await first.stop()
        await second.stop()


async def listing(kernel: KernelHarness) -> tuple[str, list[str]]:
    """``%silo agents``' text, and the descriptions of the buttons it opened."""
    before = len(kernel.iopub)
    msg_id = kernel.execute("%silo agents")
    await kernel.reply(msg_id)
    bundle = next(m for m in kernel.outputs(msg_id, "display_data"))["content"]["data"]
    buttons = [
        str(m["content"]["data"]["state"].get("description"))
        for m in kernel.iopub[before:]
        if m["msg_type"] == "comm_open" and button_opened("")(m)
    ]
    return str(bundle["text/plain"]), buttons


async def test_a_session_open_in_another_kernel_has_no_resume(
    kernels: tuple[KernelHarness, KernelHarness], workspace: Workspace
) -> None:
    first, second = kernels
    await first.run("%load_ext silo_nb")
    await first.run("%silo connect demo --as mine")
    await first.run("%%prompt\nhello from the first kernel", timeout=60)
    reply = await first.run("import os\nprint(os.getpid(), mine.session_id)")
    pid, session_id = printed(first, reply["parent_header"]["msg_id"]).split()
    journal = next(workspace.data.rglob(f"chat-sessions/{session_id}.jsonl"))
    assert lock_owner(journal) == int(pid)  # asked from this test process: the first kernel holds it
    assert not PROCESS_LOCKS.holds_file(journal)  # ...and the question took no lock here

    await second.run("%load_ext silo_nb")
    text, buttons = await listing(second)
    assert f"Silo demo agent · open in another kernel (pid {pid})" in text, text
    assert "Resume" not in buttons and "Continue" not in buttons, buttons
    assert lock_owner(journal) == int(pid)  # the listing did not take it either

    await first.run("%silo disconnect mine")
    assert lock_owner(journal) is None
    text, buttons = await listing(second)
    assert "Silo demo agent · dormant" in text and "open in another kernel" not in text, text
    assert "Resume" in buttons, buttons
