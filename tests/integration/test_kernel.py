"""A real kernel (jupyter_client playing the browser): a permission button clicked while the ``%%prompt``
cell is still running, the stop button cancelling a turn that waits for permission, and "Run All"
order kept. Needs ipykernel ≥ 7.4 (comm messages reach an awaiting cell)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.conftest import Workspace
from tests.integration.kernel_harness import KernelHarness, button_opened, kernel_env, silo_kernel


@pytest.fixture
async def kernel(workspace: Workspace) -> AsyncIterator[KernelHarness]:
    async with silo_kernel(
        workspace, kernel_env(workspace, demo_delay="0.01"), "%silo connect demo"
    ) as harness:
        yield harness


def final_update(harness: KernelHarness, msg_id: str) -> dict[str, Any]:
    """The turn's own last update (the connect cell's snapshot is refreshed at the turn's end too)."""
    updates = harness.outputs(msg_id, "update_display_data")
    updates = [m for m in updates if "text/markdown" in m["content"]["data"]]
    assert updates, [m["msg_type"] for m in harness.outputs(msg_id)]
    return updates[-1]


def final_markdown(harness: KernelHarness, msg_id: str) -> str:
    return str(final_update(harness, msg_id)["content"]["data"]["text/markdown"])


async def test_permission_click_while_the_cell_runs(kernel: KernelHarness) -> None:
    msg_id = kernel.execute("%%prompt\nplease edit the notes", cell_id="cell-edit-1")
    opened = await kernel.wait_for(button_opened("Allow once"))
    assert msg_id not in kernel.replies  # the cell is still running: [*]
    kernel.click(opened["content"]["comm_id"])
    reply = await kernel.reply(msg_id, timeout=30)
    assert reply["content"]["status"] == "ok"
    markdown = final_markdown(kernel, msg_id)
    assert "Edited notes.md." in markdown
    update = final_update(kernel, msg_id)
    assert update["content"]["metadata"]["silo"]["cell_id"] == "cell-edit-1"
    assert "application/vnd.jupyter.widget-view+json" not in update["content"]["data"]


async def test_stop_button_cancels_a_turn_waiting_for_permission(kernel: KernelHarness) -> None:
    msg_id = kernel.execute("%%prompt\nedit the notes please")
    await kernel.wait_for(button_opened("Allow once"))
    await asyncio.sleep(0.2)
    await kernel.km.interrupt_kernel()
    reply = await kernel.reply(msg_id, timeout=15)
    assert reply["content"]["status"] in ("error", "aborted")
    plain = final_update(kernel, msg_id)["content"]["data"]["text/plain"]
    assert "cancelled" in plain
    # One line, not an asyncio traceback (issue 11): IPython's UsageError form, on stderr.
    said = "".join(m["content"].get("text", "") for m in kernel.outputs(msg_id, "stream"))
    assert said.strip() == "UsageError: cancelled", said
    errors = json.dumps([m["content"] for m in kernel.outputs(msg_id, "error")])
    assert "CancelledError" not in errors and "Traceback" not in errors, errors
    check = kernel.execute("import silo_nb; print(silo_nb.agents.get_state()[0].activity)")
    await kernel.reply(check, timeout=15)
    printed = "".join(m["content"].get("text", "") for m in kernel.outputs(check, "stream"))
    assert printed.strip() == "idle"


async def test_run_all_keeps_order(kernel: KernelHarness) -> None:
    first = kernel.execute("%%prompt\ngo slow please")
    second = kernel.execute(
        "import silo_nb\nprint(silo_nb.agents.get_state()[0].activity, len(silo_nb.agents.get_state()))"
    )
    await kernel.reply(second, timeout=60)
    assert first in kernel.replies
    printed = "".join(m["content"].get("text", "") for m in kernel.outputs(second, "stream"))
    assert printed.strip() == "idle 1"
    assert "Counting slowly" in final_markdown(kernel, first)
