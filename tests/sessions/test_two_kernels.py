"""Issue 21, item 1: another kernel (another process) can take nothing from a session a kernel is writing.

Kernel A is a real second process (``PROMPTING_KERNEL``: a service with the demo agent in-process) that
prompts a session 30 times; this test process is kernel B. Discarding, carrying (``--fresh``) or
removing that session's journal from B takes the same cross-process lock a resume takes, so each is
refused while A writes, and A's 30 prompts all reach its journal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

import silo_nb
from silo_nb.model.kinds import USER_PROMPT_KIND
from tests.conftest import Workspace

PROMPTS = 30

# Kernel A: prompts 4 times, says its session id, waits for a line on stdin, prompts 26 more times.
PROMPTING_KERNEL = """
import functools, sys
from pathlib import Path
import anyio
import silo_nb
from silo_nb.acp import InProcessTransport
from silo_nb_agents.demo import serve

async def demo(profile, cwd):
    return InProcessTransport(functools.partial(serve, argv=[]), name="demo agent")

async def main():
    svc = silo_nb.AgentsService(
        workspace_dir=Path(sys.argv[1]), config_dirs=[], data_dir=Path(sys.argv[2]), transport_factory=demo
    )
    async with await svc.sessions.connect("demo") as handle:
        for number in range(int(sys.argv[3])):
            if number == 4:
                print(handle.session_id, flush=True)
                await anyio.to_thread.run_sync(sys.stdin.readline)
            await handle.prompt([{"type": "text", "text": f"prompt {number}"}])
    print("done", flush=True)

anyio.run(main)
"""


def prompts_in(path: Path) -> list[str]:
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        value = json.loads(line)
        if value.get("kind") == USER_PROMPT_KIND:
            found.append(value.get("text", ""))
    return found


@pytest.mark.parametrize("how", ["discard", "carry", "remove"])
async def test_another_kernel_cannot_discard_carry_or_remove_a_journal_being_written(
    workspace: Workspace, how: str
) -> None:
    svc = workspace.service()
    async with await anyio.open_process(
        [sys.executable, "-c", PROMPTING_KERNEL, str(workspace.folder), str(svc.data_dir), str(PROMPTS)]
    ) as kernel_a:
        assert kernel_a.stdout is not None and kernel_a.stdin is not None
        with anyio.fail_after(60):
            session_id = (await kernel_a.stdout.receive()).decode().strip()
        path = svc.sessions.journals.path(svc.workspace_id, session_id)
        with pytest.raises(silo_nb.AgentSessionError) as caught:
            if how == "remove":
                await svc.sessions.forget(session_id, profile_id="demo", journal=True)
            else:
                await svc.sessions.connect(
                    "demo", resume={"session_id": session_id, "start_fresh": True, "transcript": how}
                )
        assert f"is open in another process (pid {kernel_a.pid})" in str(caught.value)
        assert path.exists()
        await kernel_a.stdin.send(b"go\n")
        with anyio.fail_after(60):
            said = b""
            while b"done" not in said:
                said += await kernel_a.stdout.receive()
        assert await kernel_a.wait() == 0
    assert prompts_in(path) == [f"prompt {number}" for number in range(PROMPTS)]
    assert svc.get_state() == []
    svc.sessions.journals.close()


async def test_discard_after_the_other_kernel_is_gone_deletes_the_journal(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        await handle.prompt([{"type": "text", "text": "hello"}])
        old = handle.session_id
    path = svc.sessions.journals.path(svc.workspace_id, old)
    resume = {"session_id": old, "start_fresh": True, "transcript": "discard"}
    async with await svc.sessions.connect("demo", resume=resume) as fresh:
        assert fresh.resume_outcome == "new"
        assert not path.exists() or fresh.session_id == old


async def test_an_agent_choosing_a_lone_surrogate_session_id_is_journaled(workspace: Workspace) -> None:
    """Issue 21: a ``session/new`` answering ``"\\ud800…"`` (valid JSON) raised a raw ``UnicodeEncodeError``
    on the way to the journal's file name; now the id is encoded like any other, and read back."""
    from tests.agents.scripted import Peer, scripted_service

    async def turn(peer: Peer, _text: str) -> None:
        await peer.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}})

    svc = scripted_service(workspace, turn, session_id="odd-\ud800-id")
    async with await svc.sessions.connect("scripted") as handle:
        await handle.prompt([{"type": "text", "text": "hello"}])
        assert handle.session_id == "odd-\ud800-id"
    updates = await svc.sessions.read_journal("odd-\ud800-id")
    assert [u.text for u in updates if u.kind == "agent_message_chunk"] == ["ok"]
