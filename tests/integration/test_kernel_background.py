"""Issue 21, item 9: a ``%%prompt --bg`` turn starts and finishes while the kernel is idle. A real kernel
driven as a front end drives it (jupyter_client), the scenario agent of the benchmarks streaming 2,000
tool calls, and no other cell sent until the turn's static transcript has replaced its live view: the
agent receives the prompt and the turn ends with the kernel otherwise idle. (The stall reported in the
issue, no prompt for 40 s until another cell ran, did not reproduce on this machine, ipykernel 7.4.0; the
turn now keeps the same 0.2 s wake-up a blocking turn keeps, so a lost wake-up of the kernel's loop
cannot hold it. This test guards the behaviour either way.)
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import Workspace
from tests.integration.kernel_harness import KernelHarness, kernel_env, silo_kernel

SCENARIO_AGENT = Path(__file__).resolve().parents[2] / "benchmarks" / "scenario_agent.py"


@pytest.fixture
async def kernel(workspace: Workspace) -> AsyncIterator[KernelHarness]:
    profile = {"id": "bench", "label": "Bench", "command": sys.executable, "args": [str(SCENARIO_AGENT)]}
    workspace.add_profiles(profile)
    async with silo_kernel(workspace, kernel_env(workspace, profiles=True), "%silo connect bench") as harness:
        yield harness


def swapped(kernel: KernelHarness, msg_id: str) -> bool:
    return any(
        m["msg_type"] == "update_display_data" and "text/markdown" in m["content"].get("data", {})
        for m in kernel.outputs(msg_id)
    )


async def test_a_background_turn_runs_to_its_end_while_the_kernel_is_idle(kernel: KernelHarness) -> None:
    msg_id = kernel.execute("%%prompt bench --bg\ntools 2000", cell_id="bg-cell")
    await kernel.reply(msg_id)  # the cell returned: from here on nothing else is sent to the kernel
    async with asyncio.timeout(120):
        while not swapped(kernel, msg_id):
            await asyncio.sleep(0.1)
    update = next(
        m for m in kernel.outputs(msg_id, "update_display_data") if "text/markdown" in m["content"]["data"]
    )
    assert update["content"]["metadata"]["silo"]["cell_id"] == "bg-cell"
    assert "Read f1999" in update["content"]["data"]["text/plain"]  # the last tool call arrived
