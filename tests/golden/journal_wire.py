"""The journal golden fixture: wire lines in, journal lines out (issue 10: the journal is what it was).

Usage, from the repository root (re-record only on purpose, then review the diff)::

    PYTHONPATH=. .venv/bin/python -m tests.golden.journal_wire

- ``journal/wire.jsonl``: raw ``session/update`` lines as an agent writes them, byte for byte: every update
  of the recorded conversations of this folder, plus lines made for the purpose (id-less chunk runs, tool
  calls with diffs, plans, usage, unknown kinds, a lone surrogate, integers beyond 64 bits, ``NaN``, floats,
  deep nesting, lines that must be skipped).
- ``journal/expected.jsonl``: the journal a real session wrote for them (an in-process agent writes the
  lines verbatim during one prompt turn). First recorded by the code before issue 10's rewrite of the
  per-update path (pydantic validation, ``model_dump`` + ``json.dumps``); ``test_journal_golden.py`` checks
  that today's code writes lines that parse to the same values, and reads them back to the same models.
- The synthesized prompt line's ``timestamp`` is fixed (:data:`FIXED_TIME`).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import silo_nb
from silo_nb.acp import InProcessTransport
from silo_nb.sessions.profiles import AgentProfile
from tests.agents.scripted import Peer, scripted_agent
from tests.golden.record import HERE, load

FOLDER = HERE / "journal"
WIRE = FOLDER / "wire.jsonl"
EXPECTED = FOLDER / "expected.jsonl"
SESSION_ID = "golden-1"
FIXED_TIME = "2025-01-01T00:00:00.000Z"


def _update_line(update: Any, session_id: str = SESSION_ID) -> str:
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": update},
    }
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"k": value}
    return value


def made_lines(*, conversations: bool = True) -> list[str]:
    """The wire lines of the fixture, in order (the recorded conversations' updates first; without
    ``conversations``, only the lines made for the purpose)."""
    lines: list[str] = []
    for path in sorted(HERE.glob("*.jsonl")) if conversations else ():
        for line in load(path):
            message = line["message"]
            if line["from"] == "agent" and message.get("method") == "session/update":
                lines.append(_update_line(message["params"]["update"]))
    text = {"type": "text", "text": ""}
    for kind, words in (
        ("agent_thought_chunk", ["Thinking", " hard"]),
        ("agent_message_chunk", ["Hel", "lo"]),
    ):
        lines += [_update_line({"sessionUpdate": kind, "content": {**text, "text": w}}) for w in words]
    diff = {"type": "diff", "path": "/p/a.py", "oldText": "x = 1\n", "newText": "x = 2\n"}
    new_file = {"type": "diff", "path": "/p/new.py", "oldText": None, "newText": "print('é 😀')\n"}
    lines += [
        _update_line(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call-1",
                "title": "Edit a.py",
                "kind": "edit",
                "status": "pending",
                "content": [diff, {"type": "content", "content": {"type": "text", "text": "note"}}, 7],
                "locations": [{"path": "/p/a.py", "line": 3}, {"path": "/p/b.py", "line": 0}, {"x": 1}],
                "rawInput": {"path": "/p/a.py", "edits": [{"old": "x = 1", "new": "x = 2"}], "n": None},
            }
        ),
        _update_line({"sessionUpdate": "agent_message_chunk", "content": {**text, "text": "after a tool"}}),
        _update_line(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call-1",
                "status": "completed",
                "content": [new_file, {"type": "terminal", "terminalId": "t-1"}],
                "rawOutput": {"ok": True, "size": 1.5e-7, "big": 1e20, "neg": -0.0},
            }
        ),
        _update_line(
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": "Read", "status": "completed", "priority": "high"},
                    {"content": "", "status": "pending"},
                    {"content": "Write"},
                ],
            }
        ),
        _update_line(
            {
                "sessionUpdate": "usage_update",
                "used": 1200,
                "size": 200000,
                "cost": {"amount": 0.25, "currency": "USD"},
            }
        ),
        _update_line({"sessionUpdate": "session_info_update", "title": "  Golden title  "}),
        _update_line({"sessionUpdate": "vendor_thing", "payload": [1, "two", {"three": 3}]}),
        _update_line(
            {
                "sessionUpdate": "user_message_chunk",
                "messageId": "u-1",
                "content": {
                    "type": "resource",
                    "resource": {"uri": "file:///p/a.py", "text": "x", "mimeType": "text/x-python"},
                },
            }
        ),
        _update_line(
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            }
        ),
        _update_line(
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {**text, "text": 'quotes " \\ \n tab\t nul\u0000 \u2028'},
            }
        ),
        _update_line(
            {"sessionUpdate": "tool_call", "toolCallId": "deep", "title": "Deep", "rawInput": _nested(150)}
        ),
        _update_line(
            {"sessionUpdate": "agent_message_chunk", "content": {**text, "text": "for another session"}},
            "other",
        ),
        _update_line({"sessionUpdate": 5}),
        _update_line({"noKind": True}),
    ]
    # Lines json.dumps would not write as-is: raw text, byte for byte.
    chunk = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"golden-1","update":%s}}'
    msg = '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s"}'
    lines += [
        chunk % (msg % "lone \\ud800 surrogate" + "}"),
        chunk % (msg % "pair \\ud83d\\ude00 ok" + "}"),
        chunk
        % (
            '{"sessionUpdate":"tool_call","toolCallId":"big","rawInput":{"n":123456789012345678901234567890,'
            '"m":-9223372036854775809,"u":18446744073709551615,"s":"12345678901234567890123"}}'
        ),
        chunk % '{"sessionUpdate":"usage_update","used":NaN,"size":100}',
        chunk
        % '{"sessionUpdate":"usage_update","used":10,"size":Infinity,"cost":{"amount":1,"currency":"EUR"}}',
        chunk % '{"sessionUpdate":"tool_call_update","toolCallId":"big","rawOutput":[NaN,-Infinity,1e400]}',
        chunk % (msg % "dup" + ',"content":{"type":"text","text":"last wins"}}'),
        chunk % ("[" * 600 + "]" * 600),
        chunk % ('{"sessionUpdate":"agent_message_chunk","n":' + "7" * 5000 + "}"),
        chunk % (msg % "\\u00e9 escaped" + ',"messageId":"m-9"}'),
        chunk % (msg % "the end" + "}"),
    ]
    return lines


def read_journal_file(path: Path) -> list[str]:
    """The lines of a file split at newlines only (``str.splitlines`` also splits at U+2028, which the wire
    and the journal carry unescaped)."""
    return path.read_text(encoding="utf-8").split("\n")[:-1]


async def journal_for(wire: list[str]) -> list[str]:
    """The journal lines a real session writes when an agent sends ``wire`` during one prompt turn."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "config" / "silo").mkdir(parents=True)
        profile = {"id": "golden", "label": "Golden", "command": "true"}
        (root / "config" / "silo" / "profiles.json").write_text(json.dumps({"profiles": [profile]}))

        async def turn(peer: Peer, _text: str) -> None:
            await peer._send.send("".join(line + "\n" for line in wire).encode("utf-8", "surrogatepass"))

        async def factory(_profile: AgentProfile, _cwd: str) -> InProcessTransport:
            return InProcessTransport(scripted_agent(turn, session_id=SESSION_ID))

        service = silo_nb.AgentsService(
            workspace_dir=root,
            config_dirs=[root / "config"],
            data_dir=root / "data",
            transport_factory=factory,
        )
        handle = await service.sessions.connect("golden")
        await handle.prompt([{"type": "text", "text": "go"}])
        await handle.aclose()
        path = service.sessions.journals.path(handle.workspace_id, handle.session_id)
        lines = read_journal_file(path)
    first = json.loads(lines[0])
    assert first["kind"] == "user_message_chunk" and "timestamp" in first
    first["timestamp"] = FIXED_TIME
    return [json.dumps(first, ensure_ascii=False, separators=(",", ":")), *lines[1:]]


async def record() -> None:
    FOLDER.mkdir(exist_ok=True)
    wire = made_lines()
    WIRE.write_text("".join(line + "\n" for line in wire), encoding="utf-8")
    journal = await journal_for(wire)
    EXPECTED.write_text("".join(line + "\n" for line in journal), encoding="utf-8")
    print(f"{WIRE.name}: {len(wire)} lines; {EXPECTED.name}: {len(journal)} lines")


if __name__ == "__main__":
    if sys.argv[1:]:
        sys.exit("usage: python -m tests.golden.journal_wire")
    asyncio.run(record())
