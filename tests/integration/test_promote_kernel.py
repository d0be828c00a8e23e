"""A real kernel: ``fork_grid`` from the notebook's session, ``%silo promote`` of one fork, a prompt that
continues it, then after a restart the same ``%silo connect`` cell resumes the promoted fork."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Workspace
from tests.integration.kernel_harness import KernelHarness, kernel_env, silo_kernel

SHOW = "print(json.dumps([mine.session_id, mine.resume_outcome, {texts}]))"
TEXTS = "[u.text for u in mine.journal_updates() if u.kind == 'user_message_chunk']"


async def said(kernel: KernelHarness, code: str, timeout: float = 60) -> object:
    reply = await kernel.run(code, timeout)
    printed = kernel.outputs(reply["parent_header"]["msg_id"], "stream")
    return json.loads("".join(m["content"].get("text", "") for m in printed))


async def test_promoted_fork_is_resumed_after_a_restart(workspace: Workspace, tmp_path: Path) -> None:
    env = kernel_env(workspace, demo_delay="0.01")
    runs = tmp_path / "runs"
    show = "import json\n" + SHOW.format(texts=TEXTS)
    async with silo_kernel(workspace, env, "%silo connect demo --as mine") as first:
        await first.run("%%prompt mine\nthe parent question", timeout=60)
        grid = (
            "import json, silo_nb\n"
            "df = await silo_nb.fork_grid(mine, prompts=['a fork question'],"
            " configs=[{}, {'model': 'demo-smart'}],"
            f" repeats=2, name='fg', folder={str(runs)!r}, progress=False)\n"
            "print(json.dumps([sorted(set(df['cell_status'])), df.set_index('cell')['session'].to_dict()]))"
        )
        statuses, sessions = await said(first, grid, timeout=120)  # type: ignore[misc]
        assert statuses == ["finished"] and len(set(sessions.values())) == 4
        parent, _, _ = await said(first, show)  # type: ignore[misc]
        assert parent not in sessions.values()
        await first.run(f"%silo promote fg p0-demo-c1-r0 --folder {runs}", timeout=60)
        await first.run("%%prompt mine\nafter the promote", timeout=60)
        promoted = await said(first, show)
        assert promoted[0] == sessions["p0-demo-c1-r0"]  # type: ignore[index]
        texts = ["the parent question", "a fork question", "after the promote"]
        assert promoted[2] == texts  # type: ignore[index]
    async with silo_kernel(workspace, env, "%silo connect demo --as mine") as kernel:
        back = await said(kernel, show)
        assert back == [sessions["p0-demo-c1-r0"], "resumed", texts]
        await kernel.run("%%prompt mine\nand on", timeout=60)
        assert (await said(kernel, show))[2] == [*texts, "and on"]  # type: ignore[index]
