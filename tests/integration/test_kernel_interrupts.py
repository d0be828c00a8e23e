"""Issue 21, item 3: the stop button reaches every ``%silo`` line magic that awaits the agent, the way it
reaches ``%%prompt``. A real kernel (jupyter_client playing the browser) and real agent subprocesses
(``tests/agents/raw_agent.py``: ``silent`` never answers ``initialize``; ``mute-setter`` never answers
``session/set_config_option``), with timeouts of 300 s: the cell must end by the interrupt, not by a
timeout. Before: ``%silo connect`` returned only at ``connect_timeout`` and ``%silo set`` stayed busy
until some unrelated message woke the kernel (no wake-up ran while a line magic awaited). On ipykernel
7.4 and 6.29.5 alike (issue 34).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from tests.conftest import Workspace, raw_agent
from tests.integration.kernel_harness import KernelHarness, kernel_env, silo_kernel

SLOW = 300  # seconds: far longer than the test waits; only the interrupt can end these cells


@pytest.fixture
async def kernel(workspace: Workspace, kernel_name: str) -> AsyncIterator[KernelHarness]:
    workspace.add_profiles(
        raw_agent("silent", connect_timeout=SLOW), raw_agent("mute-setter", request_timeout=SLOW)
    )
    env = kernel_env(workspace, profiles=True, JUPYTER_CONFIG_DIR=str(workspace.config))
    async with silo_kernel(workspace, env, kernel_name=kernel_name) as harness:
        yield harness


async def interrupted(kernel: KernelHarness, code: str, started: str) -> str:
    """Run ``code``, interrupt it once ``started`` shows in its output, and return what it printed."""
    msg_id = kernel.execute(code)
    await kernel.wait_for(
        lambda m: m["parent_header"].get("msg_id") == msg_id and started in json.dumps(m["content"]),
        timeout=30,
    )
    await asyncio.sleep(0.3)  # well inside the await: the loop sleeps in select, as a user would find it
    await kernel.km.interrupt_kernel()
    reply = await kernel.reply(msg_id, timeout=30)
    assert reply["content"]["status"] in ("error", "aborted"), reply["content"]
    return "".join(m["content"].get("text", "") for m in kernel.outputs(msg_id, "stream"))


async def test_the_stop_button_ends_a_connect_the_agent_never_answers(kernel: KernelHarness) -> None:
    said = await interrupted(kernel, "%silo connect raw-silent", "connecting")
    assert said.strip() == "UsageError: cancelled", said
    check = kernel.execute("import silo_nb; print(len(silo_nb.agents.get_state()))")
    await kernel.reply(check, timeout=15)
    printed = "".join(m["content"].get("text", "") for m in kernel.outputs(check, "stream"))
    assert printed.strip() == "0"  # nothing left registered


async def test_the_stop_button_ends_a_set_the_agent_never_answers(kernel: KernelHarness) -> None:
    await kernel.run("%silo connect raw-mute-setter --as mute")
    said = await interrupted(kernel, "print('setting', flush=True)\n%silo set mute mode code", "setting")
    assert said.strip().endswith("UsageError: cancelled"), said
    await kernel.run("print(mute.is_live)")  # the session carries on
