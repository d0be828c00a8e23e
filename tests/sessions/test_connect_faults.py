"""Issue 8, items 4 and 5: every wait in ``connect`` is under ``connect_timeout``; a ``session/load``
replay under an adopted id is kept, and a replay with nothing in it never wipes a journal.

Agents are in-process scripted ones (``tests/agents/scripted.py``): the behaviour is about the protocol.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.sessions.journal.locks import JournalLocks
from tests.agents.scripted import NEVER, Handler, Peer, scripted_service
from tests.conftest import Workspace

MODE_OPTION = {
    "id": "mode",
    "name": "Mode",
    "category": "mode",
    "type": "select",
    "currentValue": "ask",
    "options": [{"value": "ask", "name": "Ask"}, {"value": "code", "name": "Code"}],
}


async def echo(peer: Peer, text: str) -> None:
    await peer.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


async def never(_peer: Peer, _params: dict[str, Any]) -> Any:
    return NEVER


async def test_session_config_that_never_answers_is_bounded_by_connect_timeout(workspace: Workspace) -> None:
    svc = scripted_service(
        workspace,
        echo,
        profile={"session_config": {"mode": "code"}, "connect_timeout": 0.5},
        new_result={"configOptions": [MODE_OPTION]},
        methods={"session/set_config_option": never},
    )
    with anyio.fail_after(10), pytest.raises(silo_nb.AgentSessionError) as caught:  # a hang guard
        await svc.sessions.connect("scripted")
    assert "no answer within 0.5 s while applying session_config" in str(caught.value)
    assert svc.get_state() == []  # nothing left registered, the agent shut down


async def test_session_config_that_answers_is_applied_within_the_budget(workspace: Workspace) -> None:
    async def accept(_peer: Peer, params: dict[str, Any]) -> Any:
        return {"configOptions": [{**MODE_OPTION, "currentValue": params["value"]}]}

    svc = scripted_service(
        workspace,
        echo,
        profile={"session_config": {"mode": "code"}, "connect_timeout": 5},
        new_result={"configOptions": [MODE_OPTION]},
        methods={"session/set_config_option": accept},
    )
    async with await svc.sessions.connect("scripted") as handle:
        assert {o.id: o.current_value for o in handle.config_options} == {"mode": "code"}


def loading(replay: list[dict[str, Any]], *, under: str, answer_id: str | None) -> Handler:
    """A ``session/load`` that replays ``replay`` under session id ``under`` and answers ``answer_id``."""

    async def load(peer: Peer, _params: dict[str, Any]) -> Any:
        peer.session_id = under
        for update in replay:
            await peer.update(update)
        return {"sessionId": answer_id} if answer_id else {}

    return load


def chunk(kind: str, text: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


async def first_turn(svc: silo_nb.AgentsService) -> str:
    async with await svc.sessions.connect("scripted") as handle:
        await handle.prompt([{"type": "text", "text": "hello"}])
        return handle.session_id


def journal(svc: silo_nb.AgentsService, session_id: str) -> list[dict[str, Any]]:
    path = svc.sessions.journals.path(svc.workspace_id, session_id)
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_replay_under_the_adopted_id_is_the_transcript(workspace: Workspace) -> None:
    """claude-agent-acp adopts a new id on load and replays under it: the replay must not be dropped as
    "another session" (it was, and the reconciled journal came out empty)."""
    replay = [chunk("user_message_chunk", "hello"), chunk("agent_message_chunk", "hello (replayed)")]
    svc = scripted_service(
        workspace,
        echo,
        profile={},
        agent_capabilities={"loadSession": True},
        methods={"session/load": loading(replay, under="forked-9", answer_id="forked-9")},
    )
    old_id = await first_turn(svc)
    async with await svc.sessions.connect("scripted", resume={"session_id": old_id}) as handle:
        assert handle.resume_outcome == "resumed" and handle.session_id == "forked-9"
        # The replay is the transcript; the first turn's journaled outcome is carried after it.
        assert [u.text for u in handle.journal] == ["hello", "hello (replayed)", None]
        assert handle.journal[-1].kind == "turn_end" and handle.journal[-1].raw["outcome"] == "finished"
    assert [line.get("text") for line in journal(svc, "forked-9")] == ["hello", "hello (replayed)", None]


async def test_a_load_that_replays_nothing_keeps_the_journal(workspace: Workspace) -> None:
    replay = [{"sessionUpdate": "available_commands_update", "availableCommands": []}]
    svc = scripted_service(
        workspace,
        echo,
        profile={},
        agent_capabilities={"loadSession": True},
        methods={"session/load": loading(replay, under="scripted-1", answer_id=None)},
    )
    old_id = await first_turn(svc)
    before = journal(svc, old_id)
    assert [line["kind"] for line in before] == ["user_message_chunk", "agent_message_chunk", "turn_end"]
    async with await svc.sessions.connect("scripted", resume={"session_id": old_id}) as handle:
        assert handle.resume_outcome == "resumed"
        assert [u.text for u in handle.journal][:2] == ["hello", "hello"]
    after = journal(svc, old_id)
    assert after[:3] == before  # the conversation is still there, byte for byte
    assert [line["kind"] for line in after[3:]] == ["available_commands_update"]


HOLDER = """
import sys, time
from pathlib import Path
from silo_nb.sessions.journal import JournalFiles
files = JournalFiles(Path(sys.argv[1]))
writer = files.writer(files.path(sys.argv[2], sys.argv[3]), [])
print("holding", flush=True)
time.sleep(60)
"""


async def test_a_second_kernel_on_the_same_session_is_refused_and_the_journal_is_intact(
    workspace: Workspace,
) -> None:
    """Issue 8, item 9: two kernels on one session would interleave one journal; the second is refused."""
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        await handle.prompt([{"type": "text", "text": "hello"}])
        session_id = handle.session_id
    path = svc.sessions.journals.path(svc.workspace_id, session_id)
    before = path.read_bytes()
    async with await anyio.open_process(
        [sys.executable, "-c", HOLDER, str(svc.data_dir), svc.workspace_id, session_id]
    ) as other_kernel:
        assert other_kernel.stdout is not None
        with anyio.fail_after(20):
            assert b"holding" in await other_kernel.stdout.receive()
        with pytest.raises(silo_nb.AgentSessionError) as caught:
            await svc.sessions.connect("demo", resume={"session_id": session_id})
        assert f"is open in another process (pid {other_kernel.pid})" in str(caught.value)
        assert path.read_bytes() == before
        assert svc.get_state() == []
        other_kernel.kill()
    async with await svc.sessions.connect("demo", resume={"session_id": session_id}) as resumed:
        assert resumed.resume_outcome == "resumed"  # the lock went with the process


async def test_the_same_kernel_may_reconnect_while_the_old_handle_closes(workspace: Workspace) -> None:
    svc = workspace.service()
    handle = await svc.sessions.connect("demo")
    await handle.prompt([{"type": "text", "text": "hello"}])
    handle.dispose()  # closing in the background, writer not yet released
    other = workspace.service()  # e.g. the extension's state after %reload_ext
    async with await other.sessions.connect("demo", resume={"session_id": handle.session_id}) as again:
        assert again.resume_outcome == "resumed"
    await handle.aclose()


def test_a_forked_child_does_not_keep_the_journal_lock(tmp_path: Path) -> None:
    """``lockf``, not ``flock``: a child forked without exec (a fork pool, user code) does not inherit the
    lock, so releasing it in the kernel really releases it."""
    path = tmp_path / "s.jsonl"
    locks = JournalLocks()
    locks.acquire(path, "s")
    child = os.fork()
    if child == 0:  # pragma: no cover - the child only waits
        time.sleep(3)
        os._exit(0)
    try:
        locks.release(path)
        probe = (
            "import sys; from pathlib import Path; from silo_nb.sessions.journal.locks import JournalLocks;"
            "JournalLocks().acquire(Path(sys.argv[1]), 's'); print('acquired')"
        )
        result = subprocess.run(
            [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=30, check=False
        )
        assert result.stdout.strip() == "acquired", result.stderr
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
