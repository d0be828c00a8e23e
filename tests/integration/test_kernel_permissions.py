"""Issue 21, must-show: a hostile-permission agent in a real kernel (jupyter_client playing the browser,
``tests/agents/permission_agent.py`` as a subprocess): 10,000 options, a repeated option id, no options,
another session's id and a NUL path, one after the other in one ``%%prompt --bg`` turn. The kernel
answers ``1+1`` while the requests wait and after each is answered; the buttons are clicked as a browser
would click them; the answer the transcript shows for each request is the answer the agent received (the
agent reports what it got). The ``1+1`` latency while such an agent runs is a figure of
``benchmarks/kernel_latency.py permissions``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator

import pytest

from tests.conftest import AGENTS, Workspace
from tests.integration.kernel_harness import KernelHarness, button_opened, kernel_env, silo_kernel

HANG_GUARD = 60.0


@pytest.fixture
async def kernel(workspace: Workspace) -> AsyncIterator[KernelHarness]:
    workspace.add_profiles(
        {
            "id": "perm",
            "label": "Hostile",
            "command": sys.executable,
            "args": [str(AGENTS / "permission_agent.py")],
        }
    )
    async with silo_kernel(workspace, kernel_env(workspace, profiles=True), "%silo connect perm") as harness:
        yield harness


async def answers_one_plus_one(kernel: KernelHarness) -> None:
    """The kernel answers ``1+1`` (the hang guard is far longer than any answer: a wedge, not a figure)."""
    msg_id = kernel.execute("1+1")
    assert (await kernel.reply(msg_id, timeout=HANG_GUARD))["content"]["status"] == "ok"
    assert [m["content"]["data"]["text/plain"] for m in kernel.outputs(msg_id, "execute_result")] == ["2"]


def static_transcript(kernel: KernelHarness) -> str | None:
    """The turn's static transcript (its live view replaced at the end), whichever cell carried it."""
    for message in kernel.iopub:
        content = message["content"]
        if (
            message["msg_type"] == "update_display_data"
            and "text/markdown" in content.get("data", {})
            and content["metadata"].get("silo", {}).get("cell_id") == "perm-cell"
        ):
            return str(content["data"]["text/plain"])
    return None


async def test_the_answer_shown_is_the_answer_sent(kernel: KernelHarness) -> None:
    msg_id = kernel.execute("%%prompt perm --bg\ngo", cell_id="perm-cell")
    await kernel.reply(msg_id)
    await kernel.wait_for(button_opened("Option 0"))
    await answers_one_plus_one(kernel)  # 10,000 options waiting for a click
    buttons = [m for m in kernel.iopub if button_opened("Option")(m)]
    assert len(buttons) <= 12  # 10,000 options, a bounded row
    kernel.click((await kernel.wait_for(button_opened("Option 3")))["content"]["comm_id"])
    await kernel.wait_for(button_opened("Reject"))  # the NUL path's, after the duplicate, empty, foreign
    await answers_one_plus_one(kernel)
    kernel.click((await kernel.wait_for(button_opened("Reject")))["content"]["comm_id"])
    async with asyncio.timeout(HANG_GUARD):
        while (plain := static_transcript(kernel)) is None:
            await asyncio.sleep(0.05)
    await answers_one_plus_one(kernel)
    reported = [line for line in plain.splitlines() if "[[" in line]
    assert reported, plain
    sent = dict(json.loads(reported[0][reported[0].index("[[") :]))
    assert sent == {
        "many": "o3",
        "duplicate": "cancelled",
        "empty": "cancelled",
        "foreign": "error -32602",
        "nul": "reject",
    }
    shown = {
        line.split("permission> ", 1)[1].split(":", 1)[0]: line.split(" → ", 1)[1]
        for line in plain.splitlines()
        if line.startswith("permission> ")
    }
    assert shown["many"] == "Option 3"  # o3's name
    assert shown["duplicate"].startswith("cancelled — the agent offered option id 'x' twice")
    assert shown["empty"].startswith("cancelled — the agent offered no options")
    assert shown["nul"] == "Reject"  # "reject"'s name
    assert "foreign" not in shown  # refused with a JSON-RPC error: nothing of it in this session
