"""Journals are interchangeable with Silo's (silo-agents-api.md §3.1): checked both ways with a reader
written here from Silo's documented format, independent of silo_nb's own models."""

from __future__ import annotations

import json
import re
from typing import Any

import silo_nb
from tests.conftest import Workspace

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
UPDATE_KEYS = {
    "kind",
    "text",
    "content",
    "messageId",
    "timestamp",
    "toolCall",
    "plan",
    "usage",
    "raw",
    "subagentId",
    "delegation",
    "backgroundTask",
}
CONTENT_KEYS = {"type", "text", "mimeType", "uri", "name"}
TOOL_CALL_KEYS = {
    "toolCallId",
    "title",
    "kind",
    "status",
    "content",
    "locations",
    "rawInput",
    "rawOutput",
    "subagent",
    "handedOff",
    "backgrounded",
    "parentToolCallId",
    "subagentId",
}
TOOL_CONTENT_KEYS = {"type", "content", "path", "oldText", "newText", "terminalId"}


def silo_reader(line: str) -> dict[str, Any]:
    """Silo's ``parseJournalLines`` contract, strictly: documented camelCase keys only, no nulls."""
    value = json.loads(line)
    assert isinstance(value, dict) and isinstance(value["kind"], str)
    assert set(value) <= UPDATE_KEYS, set(value) - UPDATE_KEYS
    assert isinstance(value["raw"], dict)
    for key in ("text", "messageId"):
        assert key not in value or isinstance(value[key], str)
    if "timestamp" in value:
        assert ISO.match(value["timestamp"]), value["timestamp"]
    if "content" in value:
        assert set(value["content"]) <= CONTENT_KEYS and isinstance(value["content"]["type"], str)
    if "toolCall" in value:
        call = value["toolCall"]
        assert set(call) <= TOOL_CALL_KEYS, set(call) - TOOL_CALL_KEYS
        assert isinstance(call["toolCallId"], str)
        for item in call.get("content", []):
            assert set(item) <= TOOL_CONTENT_KEYS and isinstance(item["type"], str)
        for location in call.get("locations", []):
            assert isinstance(location["path"], str)
    if "plan" in value:
        assert all(isinstance(entry["content"], str) for entry in value["plan"])
    if "usage" in value:
        usage = value["usage"]
        assert isinstance(usage["used"], (int, float)) and isinstance(usage["size"], (int, float))
        assert "cost" not in usage or set(usage["cost"]) == {"amount", "currency"}

    def no_nulls(obj: Any, path: str) -> None:
        if path.endswith(".raw") or path.endswith("rawInput") or path.endswith("rawOutput"):
            return
        if isinstance(obj, dict):
            for key, item in obj.items():
                assert item is not None, f"{path}.{key} is null"
                no_nulls(item, f"{path}.{key}")
        elif isinstance(obj, list):
            for item in obj:
                no_nulls(item, path)

    no_nulls(value, "")
    return value


async def test_project_journal_reads_through_a_silo_format_reader(workspace: Workspace) -> None:
    svc = workspace.service()
    (workspace.folder / "notes.md").write_text("old line\n", encoding="utf-8")  # the demo agent appends to it
    async with await svc.sessions.connect("demo") as handle:
        handle.on_permission(lambda request: request.respond(request.options[0].option_id))
        await handle.prompt([{"type": "text", "text": "make a plan and edit the notes"}])
        path = svc.sessions.journals.path(svc.workspace_id, handle.session_id)
    lines = [silo_reader(line) for line in path.read_text().splitlines()]
    kinds = {line["kind"] for line in lines}
    assert {
        "user_message_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "usage_update",
    } <= kinds
    prompt = lines[0]
    assert prompt["messageId"] == "silo-journal-user-1"
    assert prompt["raw"] == {"synthesized": True, "cwd": str(workspace.folder)}  # paths show relative to it
    assert prompt["content"] == {"type": "text", "text": "make a plan and edit the notes"}
    diff = next(
        c
        for line in lines
        if "toolCall" in line
        for c in line["toolCall"].get("content", [])
        if c["type"] == "diff"
    )
    assert (
        diff["oldText"] == "old line\n" and diff["newText"] == "old line\n- make a plan and edit the notes\n"
    )
    assert list(prompt)[:4] == ["kind", "text", "content", "messageId"]  # Silo's key order


SILO_WRITTEN = [
    {
        "kind": "user_message_chunk",
        "text": "hi",
        "content": {"type": "text", "text": "hi"},
        "messageId": "silo-journal-user-1",
        "timestamp": "2026-09-01T10:00:00.000Z",
        "raw": {"synthesized": True},
    },
    {
        "kind": "agent_thought_chunk",
        "text": "hmm",
        "content": {"type": "text", "text": "hmm"},
        "messageId": "silo-msg-1",
        "raw": {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}},
    },
    {
        "kind": "tool_call",
        "toolCall": {
            "toolCallId": "t1",
            "title": "Edit a.py",
            "kind": "edit",
            "status": "pending",
            "content": [{"type": "diff", "path": "/w/a.py", "newText": "x = 1\n"}],
            "locations": [{"path": "/w/a.py", "line": 3}],
            "rawInput": {"file": "a.py"},
        },
        "raw": {"sessionUpdate": "tool_call", "toolCallId": "t1"},
    },
    {"kind": "plan", "plan": [], "raw": {"sessionUpdate": "plan", "entries": []}},
    {
        "kind": "usage_update",
        "usage": {"used": 5300, "size": 200000, "cost": {"amount": 0.04, "currency": "USD"}},
        "raw": {"sessionUpdate": "usage_update", "used": 5300, "size": 200000},
    },
    {"kind": "subagent_spawned", "subagentId": "w1", "raw": {"sessionUpdate": "subagent_spawned"}},
]


async def test_a_silo_written_journal_reads_back(workspace: Workspace) -> None:
    svc = workspace.service()
    path = svc.sessions.journals.path(svc.workspace_id, "claude-abc")
    path.parent.mkdir(parents=True)
    body = "\n".join(json.dumps(line, separators=(",", ":")) for line in SILO_WRITTEN) + "\n"
    path.write_text(body + '{"kind":"agent_message_chunk","text":"torn')  # a crash mid-write
    journal = await svc.sessions.read_journal("claude-abc")
    assert [u.kind for u in journal] == [line["kind"] for line in SILO_WRITTEN]
    user, thought, tool, plan, usage, spawned = journal
    assert user.timestamp == "2026-09-01T10:00:00.000Z" and user.raw == {"synthesized": True}
    assert thought.message_id == "silo-msg-1" and thought.text == "hmm"
    assert tool.tool_call is not None and tool.tool_call.locations is not None
    assert tool.tool_call.content is not None and tool.tool_call.content[0].old_text is None
    assert tool.tool_call.locations[0].line == 3 and tool.tool_call.raw_input == {"file": "a.py"}
    assert plan.plan == ()  # a real, empty plan
    assert usage.usage is not None and usage.usage.cost is not None and usage.usage.cost.amount == 0.04
    assert spawned.kind == "subagent_spawned"  # unknown kinds are kept
    # Written back by silo_nb, every line still reads through Silo's reader.
    for update in journal:
        silo_reader(json.dumps(update.to_json()))


async def test_read_journal_round_trips_any_agent_chosen_id(workspace: Workspace) -> None:
    svc = workspace.service()
    for session_id in ["plain-id", "with/slash", "../escape", "ünïcode id", ".hidden", "~tilde", "x.jsonl"]:
        writer = svc.sessions.journals.writer(svc.sessions.journals.path(svc.workspace_id, session_id), [])
        writer.append(silo_nb.AgentSessionUpdate(kind="agent_message_chunk", text=session_id, raw={}))
        writer.flush()
        assert [u.text for u in await svc.sessions.read_journal(session_id)] == [session_id]
        assert writer.path.parent == svc.data_dir / "workspaces" / svc.workspace_id / "chat-sessions"
