"""Activity and attention (silo-agents-api.md §4): the §4.2 table through ``AgentsService``, and
agent-initiated turns (§4.3) with real agents that work on their own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.sessions.session import turn_tracker as turns_module
from tests.conftest import Workspace, raw_agent

Step = Callable[[silo_nb.AgentsService, str], None]


def registered(svc: silo_nb.AgentsService, *, witnessed: bool = False) -> str:
    svc.is_witnessed = lambda _id: witnessed
    svc.board.register(
        silo_nb.AgentInfo(id="chat:s1", workspace_id=svc.workspace_id, title="T", session_id="s1")
    )
    return "chat:s1"


def begin(svc: silo_nb.AgentsService, sid: str) -> None:
    svc.board.begin_turn(sid)


def finish(svc: silo_nb.AgentsService, sid: str) -> None:
    svc.board.end_turn(sid, "finished")


def cancel(svc: silo_nb.AgentsService, sid: str) -> None:
    svc.board.end_turn(sid, "cancelled")


def fail(svc: silo_nb.AgentsService, sid: str) -> None:
    svc.board.end_turn(sid, "failed")


def block(svc: silo_nb.AgentsService, sid: str) -> None:
    svc.board.blocked(sid)


def answer(svc: silo_nb.AgentsService, sid: str) -> None:
    svc.board.unblocked(sid)


def ack(svc: silo_nb.AgentsService, sid: str) -> None:
    svc.acknowledge(sid)


# (steps, witnessed, expected activity, expected needs_attention, idle_since set?)
TABLE: list[tuple[list[Step], bool, str, bool, bool]] = [
    ([], False, "idle", False, False),
    ([begin], False, "working", False, False),
    ([begin, finish], False, "idle", True, True),
    ([begin, finish], True, "idle", False, True),
    ([begin, cancel], False, "idle", False, True),
    ([begin, fail], False, "error", False, True),
    ([begin, finish, begin, fail], False, "error", False, True),  # a new turn cleared it; failing leaves it
    ([begin, finish, ack], False, "idle", False, True),
    ([begin, block], False, "blocked", True, False),
    ([begin, block], True, "blocked", False, False),
    ([begin, block, answer], False, "working", False, False),
    ([begin, block, cancel], False, "idle", True, True),  # attention from the block stays on cancel
    ([begin, block, fail], False, "error", True, True),
    ([begin, block, answer, finish], False, "idle", True, True),
    ([begin, finish, finish], False, "idle", True, True),  # end when not working: attention unchanged
]


@pytest.mark.parametrize(("steps", "witnessed", "activity", "attention", "idle"), TABLE)
def test_activity_table(
    workspace: Workspace, steps: list[Step], witnessed: bool, activity: str, attention: bool, idle: bool
) -> None:
    svc = workspace.service()
    sid = registered(svc, witnessed=witnessed)
    for step in steps:
        step(svc, sid)
    (info,) = svc.get_state()
    assert (info.activity, info.needs_attention, info.idle_since is not None) == (activity, attention, idle)
    assert (info.attention_since is not None) == attention
    assert (info.working_since is not None) == (activity in ("working", "blocked"))


def test_acknowledge_keeps_activity_and_idle_since(workspace: Workspace) -> None:
    svc = workspace.service()
    sid = registered(svc)
    begin(svc, sid)
    finish(svc, sid)
    before = svc.get_state()[0]
    svc.acknowledge(sid)
    after = svc.get_state()[0]
    assert after.activity == before.activity and after.idle_since == before.idle_since
    assert after.needs_attention is False and after.attention_since is None


def test_subscribe_gets_whole_list_only_on_change(workspace: Workspace) -> None:
    svc = workspace.service()
    calls: list[list[silo_nb.AgentInfo]] = []
    svc.subscribe(calls.append)
    assert calls == []  # no initial call
    sid = registered(svc)
    assert len(calls) == 1
    svc.acknowledge(sid)  # nothing pending: no change, no call
    assert len(calls) == 1
    begin(svc, sid)
    assert calls[-1][0].activity == "working"
    other = silo_nb.AgentsService(workspace_dir=workspace.root, config_dirs=[], data_dir=workspace.data)
    assert other.get_state() == []


def test_state_is_per_workspace_unless_all(workspace: Workspace) -> None:
    svc = workspace.service()
    registered(svc)
    svc.board.register(silo_nb.AgentInfo(id="chat:elsewhere", workspace_id="other-ws", title="X"))
    assert [i.id for i in svc.get_state()] == ["chat:s1"]
    assert [i.id for i in svc.get_state(all_workspaces=True)] == ["chat:s1", "chat:elsewhere"]


def test_reveal_calls_the_callback_and_ignores_unknown_ids(workspace: Workspace) -> None:
    svc = workspace.service()
    revealed: list[str] = []
    svc.board.register(
        silo_nb.AgentInfo(id="chat:r", workspace_id=svc.workspace_id, title="R"),
        reveal=lambda: revealed.append("r"),
    )
    svc.reveal("chat:r")
    svc.reveal("chat:unknown")
    assert revealed == ["r"]


async def wait_for(predicate: Callable[[], Any], timeout: float = 10) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.01)


async def test_agent_initiated_turn_ends_by_quiescence(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turns_module, "TURN_QUIESCENCE_SECONDS", 0.4)
    workspace.add_profiles(raw_agent("self-starts"))
    svc = workspace.service()
    async with await svc.sessions.connect("raw-self-starts") as handle:
        seen: list[str] = []
        svc.subscribe(lambda state: seen.append(state[0].activity))
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        await wait_for(lambda: svc.get_state()[0].activity == "working")
        # The tool call in flight keeps the turn open past the quiet period; then it completes.
        await wait_for(lambda: any(u.text == "CI is green." for u in updates))
        await wait_for(lambda: svc.get_state()[0].activity == "idle")
        info = svc.get_state()[0]
        assert info.needs_attention is True  # nobody was looking
        assert seen[0] == "working" and seen[-1] == "idle"
        journal = await svc.sessions.read_journal(handle.session_id)
        # Flushed at the turn's end, which is journaled too (a synthesized turn_end line).
        assert [u.kind for u in journal][-2:] == ["agent_message_chunk", "turn_end"]
        end = journal[-1].raw
        assert end["synthesized"] is True and end["outcome"] == "finished" and "stopReason" not in end
        assert end["agent"] == "Raw fake (self-starts)" and end["durationMs"] >= 0


async def test_agent_initiated_turn_ends_at_the_explicit_marker(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turns_module, "TURN_QUIESCENCE_SECONDS", 60)
    workspace.add_profiles(raw_agent("marks-turn-end"))
    svc = workspace.service()
    async with await svc.sessions.connect("raw-marks-turn-end"):
        await wait_for(lambda: svc.get_state()[0].activity == "working")
        await wait_for(lambda: svc.get_state()[0].activity == "idle", timeout=5)  # not the 60 s quiescence
        assert svc.get_state()[0].needs_attention is True


async def test_handshake_updates_never_open_a_turn(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        await wait_for(lambda: handle.commands)
        assert svc.get_state()[0].activity == "idle"  # available_commands_update is metadata
