"""Notebook-native prompting in a real kernel: ``%silo insert`` asks the front end for a new cell (the
``set_next_input`` payload of the execute reply, which JupyterLab turns into a cell below), and
``%%prompt --error`` / ``{In[n]}`` / ``{Out[n]}`` read this kernel's own history."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.conftest import Workspace
from tests.integration.kernel_harness import KernelHarness, kernel_env, silo_kernel


@pytest.fixture
async def kernel(workspace: Workspace) -> AsyncIterator[KernelHarness]:
    async with silo_kernel(workspace, kernel_env(workspace, demo_delay="0"), "%silo connect demo") as harness:
        yield harness


def stdout(harness: KernelHarness, msg_id: str) -> str:
    return "".join(m["content"]["text"] for m in harness.outputs(msg_id, "stream"))


async def test_insert_sends_the_code_block_as_the_next_cell(kernel: KernelHarness) -> None:
    await kernel.run("%%prompt\n/explain the greet function", timeout=60)
    reply = await kernel.run("%silo insert")
    payloads = reply["content"]["payload"]
    assert payloads == [
        {
            "source": "set_next_input",
            "text": 'def greet(name: str) -> str:\n    return f"Hello, {name}!"',
            "replace": False,
        }
    ]


async def test_error_and_history_reach_the_prompt(kernel: KernelHarness) -> None:
    failed = await kernel.reply(kernel.execute("{'a': 1}['b']"))
    assert failed["content"]["status"] == "error"
    msg_id = kernel.execute("from silo_nb.notebook.last_error import last_traceback\nprint(last_traceback())")
    await kernel.reply(msg_id)
    text = stdout(kernel, msg_id)
    assert "{'a': 1}['b']" in text and "KeyError: 'b'" in text and "ipykernel" not in text, text
    assert f'File "Cell In[{failed["content"]["execution_count"]}]", line 1' in text, text
    await kernel.run("%%prompt --error\nfix this", timeout=60)
    count = (await kernel.run("21 * 2"))["content"]["execution_count"]
    msg_id = kernel.execute(f"%%prompt\nexplain {{In[{count}]}} = {{Out[{count}]}}\n", cell_id="history-cell")
    await kernel.reply(msg_id, timeout=60)
    msg_id = kernel.execute(
        "import silo_nb\n"
        "journal = await silo_nb.agents.sessions.read_journal(demo.session_id)\n"
        "prompts = [u for u in journal if u.kind == 'user_message_chunk']\n"
        "print([a['name'] for a in prompts[-2].raw.get('attachments', [])]); print(prompts[-1].text)"
    )
    await kernel.reply(msg_id)
    # --error sent the traceback and the cell that raised (its In[n], named @In[n] in the bubble).
    raised = f"@In[{failed['content']['execution_count']}]"
    assert stdout(kernel, msg_id).splitlines() == [f"['last_error', '{raised}']", "explain 21 * 2 = 42"]
