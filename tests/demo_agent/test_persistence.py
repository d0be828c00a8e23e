"""Sessions persisted in --state-dir: load, resume and list across two agents served in one process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.demo_agent.helpers import CWD, answer_with, bounded, kinds, running_agent, updates


@pytest.mark.asyncio
@bounded
async def test_load_replays_history_from_an_earlier_process(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as first:
        await first.initialize()
        session_id, _ = await first.new_session()
        turn1, _ = await first.prompt(session_id, "hello")
        turn2, _ = await first.prompt(session_id, "edit please", answer_with("allow-once"))
        await first.call(
            "session/set_config_option", {"sessionId": session_id, "configId": "mode", "value": "code"}
        )
        assert await first.stop() == 0

    async with running_agent(tmp_path) as second:
        await second.initialize()
        replayed, response = await second.call(
            "session/load", {"sessionId": session_id, "cwd": CWD, "mcpServers": []}
        )
        assert all(
            m["method"] == "session/update" and m["params"]["sessionId"] == session_id for m in replayed
        )
        replay = updates(replayed)
        user_chunks = [u for u in replay if u["sessionUpdate"] == "user_message_chunk"]
        assert [u["content"] for u in user_chunks] == [
            {"type": "text", "text": "hello"},
            {"type": "text", "text": "edit please"},
        ]
        assert [u for u in replay if u["sessionUpdate"] != "user_message_chunk"] == updates(turn1) + updates(
            turn2
        )
        assert replay[0]["sessionUpdate"] == "user_message_chunk"
        options = response["result"]["configOptions"]
        assert [o["currentValue"] for o in options] == ["code", "demo-fast", False]
        follow_up = await second.recv()
        assert follow_up["params"]["update"]["sessionUpdate"] == "available_commands_update"

        _, response = await second.call(
            "session/load", {"sessionId": "demo-ffffffffffff", "cwd": CWD, "mcpServers": []}
        )
        assert response["error"]["code"] == -32002
        assert response["error"]["message"] == "Session not found: demo-ffffffffffff"


@pytest.mark.asyncio
@bounded
async def test_resume_answers_without_replay_and_continues(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as first:
        await first.initialize()
        session_id, _ = await first.new_session()
        turn1, _ = await first.prompt(session_id, "hello")
        used_before = updates(turn1)[-1]["used"]

    async with running_agent(tmp_path) as second:
        await second.initialize()
        seen, response = await second.call(
            "session/resume", {"sessionId": session_id, "cwd": CWD, "mcpServers": []}
        )
        assert seen == [], "resume must not replay"
        assert [o["id"] for o in response["result"]["configOptions"]] == ["mode", "model", "verbose"]
        follow_up = await second.recv()
        assert follow_up["params"]["update"]["sessionUpdate"] == "available_commands_update"

        turn2, response = await second.prompt(session_id, "and more")
        assert response["result"]["stopReason"] == "end_turn"
        assert "session_info_update" not in kinds(turn2), "the resumed session already has a title"
        assert updates(turn2)[-1]["used"] > used_before
        turn1_ids = {u.get("messageId") for u in updates(turn1)} - {None}
        assert not turn1_ids & {u.get("messageId") for u in updates(turn2)}

        _, response = await second.call("session/resume", {"sessionId": "demo-ffffffffffff", "cwd": CWD})
        assert response["error"]["code"] == -32002


@pytest.mark.asyncio
@bounded
async def test_list_sessions_newest_first_and_filtered_by_cwd(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        older, _ = await wire.new_session("/work/a")
        await wire.prompt(older, "first session")
        newer, _ = await wire.new_session("/work/b")

    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        _, response = await wire.call("session/list", {})
        sessions = response["result"]["sessions"]
        assert [s["sessionId"] for s in sessions] == [newer, older]
        assert sessions[1]["title"] == "first session"
        assert sessions[1]["cwd"] == "/work/a"
        assert "title" not in sessions[0]
        assert sessions[0]["updatedAt"] > sessions[1]["updatedAt"]
        _, response = await wire.call("session/list", {"cwd": "/work/a"})
        assert [s["sessionId"] for s in response["result"]["sessions"]] == [older]
        assert set(response["result"]["sessions"][0]) == {"sessionId", "cwd", "title", "updatedAt"}


async def test_the_store_is_private_whatever_the_umask(tmp_path: Path) -> None:
    """Issue 21: the store in the temp folder was world-readable (folder 0755, files 0644): another local
    user read the prompts. A folder that is not ours, or that others may write, is not used at all."""
    import os
    import stat

    old = os.umask(0)
    try:
        state = tmp_path / "state"
        async with running_agent(state) as agent:
            await agent.initialize()
            session_id, _ = await agent.new_session()
            await agent.prompt(session_id, "a private prompt")
            assert await agent.stop() == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    files = list(state.iterdir())
    assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    async with running_agent(shared) as agent:
        await agent.initialize()
        session_id, _ = await agent.new_session()
        await agent.prompt(session_id, "not kept in a folder others may write")
        assert await agent.stop() == 0
    assert list(shared.iterdir()) == []
