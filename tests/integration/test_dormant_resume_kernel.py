"""A real kernel: after a restart, ``%silo agents`` lists the earlier session and its Resume button,
clicked as the browser would (a comm message, no cell running), reconnects it under its old name."""

from __future__ import annotations

from tests.conftest import Workspace
from tests.integration.kernel_harness import KernelHarness, button_opened, kernel_env, silo_kernel


def printed(kernel: KernelHarness, msg_id: str) -> str:
    return "".join(m["content"].get("text", "") for m in kernel.outputs(msg_id, "stream"))


async def test_resume_button_in_a_restarted_kernel(workspace: Workspace) -> None:
    env = kernel_env(workspace, demo_delay="0.01")
    async with silo_kernel(workspace, env, "%silo connect demo --as mine") as first:
        await first.run("%%prompt\nhello from the first kernel")
        reply = await first.run("print(mine.session_id)")
        session_id = printed(first, reply["parent_header"]["msg_id"]).strip()
    async with silo_kernel(workspace, env) as kernel:
        listing = kernel.execute("%silo agents")
        await kernel.reply(listing)
        bundle = next(m for m in kernel.outputs(listing, "display_data"))["content"]["data"]
        assert (
            "Earlier sessions" in bundle["text/plain"] and "Silo demo agent · dormant" in bundle["text/plain"]
        )
        opened = await kernel.wait_for(button_opened("Resume"))
        kernel.click(opened["content"]["comm_id"])
        check = (
            "import asyncio\nfor _ in range(300):\n    if 'mine' in globals(): break\n"
            "    await asyncio.sleep(0.1)\nprint(mine.session_id, mine.resume_outcome, mine.is_live)"
        )
        reply = await kernel.run(check, timeout=60)
        said = printed(kernel, reply["parent_header"]["msg_id"]).split()
        assert said == [session_id, "resumed", "True"], said
        reply = await kernel.run("%%prompt mine\nand hello again", timeout=60)
        reply = await kernel.run(
            "import silo_nb\njournal = await silo_nb.agents.sessions.read_journal(mine.session_id)\n"
            "print(sum(u.kind == 'user_message_chunk' for u in journal))"
        )
        assert printed(kernel, reply["parent_header"]["msg_id"]).strip() == "2"
