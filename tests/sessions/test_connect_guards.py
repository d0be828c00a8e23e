"""The suspected defects left open in tests/RELIABILITY.md (issue 8, items 5 and 9), each shown first:

- two live handles on one session *in the same kernel* (the journal lock is per process) both wrote one
  journal, and the second's placeholder replaced (then removed) the first's status entry;
- a ``session/load`` that fails after replaying part of a transcript (an error, the agent dying, the
  connect timing out) left the replayed lines appended to the journal;
- a connect that timed out kept the journal writer (and its lock) for the kernel's whole life.

Agents are in-process scripted ones (``tests/agents/scripted.py``): the behaviour is about the protocol
and the journal, not about processes.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.acp import AcpRpcError
from silo_nb.sessions.journal.locks import PROCESS_LOCKS
from tests.agents.scripted import NEVER, Handler, Peer, scripted_service
from tests.conftest import Workspace


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


async def echo(peer: Peer, prompt: str) -> None:
    await peer.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": prompt}})


# -- two live handles in one kernel -------------------------------------------------------------------


async def test_a_second_live_handle_on_a_session_in_the_same_kernel_is_refused(workspace: Workspace) -> None:
    svc = workspace.service()
    first = await svc.sessions.connect("demo")
    await first.prompt(text("hello"))
    path = svc.sessions.journals.path(svc.workspace_id, first.session_id)
    before = path.read_bytes()
    for service in (svc, workspace.service()):  # the same service, or another one (after %reload_ext)
        with pytest.raises(silo_nb.AgentSessionError) as caught:
            await service.sessions.connect("demo", resume={"session_id": first.session_id})
        message = str(caught.value)
        assert f'Session "{first.session_id}" is already open in this kernel' in message
        assert "aclose()" in message and "%silo disconnect" in message
    assert path.read_bytes() == before  # nothing written by the refused connects
    assert [info.id for info in svc.get_state()] == [first.id]  # the live handle's status entry stays
    assert first.is_live
    await first.prompt(text("still here"))
    prompts = [
        u.text for u in await svc.sessions.read_journal(first.session_id) if u.kind == "user_message_chunk"
    ]
    assert prompts == ["hello", "still here"]  # one writer, one journal, in order
    await first.aclose()
    async with await svc.sessions.connect("demo", resume={"session_id": first.session_id}) as again:
        assert again.resume_outcome == "resumed"  # once the first is closed, the session may be resumed


async def test_two_simultaneous_resumes_of_one_session_let_one_through(workspace: Workspace) -> None:
    """The first connect has no agent connection yet while it sets up: it is noted as connecting, so
    the second is refused instead of both writing one journal."""
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as first:
        await first.prompt(text("hello"))
        session_id = first.session_id
    results = await asyncio.gather(
        svc.sessions.connect("demo", resume={"session_id": session_id}),
        svc.sessions.connect("demo", resume={"session_id": session_id}),
        return_exceptions=True,
    )
    handles = [r for r in results if isinstance(r, silo_nb.AgentSessionHandle)]
    errors = [r for r in results if isinstance(r, BaseException)]
    try:
        assert len(handles) == 1 and len(errors) == 1, results
        assert isinstance(errors[0], silo_nb.AgentSessionError)
        assert "already open in this kernel (a connect in progress)" in str(errors[0])
        assert handles[0].resume_outcome == "resumed"
    finally:
        for handle in handles:
            await handle.aclose()
    async with await svc.sessions.connect("demo", resume={"session_id": session_id}) as again:
        assert again.resume_outcome == "resumed"  # nothing left noted once both connects ended


async def test_a_handle_whose_agent_died_does_not_block_a_reconnect(workspace: Workspace) -> None:
    svc = workspace.service()
    first = await svc.sessions.connect("demo")
    await first.prompt(text("hello"))
    assert first.core.wiring.connection is not None
    await first.core.wiring.connection.aclose(
        "the agent went away"
    )  # as if it crashed: not live, not disposed
    assert not first.is_live and not first.disposed
    async with await svc.sessions.connect("demo", resume={"session_id": first.session_id}) as again:
        assert again.resume_outcome == "resumed"


# -- a load that fails after a partial replay ---------------------------------------------------------

REPLAY = [
    {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hello"}},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "half a repl"}},
]


def replaying_then(ending: str) -> Handler:
    """``session/load`` that replays two updates, then fails in the way ``ending`` says."""

    async def load(peer: Peer, _params: dict[str, Any]) -> Any:
        for update in REPLAY:
            await peer.update(update)
        await anyio.sleep(0.05)  # the replay has reached the client before the failure
        if ending == "error":
            raise AcpRpcError(-32603, "load broke half-way")
        if ending == "crash":
            raise RuntimeError("agent crashed during the replay")
        return NEVER  # "hang": never answers

    return load


async def first_turn(svc: silo_nb.AgentsService) -> tuple[str, bytes]:
    async with await svc.sessions.connect("scripted") as handle:
        await handle.prompt(text("hello"))
        session_id = handle.session_id
    return session_id, svc.sessions.journals.path(svc.workspace_id, session_id).read_bytes()


def scripted_load(workspace: Workspace, ending: str) -> silo_nb.AgentsService:
    return scripted_service(
        workspace,
        echo,
        profile={"connect_timeout": 1.0},
        agent_capabilities={"loadSession": True},
        methods={"session/load": replaying_then(ending)},
    )


async def test_a_load_that_fails_after_a_partial_replay_leaves_the_journal_as_it_was(
    workspace: Workspace,
) -> None:
    svc = scripted_load(workspace, "error")
    session_id, before = await first_turn(svc)
    handle = await svc.sessions.connect("scripted", resume={"session_id": session_id})
    assert handle.resume_outcome == "journal-only"
    assert [u.text for u in handle.journal if u.text] == ["hello", "hello"]  # not the half replay
    await handle.aclose()
    await anyio.sleep(0.4)  # past the journal's flush debounce
    assert svc.sessions.journals.path(svc.workspace_id, session_id).read_bytes() == before


@pytest.mark.parametrize("ending", ["crash", "hang"])
async def test_a_connect_that_fails_during_a_replay_leaves_the_journal_and_its_lock(
    workspace: Workspace, ending: str
) -> None:
    svc = scripted_load(workspace, ending)
    session_id, before = await first_turn(svc)
    path = svc.sessions.journals.path(svc.workspace_id, session_id)
    with anyio.fail_after(10), pytest.raises(silo_nb.AgentSessionError):  # a hang guard
        await svc.sessions.connect("scripted", resume={"session_id": session_id})
    await anyio.sleep(0.4)  # past the journal's flush debounce
    assert path.read_bytes() == before
    assert path not in PROCESS_LOCKS.held()  # the failed connect let go of the journal
    assert svc.sessions.journals.locks.live_state() == (set(), set())
    assert svc.get_state() == []
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line.get("text") for line in lines if line.get("text")] == ["hello", "hello"]
