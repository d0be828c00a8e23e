"""A real kernel (jupyter_client playing the browser): a permission button clicked while the ``%%prompt``
cell is still running, the stop button cancelling a turn that waits for permission, and "Run All"
order kept — on ipykernel 7.4 (comm messages reach an awaiting cell by themselves) and on 6.29.5, where
silo_nb hands them to the cell (``comm_pump.py``): the same behaviour on both (issue 34)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.conftest import Workspace
from tests.integration.kernel_harness import KernelHarness, button_opened, kernel_env, silo_kernel


@pytest.fixture
async def kernel(workspace: Workspace, kernel_name: str) -> AsyncIterator[KernelHarness]:
    env = kernel_env(workspace, demo_delay="0.01")
    async with silo_kernel(workspace, env, "%silo connect demo", kernel_name=kernel_name) as harness:
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


async def test_run_all_with_a_click_runs_each_cell_after_the_one_before(kernel: KernelHarness) -> None:
    """Run All sends every cell at once: a prompt that asks permission, a check, a second prompt, a check.
    The click reaches the first cell while the others wait; each cell starts once the one before ended."""
    state = "import silo_nb\nprint(silo_nb.agents.get_state()[0].activity, flush=True)"
    cells = [
        kernel.execute("%%prompt\nplease edit the notes", cell_id="run-all-edit"),
        kernel.execute(state),
        kernel.execute("%%prompt\nMake a plan for the analysis", cell_id="run-all-plan"),
        kernel.execute(state),
    ]
    opened = await kernel.wait_for(button_opened("Allow once"))
    assert cells[0] not in kernel.replies  # still running, the other three queued behind it
    kernel.click(opened["content"]["comm_id"])
    for msg_id in cells:
        assert (await kernel.reply(msg_id, timeout=60))["content"]["status"] == "ok"
    started = [
        m["parent_header"]["msg_id"]
        for m in kernel.iopub
        if m["msg_type"] == "execute_input" and m["parent_header"]["msg_id"] in cells
    ]
    assert started == cells
    assert "Edited notes.md." in final_markdown(kernel, cells[0])
    assert "Make a plan" in final_markdown(kernel, cells[2])
    for check in (cells[1], cells[3]):
        printed = "".join(m["content"].get("text", "") for m in kernel.outputs(check, "stream"))
        assert printed.strip() == "idle"  # the turn before it had ended


async def test_the_stop_button_still_works_after_a_click(kernel: KernelHarness) -> None:
    """A click dispatched inside a blocking cell leaves the kernel's interrupt handling as it was: the
    next blocking turn and then a plain busy cell both stop at the stop button."""
    clicked = kernel.execute("%%prompt\nplease edit the notes")
    kernel.click((await kernel.wait_for(button_opened("Allow once")))["content"]["comm_id"])
    assert (await kernel.reply(clicked, timeout=30))["content"]["status"] == "ok"
    waiting = kernel.execute("%%prompt\nedit the notes again please")
    async with asyncio.timeout(30):  # the second turn's own permission row
        while sum(map(button_opened("Allow once"), kernel.iopub)) < 2:
            await asyncio.sleep(0.02)
    await kernel.km.interrupt_kernel()
    assert (await kernel.reply(waiting, timeout=15))["content"]["status"] == "error"
    assert "cancelled" in final_update(kernel, waiting)["content"]["data"]["text/plain"]
    busy = kernel.execute("import time\nfor _ in range(1200):\n    time.sleep(0.05)")
    await kernel.wait_for(lambda m: m["msg_type"] == "execute_input" and m["parent_header"]["msg_id"] == busy)
    await asyncio.sleep(0.3)
    await kernel.km.interrupt_kernel()
    reply = await kernel.reply(busy, timeout=15)
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"


async def test_a_click_reaches_a_background_turn_while_a_cell_waits_for_it(kernel: KernelHarness) -> None:
    """``await silo_nb.wait()`` blocks its cell until the ``--bg`` turns end; the permission one of them
    asks for is answered from its buttons meanwhile."""
    background = kernel.execute("%%prompt --bg\nplease edit the notes")
    await kernel.reply(background)
    waiting = kernel.execute("import silo_nb\nawait silo_nb.wait()\nprint('all done')")
    opened = await kernel.wait_for(button_opened("Allow once"))
    await kernel.wait_for(
        lambda m: m["msg_type"] == "execute_input" and m["parent_header"]["msg_id"] == waiting
    )
    kernel.click(opened["content"]["comm_id"])
    assert (await kernel.reply(waiting, timeout=30))["content"]["status"] == "ok"
    printed = "".join(m["content"].get("text", "") for m in kernel.outputs(waiting, "stream"))
    assert printed.strip() == "all done"
