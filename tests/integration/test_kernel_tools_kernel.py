"""The kernel tools in a real kernel (jupyter_client playing the browser): the demo agent, through its own
MCP client and the relay, looks at a DataFrame and asks to run code; the "Run it" button clicked while the
``%%prompt`` cell runs lets it run in the user's namespace (the next cell sees what it set) and its figure
comes back into the turn; "Don't run" leaves the namespace untouched; a policy that does not mention code
never runs it; the kernel's interrupt stops running code and the turn goes on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.conftest import ROOT, Workspace
from tests.integration.kernel_harness import KernelHarness, Message, button_opened, kernel_env, silo_kernel

SETUP = """
import pandas as pd
df = pd.DataFrame({"species": ["Adelie", "Gentoo", "Adelie", "Chinstrap"], "mass": [3.7, 5.0, 3.9, 3.6]})
"""


@pytest.fixture
async def kernel(workspace: Workspace) -> AsyncIterator[KernelHarness]:
    env = kernel_env(
        workspace, demo_delay="0", PYTHONPATH=str(ROOT)
    )  # this checkout's silo_nb, in the kernel
    async with silo_kernel(workspace, env, SETUP, "%silo connect demo") as harness:
        yield harness


def turn_data(harness: KernelHarness, msg_id: str) -> dict[str, Any]:
    updates = [
        m for m in harness.outputs(msg_id, "update_display_data") if "text/markdown" in m["content"]["data"]
    ]
    assert updates, [m["msg_type"] for m in harness.outputs(msg_id)]
    return dict(updates[-1]["content"]["data"])


async def printed(harness: KernelHarness, code: str) -> str:
    msg_id = harness.execute(code)
    await harness.reply(msg_id, timeout=30)
    return "".join(m["content"].get("text", "") for m in harness.outputs(msg_id, "stream")).strip()


def code_shown(message: Message) -> bool:
    """The permission row's code widget: an HTML widget whose value is the highlighted code."""
    if message["msg_type"] != "comm_open":
        return False
    state = message["content"].get("data", {}).get("state", {})
    return state.get("_model_name") == "HTMLModel" and "groupby" in str(state.get("value", ""))


async def test_run_it_runs_the_code_in_the_namespace_and_the_plot_comes_back(kernel: KernelHarness) -> None:
    msg_id = kernel.execute("%%prompt\nlook into df", cell_id="cell-look-1")
    opened = await kernel.wait_for(button_opened("Run it"), timeout=90)
    await kernel.wait_for(code_shown)  # the code it asks to run is on screen, highlighted
    assert msg_id not in kernel.replies  # the cell still runs
    kernel.click(opened["content"]["comm_id"])
    reply = await kernel.reply(msg_id, timeout=90)
    assert reply["content"]["status"] == "ok"
    data = turn_data(kernel, msg_id)
    assert "It ran: the result is in the card above and 1 figure came back." in data["text/markdown"]
    assert data["text/html"].count('class="silo-kernel-figure" src="data:image/png;base64,iVBOR') == 1
    # The figure came back in the turn, not as an output of its own under the cell.
    assert not [m for m in kernel.outputs(msg_id, "display_data") if "image/png" in m["content"]["data"]]
    assert await printed(kernel, "print(summary.round(2).to_dict())") == (
        "{'Chinstrap': 3.6, 'Adelie': 3.8, 'Gentoo': 5.0}"
    )


async def test_dont_run_leaves_the_namespace_untouched(kernel: KernelHarness) -> None:
    before = await printed(kernel, "print(sorted(k for k in globals() if not k.startswith('_')))")
    msg_id = kernel.execute("%%prompt\nlook into df")
    opened = await kernel.wait_for(button_opened("Don't run"), timeout=90)
    kernel.click(opened["content"]["comm_id"])
    assert (await kernel.reply(msg_id, timeout=90))["content"]["status"] == "ok"
    assert "The code did not run: The user rejected it" in turn_data(kernel, msg_id)["text/markdown"]
    after = await printed(kernel, "print(sorted(k for k in globals() if not k.startswith('_')))")
    assert after == before and "summary" not in after


async def test_a_policy_that_does_not_mention_code_never_runs_it(kernel: KernelHarness) -> None:
    await kernel.run(
        'import silo_nb\npolicy = demo.on_permission(silo_nb.PermissionPolicy("allow *", otherwise="allow"))'
    )
    msg_id = kernel.execute("%%prompt\nlook into df")
    assert (await kernel.reply(msg_id, timeout=90))["content"]["status"] == "ok"
    markdown = turn_data(kernel, msg_id)["text/markdown"]
    assert "The code did not run" in markdown and "Permission: Run code in the kernel" in markdown
    assert await printed(kernel, "print('summary' in globals())") == "False"
    await kernel.run('policy.dispose(); allow = demo.on_permission(silo_nb.PermissionPolicy("allow code"))')
    msg_id = kernel.execute("%%prompt\nlook into df")
    assert (await kernel.reply(msg_id, timeout=90))["content"]["status"] == "ok"
    assert await printed(kernel, "print('summary' in globals())") == "True"  # named, it runs


SLOW = """
import time

class Slow:
    def __repr__(self):
        return "Slow()"

    def _repr_pretty_(self, printer, cycle):  # what a cell shows: sleeps, as a slow computation would
        time.sleep(60)
        printer.text("slow")

slow = Slow()
"""


async def test_the_interrupt_stops_running_code_and_the_turn_goes_on(kernel: KernelHarness) -> None:
    await kernel.run(SLOW)
    msg_id = kernel.execute("%%prompt\nlook into slow")
    opened = await kernel.wait_for(button_opened("Run it"), timeout=90)
    kernel.click(opened["content"]["comm_id"])
    await asyncio.sleep(2)  # let the code start (the click answers at once; the run follows)
    await kernel.km.interrupt_kernel()
    reply = await kernel.reply(msg_id, timeout=60)
    assert reply["content"]["status"] == "ok"  # the turn was not cancelled
    data = turn_data(kernel, msg_id)
    assert "The code did not run: The user interrupted the kernel" in data["text/markdown"]
    assert "interrupted" in data["text/plain"] and "finished" in data["text/plain"]
    assert await printed(kernel, "print(1 + 1)") == "2"
