"""How turns end, and what reads their end: the ``turn_end`` line and its readers (restore, export), a
turn cut short by dispose, late agent work, an update after the journal is let go, and a connect its
caller abandons."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from silo_nb.model.errors import AgentSessionError
from silo_nb.notebook.cell_turns import display_restored
from silo_nb.notebook.journal_index import JournalIndexes
from silo_nb.notebook.render.page import export_turns
from silo_nb.sessions.journal.locks import PROCESS_LOCKS
from silo_nb.sessions.session import turn_tracker as turns_module
from tests.agents.scripted import NEVER, Peer, scripted_service
from tests.conftest import Workspace


async def test_late_agent_work_after_a_cancelled_turn_keeps_the_turn_cancelled(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turns_module, "TURN_QUIESCENCE_SECONDS", 0.2)
    peers: list[Peer] = []

    async def turn(peer: Peer, _text: str) -> str:
        peers.append(peer)
        await peer.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}})
        return "cancelled"

    svc = scripted_service(workspace, turn)
    with anyio.fail_after(20):
        handle = await svc.sessions.connect("scripted")
        live: list[Any] = []
        listener = handle.on_transcript(live.append)
        result = await handle.prompt([{"type": "text", "text": "go"}], cell_id="c1")
        listener.dispose()
        assert result.stop_reason == "cancelled"
        # The agent goes on after answering (a late chunk): an agent-initiated turn, ended by quiescence.
        await peers[0].update(
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "late"}}
        )
        while sum(u.kind == "turn_end" for u in await svc.sessions.read_journal(handle.session_id)) < 2:
            await anyio.sleep(0.05)
        journals = svc.sessions.journals
        path = journals.path(handle.workspace_id, handle.session_id)
        restored = JournalIndexes().find_turn(journals, path, "c1", "go")
        journal = await svc.sessions.read_journal(handle.session_id)
        await handle.aclose()
    assert restored is not None
    state = display_restored(restored, metadata={}, meta=None)
    assert state.status == "cancelled", "the restored cell shows the turn as it ended live"
    assert [e.text for e in state.entries if getattr(e, "role", "") == "agent"] == ["a"]
    first = next(t for t in export_turns(journal) if t.number == 1)
    assert first.state.status == "cancelled", "the export shows the turn as it ended live"


# -- a connect cancelled by its caller -----------------------------------------------------------------


async def test_a_connect_cancelled_while_applying_session_config_leaves_nothing(workspace: Workspace) -> None:
    mode = {
        "id": "mode",
        "name": "Mode",
        "category": "mode",
        "type": "select",
        "currentValue": "ask",
        "options": [{"value": "ask", "name": "Ask"}, {"value": "code", "name": "Code"}],
    }
    asked = anyio.Event()

    async def never(_peer: Peer, _params: dict[str, Any]) -> Any:
        asked.set()
        return NEVER

    async def echo(_peer: Peer, _text: str) -> None:
        return None

    svc = scripted_service(
        workspace,
        echo,
        profile={"session_config": {"mode": "code"}, "connect_timeout": 30},
        new_result={"configOptions": [mode]},
        methods={"session/set_config_option": never},
    )
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:

            async def connect() -> None:
                await svc.sessions.connect("scripted")

            tg.start_soon(connect)
            await asked.wait()
            tg.cancel_scope.cancel()  # the caller gives up (a cell interrupted, a wait_for timing out)
    assert svc.get_state() == [], "a connect that never returned left a session registered"
    with anyio.move_on_after(10):  # the agent and the lock go in the background (slow on a loaded CI)
        while PROCESS_LOCKS.held():
            await anyio.sleep(0.05)
    assert not PROCESS_LOCKS.held(), "and its journal locked"


async def test_a_turn_cut_short_by_dispose_is_journaled_as_it_ended_live(workspace: Workspace) -> None:
    async def slow(peer: Peer, _text: str) -> None:
        await peer.update(
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "working"}}
        )
        await anyio.sleep(30)

    svc = scripted_service(workspace, slow)
    seen: list[BaseException] = []
    with anyio.fail_after(10):
        handle = await svc.sessions.connect("scripted")

        async def prompt() -> None:
            try:
                await handle.prompt([{"type": "text", "text": "go"}], cell_id="c1")
            except AgentSessionError as exc:
                seen.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt)
            await anyio.sleep(0.3)
            await handle.aclose()  # %silo disconnect while the turn runs
        journal = await svc.sessions.read_journal(handle.session_id)
    assert seen, "the live turn failed"
    ends = [u.raw for u in journal if u.kind == "turn_end"]
    assert [(e["outcome"], e.get("error")) for e in ends] == [("failed", str(seen[0]))]
    restored = display_restored(journal, metadata={}, meta=None)
    assert restored.status == "failed" and restored.error == str(seen[0])


async def test_an_update_handled_after_the_journal_is_let_go_writes_no_line(workspace: Workspace) -> None:
    async def turn(peer: Peer, _text: str) -> None:
        await peer.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}})

    svc = scripted_service(workspace, turn)
    with anyio.fail_after(10):
        handle = await svc.sessions.connect("scripted")
        await handle.prompt([{"type": "text", "text": "go"}], cell_id="c1")
        path = handle.core.journal.writer.path
        await handle.aclose()  # the journal is flushed and let go (its lock may go to another kernel)
        before = path.read_bytes()
        # What the reader still hands over after that (the rest of a chunk, past a yield): the streamed
        # path must drop it as ``_record`` does, not append to a writer the handle no longer owns.
        late = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "late"}}
        handle.core.inbound.on_session_update({"sessionId": handle.session_id, "update": late})
        await anyio.sleep(0.6)  # past the writer's flush delay
    assert path.read_bytes() == before
