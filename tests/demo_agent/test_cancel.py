"""Cancelling and closing while a demo turn runs; requests answered concurrently with a turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.demo_agent.helpers import (
    AgentWire,
    Message,
    answer_with,
    bounded,
    kinds,
    message_text,
    running_agent,
    wire_sequence,
)


@pytest.mark.asyncio
@bounded
async def test_edit_turn_cancelled_while_permission_pending(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()

        async def cancel_then_answer(wire: AgentWire, request: Message) -> Message:
            await wire.notify("session/cancel", {"sessionId": session_id})
            return {"outcome": {"outcome": "cancelled"}}

        seen, response = await wire.prompt(session_id, "use a tool", cancel_then_answer)
        assert response["result"] == {"stopReason": "cancelled"}
        sequence = wire_sequence(seen)
        assert sequence[-1] == "session/request_permission"
        assert "usage_update" not in sequence

        # The connection is still healthy and the next turn runs normally.
        _, response2 = await wire.prompt(session_id, "hello")
        assert response2["result"]["stopReason"] == "end_turn"


@pytest.mark.asyncio
@bounded
async def test_permission_outcome_cancelled_without_session_cancel(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        seen, response = await wire.prompt(session_id, "edit", answer_with(None))
        assert response["result"] == {"stopReason": "cancelled"}
        assert wire_sequence(seen)[-1] == "session/request_permission"


@pytest.mark.asyncio
@bounded
async def test_slow_turn_cancelled_mid_turn(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        request_id = await wire.request(
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": "go SLOW please"}]},
        )
        seen: list[Message] = []
        while "Counting slowly" not in message_text(seen):
            seen.append(await wire.recv())
        for _ in range(2):
            seen.append(await wire.recv())
        await wire.notify("session/cancel", {"sessionId": session_id})
        rest, response = await wire.until_response(request_id)
        assert response["result"] == {"stopReason": "cancelled"}
        counted = message_text(seen + rest).split("Counting slowly:")[1].split()
        assert 2 <= len(counted) < 40
        assert "usage_update" not in kinds(rest)


@pytest.mark.asyncio
@bounded
async def test_cancel_right_behind_the_prompt_in_one_write(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        prompt = {
            "jsonrpc": "2.0",
            "id": 99,
            "method": "session/prompt",
            "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]},
        }
        cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
        await wire.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in (prompt, cancel)))
        _, response = await wire.until_response(99)
        assert response["result"] == {"stopReason": "cancelled"}


@pytest.mark.asyncio
@bounded
async def test_session_close_cancels_the_running_turn(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        prompt_id = await wire.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "slow"}]}
        )
        first = await wire.recv()
        assert first["method"] == "session/update"
        close_id = await wire.request("session/close", {"sessionId": session_id})
        responses: dict[int, Message] = {}
        while len(responses) < 2:
            message = await wire.recv()
            if "method" not in message:
                responses[message["id"]] = message
        assert responses[prompt_id]["result"] == {"stopReason": "cancelled"}
        assert responses[close_id]["result"] == {}
        _, after = await wire.prompt(session_id, "hello")
        assert after["error"]["code"] == -32602


@pytest.mark.asyncio
@bounded
async def test_set_config_option_mid_turn_is_answered_concurrently(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        prompt_id = await wire.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "slow"}]}
        )
        set_id = await wire.request(
            "session/set_config_option", {"sessionId": session_id, "configId": "mode", "value": "code"}
        )
        seen, response = await wire.until_response(set_id)
        assert response["result"]["configOptions"][0]["currentValue"] == "code"
        assert all(m["method"] == "session/update" for m in seen), "the prompt is still running"
        await wire.notify("session/cancel", {"sessionId": session_id})
        _, prompt_response = await wire.until_response(prompt_id)
        assert prompt_response["result"] == {"stopReason": "cancelled"}
