"""The demo agent's scripted turns (keywords, slash commands, permissions, pacing), served in-process."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.demo_agent.helpers import (
    CWD,
    EDIT_SEQUENCE,
    answer_with,
    bounded,
    collapse,
    kinds,
    message_text,
    running_agent,
    updates,
    wire_sequence,
)


@pytest.mark.asyncio
@bounded
async def test_plain_turn_update_sequence(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        prompt = "Hello there, please show me what a demo reply looks like today"
        seen, response = await wire.prompt(session_id, prompt)
        assert response["result"]["stopReason"] == "end_turn"
        usage = response["result"]["usage"]  # the turn's tokens (ACP usage): what the footer shows
        assert usage["inputTokens"] + usage["outputTokens"] == 1200 + 4 * len(prompt)
        assert usage["cachedReadTokens"] == 0 and usage["totalTokens"] == 1200 + 4 * len(prompt)
        assert all(m["params"]["sessionId"] == session_id for m in seen)
        sequence = kinds(seen)
        assert collapse(sequence) == [
            "agent_thought_chunk",
            "agent_message_chunk",
            "session_info_update",
            "usage_update",
        ]
        assert 1 <= sequence.count("agent_thought_chunk") <= 3
        assert 5 <= sequence.count("agent_message_chunk") <= 10
        thought_ids = {u["messageId"] for u in updates(seen) if u["sessionUpdate"] == "agent_thought_chunk"}
        message_ids = {u["messageId"] for u in updates(seen) if u["sessionUpdate"] == "agent_message_chunk"}
        assert len(thought_ids) == 1 and next(iter(thought_ids)).startswith("think-")
        assert len(message_ids) == 1 and next(iter(message_ids)).startswith("msg-")
        reply = message_text(seen)
        assert reply.startswith(f"You asked: **{prompt}**")
        assert "no model" in reply and "- *edit*:" in reply  # no keyword: it says what it can do
        assert "```python" not in reply  # no code was asked for
        info = updates(seen)[-2]
        assert info == {"sessionUpdate": "session_info_update", "title": prompt[:40]}
        usage = updates(seen)[-1]
        assert usage["size"] == 200000 and usage["used"] > 0
        assert usage["cost"]["currency"] == "USD" and isinstance(usage["cost"]["amount"], float)

        seen2, response2 = await wire.prompt(session_id, "and again")
        assert response2["result"]["stopReason"] == "end_turn"
        assert "session_info_update" not in kinds(seen2), "only the first prompt names the session"
        assert updates(seen2)[-1]["used"] > usage["used"]
        assert updates(seen2)[-1]["cost"]["amount"] > usage["cost"]["amount"]
        assert not message_ids & {u.get("messageId") for u in updates(seen2)}, (
            "message ids are fresh per turn"
        )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("option_id", "status", "closing"),
    [
        ("allow-once", "completed", "Edited notes.md."),
        ("allow-always", "completed", "Edited notes.md."),
        ("reject-once", "failed", "Left notes.md unchanged."),
    ],
)
@bounded
async def test_edit_turn_with_permission(tmp_path: Path, option_id: str, status: str, closing: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    before = "# Notes\n\n- 344 penguins measured"  # no final newline: the edit adds one
    (project / "notes.md").write_text(before, encoding="utf-8")
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session(str(project))
        seen, response = await wire.prompt(
            session_id, "Please edit my notes:  two  bill lengths are missing", answer_with(option_id)
        )
        assert response["result"]["stopReason"] == "end_turn"
        assert wire_sequence(seen) == EDIT_SEQUENCE

        notes = f"{project}/notes.md"
        tool_updates = [u for u in updates(seen) if u["sessionUpdate"].startswith("tool_call")]
        read, started, finished, edit, outcome = tool_updates
        assert read == {
            "sessionUpdate": "tool_call",
            "toolCallId": read["toolCallId"],
            "title": "Read notes.md",
            "kind": "read",
            "status": "pending",
            "locations": [{"path": notes, "line": 1}],
        }
        assert read["toolCallId"].startswith("call-")
        assert started == {
            "sessionUpdate": "tool_call_update",
            "toolCallId": read["toolCallId"],
            "status": "in_progress",
        }
        assert finished["status"] == "completed" and finished["toolCallId"] == read["toolCallId"]
        assert finished["content"] == [{"type": "content", "content": {"type": "text", "text": before}}]
        after = before + "\n- two bill lengths are missing\n"
        diff = {"type": "diff", "path": notes, "newText": after, "oldText": before}
        assert edit["toolCallId"] != read["toolCallId"]
        assert (edit["kind"], edit["title"], edit["status"], edit["content"]) == (
            "edit",
            "Edit notes.md",
            "pending",
            [diff],
        )
        assert outcome == {
            "sessionUpdate": "tool_call_update",
            "toolCallId": edit["toolCallId"],
            "status": status,
        }
        # The permission has a visible effect: allowed, the file holds the diff's new text; rejected, it
        # is byte for byte what it was.
        assert (project / "notes.md").read_text(encoding="utf-8") == (
            after if status == "completed" else before
        )

        [permission] = [m for m in seen if m.get("method") == "session/request_permission"]
        assert permission["params"] == {
            "sessionId": session_id,
            "toolCall": {
                "toolCallId": edit["toolCallId"],
                "title": "Edit notes.md",
                "kind": "edit",
                "status": "pending",
                "content": [diff],
            },
            "options": [
                {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
                {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
            ],
        }
        after_permission = seen[seen.index(permission) + 1 :]
        assert message_text(after_permission) == closing


@pytest.mark.asyncio
@bounded
async def test_fail_keyword_answers_internal_error(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        seen, response = await wire.prompt(session_id, "please FAIL now")
        assert response["error"] == {
            "code": -32603,
            "message": "Internal error",
            "data": {"details": "the demo agent was asked to fail"},
        }
        assert kinds(seen).count("agent_message_chunk") == 1


@pytest.mark.asyncio
@bounded
async def test_refuse_keyword_stops_with_refusal(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        seen, response = await wire.prompt(session_id, "refuse this")
        assert response["result"] == {"stopReason": "refusal"}
        assert collapse(kinds(seen)) == ["agent_thought_chunk", "agent_message_chunk"]
        assert kinds(seen).count("agent_message_chunk") == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("text", ["make a plan", "/plan"])
@bounded
async def test_plan_updates(tmp_path: Path, text: str) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        seen, response = await wire.prompt(session_id, text)
        assert response["result"]["stopReason"] == "end_turn"
        plans = [u["entries"] for u in updates(seen) if u["sessionUpdate"] == "plan"]
        assert [e["priority"] for e in plans[0]] == ["high", "medium", "low"]
        assert [[e["status"] for e in entries] for entries in plans] == [
            ["pending", "pending", "pending"],
            ["in_progress", "pending", "pending"],
            ["completed", "in_progress", "pending"],
            ["completed", "completed", "in_progress"],
            ["completed", "completed", "completed"],
        ]
        assert all(e["content"] for e in plans[0])


@pytest.mark.asyncio
@bounded
async def test_attachments_and_mode_keyword(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        await wire.call(
            "session/set_config_option", {"sessionId": session_id, "configId": "model", "value": "demo-smart"}
        )
        resource = {
            "type": "resource",
            "resource": {"uri": "file:///p/main.py", "mimeType": "text/x-python", "text": "x"},
        }
        seen, response = await wire.prompt(session_id, "Which mode are you in?", extra=[resource])
        assert response["result"]["stopReason"] == "end_turn"
        reply = message_text(seen)
        assert "I see 1 attachment: file:///p/main.py" in reply
        assert "`ask`" in reply and "`demo-smart`" in reply


@pytest.mark.asyncio
@bounded
async def test_slash_commands_title_explain_clear(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        seen, response = await wire.prompt(session_id, "/title My renamed session")
        assert response["result"]["stopReason"] == "end_turn"
        assert updates(seen)[0] == {"sessionUpdate": "session_info_update", "title": "My renamed session"}
        assert message_text(seen) == "Renamed."

        seen, response = await wire.prompt(session_id, "/explain the greet function")
        assert response["result"]["stopReason"] == "end_turn"
        assert "the greet function" in message_text(seen)
        assert "plan" not in kinds(seen), "'explain' must not trigger the plan keyword"

        seen, response = await wire.prompt(session_id, "/clear")
        assert message_text(seen) == "Cleared."
        replayed, loaded = await wire.call(
            "session/load", {"sessionId": session_id, "cwd": CWD, "mcpServers": []}
        )
        assert "result" in loaded
        assert updates(replayed) == [], "history is empty after /clear"
        _, listed = await wire.call("session/list", {})
        assert listed["result"]["sessions"][0]["title"] == "My renamed session"


@pytest.mark.asyncio
@bounded
async def test_prompt_for_unknown_session(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        _, response = await wire.prompt("demo-000000000000", "hi")
        assert response["error"]["code"] == -32602
        assert response["error"]["message"] == "Session not found: demo-000000000000"


@pytest.mark.asyncio
@bounded
async def test_delay_flag_paces_the_stream(tmp_path: Path) -> None:
    async with running_agent(tmp_path, delay="0.02") as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        started = time.monotonic()
        seen, response = await wire.prompt(session_id, "hi")
        assert response["result"]["stopReason"] == "end_turn"
        assert time.monotonic() - started >= 0.02 * (len(updates(seen)) - 1)


@pytest.mark.parametrize(
    ("prompt", "said", "not_said"),
    [
        ("Make a plan, then edit the notes", ["(*plan*)", "(*edit*)", "notes.md"], ["```python", "- *fix*:"]),
        ("Write a function that greets", ["(*code*)", "def greet"], ["(*plan*)"]),
        ("Summarise the penguin data", ["- *look into NAME*:", "try: `look into df`"], ["def greet"]),
        ("Which mode are you in?", ["(*mode*)", "Current mode: `ask`"], ["- *plan*:"]),
    ],
)
@pytest.mark.asyncio
@bounded
async def test_the_reply_follows_the_prompt(
    tmp_path: Path, prompt: str, said: list[str], not_said: list[str]
) -> None:
    """Issue 35: every prompt got the same block (a heading, fixed keywords, a greet function)."""
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        seen, _ = await wire.prompt(session_id, prompt, answer_with("reject-once"))
        reply = message_text(seen)
    assert reply.startswith(f"You asked: **{prompt}**")
    for text in said:
        assert text in reply, (text, reply)
    for text in not_said:
        assert text not in reply, (text, reply)
