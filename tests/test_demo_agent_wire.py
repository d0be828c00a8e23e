"""Wire-level tests of ``python -m silo_nb.demo_agent``: a real subprocess spoken to in raw JSON lines."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
TEST_TIMEOUT = 20.0
RECV_TIMEOUT = 5.0
CWD = "/home/demo/project"

Message = dict[str, Any]
RequestHandler = Callable[["AgentWire", Message], Awaitable[Message | None]]


def bounded(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., Coroutine[Any, Any, None]]:
    """Fail a test instead of hanging: the whole body runs under ``asyncio.wait_for``."""

    @functools.wraps(test)
    async def wrapper(*args: Any, **kwargs: Any) -> None:
        await asyncio.wait_for(test(*args, **kwargs), TEST_TIMEOUT)

    return wrapper


class AgentWire:
    """A tiny raw JSON-RPC peer for the demo agent subprocess."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._next_id = 1

    async def send(self, message: Message) -> None:
        assert self.proc.stdin is not None
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        self.proc.stdin.write(line.encode("utf-8"))
        await self.proc.stdin.drain()

    async def recv(self, within: float = RECV_TIMEOUT) -> Message:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), within)
        assert line, "the agent closed stdout"
        assert line.endswith(b"\n")
        message = json.loads(line)
        assert isinstance(message, dict)
        assert message["jsonrpc"] == "2.0"
        return message

    async def request(self, method: str, params: Message) -> int:
        request_id = self._next_id
        self._next_id += 1
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    async def notify(self, method: str, params: Message) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def answer(self, request: Message, result: Message) -> None:
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def until_response(
        self, request_id: int, on_request: RequestHandler | None = None
    ) -> tuple[list[Message], Message]:
        """Collect everything up to the response to ``request_id``; agent requests go to ``on_request``."""
        seen: list[Message] = []
        while True:
            message = await self.recv()
            if message.get("id") == request_id and "method" not in message:
                return seen, message
            seen.append(message)
            if "method" in message and "id" in message:
                assert on_request is not None, f"unexpected agent request {message}"
                result = await on_request(self, message)
                if result is not None:
                    await self.answer(message, result)

    async def call(
        self, method: str, params: Message, on_request: RequestHandler | None = None
    ) -> tuple[list[Message], Message]:
        return await self.until_response(await self.request(method, params), on_request)

    async def initialize(self, boolean: bool = True) -> Message:
        capabilities: Message = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        if boolean:
            capabilities["session"] = {"configOptions": {"boolean": {}}}
        _, response = await self.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": capabilities,
                "clientInfo": {"name": "wire-test", "version": "0"},
            },
        )
        result: Message = response["result"]
        return result

    async def new_session(self, cwd: str = CWD) -> tuple[str, Message]:
        """Create a session and swallow the available_commands_update that follows it."""
        seen, response = await self.call("session/new", {"cwd": cwd, "mcpServers": []})
        assert seen == []
        result: Message = response["result"]
        follow_up = await self.recv()
        assert updates([follow_up])[0]["sessionUpdate"] == "available_commands_update"
        return result["sessionId"], result

    async def prompt(
        self,
        session_id: str,
        text: str,
        on_request: RequestHandler | None = None,
        extra: list[Message] | None = None,
    ) -> tuple[list[Message], Message]:
        blocks: list[Message] = [{"type": "text", "text": text}, *(extra or [])]
        return await self.call("session/prompt", {"sessionId": session_id, "prompt": blocks}, on_request)

    async def stop(self) -> int:
        assert self.proc.stdin is not None
        if not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        return await asyncio.wait_for(self.proc.wait(), 5.0)


@contextlib.asynccontextmanager
async def running_agent(state_dir: Path, *flags: str, delay: str = "0") -> AsyncIterator[AgentWire]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "silo_nb.demo_agent",
        "--delay",
        delay,
        "--state-dir",
        str(state_dir),
        *flags,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=str(REPO_ROOT),
        env=env,
        limit=64 * 1024 * 1024,
    )
    wire = AgentWire(proc)
    try:
        yield wire
    finally:
        if proc.returncode is None:
            try:
                await wire.stop()
            except (TimeoutError, OSError):
                proc.kill()
                await proc.wait()


def updates(messages: list[Message]) -> list[Message]:
    """The ``update`` objects of the session/update notifications among ``messages``."""
    return [m["params"]["update"] for m in messages if m.get("method") == "session/update"]


def kinds(messages: list[Message]) -> list[str]:
    return [u["sessionUpdate"] for u in updates(messages)]


def collapse(sequence: list[str]) -> list[str]:
    """Merge runs of the same kind: [a, a, b, a] -> [a, b, a]."""
    return [kind for i, kind in enumerate(sequence) if i == 0 or sequence[i - 1] != kind]


def message_text(messages: list[Message], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"]["text"] for u in updates(messages) if u["sessionUpdate"] == kind)


def answer_with(option_id: str | None) -> RequestHandler:
    async def handler(wire: AgentWire, request: Message) -> Message | None:
        assert request["method"] == "session/request_permission"
        if option_id is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": option_id}}

    return handler


# --------------------------------------------------------------------------- handshake and setup


@pytest.mark.asyncio
@bounded
async def test_initialize_result(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        result = await wire.initialize()
        assert result == {
            "protocolVersion": 1,
            "agentInfo": {"name": "silo-demo", "title": "Silo demo agent", "version": "1.0"},
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "sessionCapabilities": {"list": {}, "resume": {}, "close": {}},
            },
            "authMethods": [],
        }


@pytest.mark.asyncio
@bounded
async def test_new_session_options_then_commands_after_the_response(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize(boolean=True)
        seen, response = await wire.call("session/new", {"cwd": CWD, "mcpServers": []})
        assert seen == [], "nothing may precede the session/new response"
        result = response["result"]
        assert result["sessionId"].startswith("demo-") and len(result["sessionId"]) == len("demo-") + 12
        options = result["configOptions"]
        assert [o["id"] for o in options] == ["mode", "model", "verbose"]
        mode, model, verbose = options
        assert (mode["type"], mode["category"], mode["currentValue"]) == ("select", "mode", "ask")
        assert [(o["value"], o["name"]) for o in mode["options"]] == [
            ("ask", "Ask"),
            ("code", "Code"),
            ("plan", "Plan"),
        ]
        assert all(o["description"] for o in mode["options"])
        assert (model["type"], model["category"], model["currentValue"]) == ("select", "model", "demo-fast")
        assert [o["value"] for o in model["options"]] == ["demo-fast", "demo-smart"]
        assert verbose == {
            "id": "verbose",
            "name": "Verbose",
            "description": verbose["description"],
            "category": "_demo",
            "type": "boolean",
            "currentValue": False,
        }
        assert result["modes"]["currentModeId"] == "ask"
        assert [m["id"] for m in result["modes"]["availableModes"]] == ["ask", "code", "plan"]
        assert "models" not in result

        follow_up = await wire.recv()
        assert follow_up["method"] == "session/update"
        assert follow_up["params"]["sessionId"] == result["sessionId"]
        commands = follow_up["params"]["update"]
        assert commands["sessionUpdate"] == "available_commands_update"
        assert commands["availableCommands"] == [
            {
                "name": "explain",
                "description": "Explain a piece of code",
                "input": {"hint": "what to explain"},
            },
            {"name": "plan", "description": "Draft a plan"},
            {"name": "title", "description": "Rename this session", "input": {"hint": "new title"}},
            {"name": "clear", "description": "Forget the conversation", "input": None},
        ]


@pytest.mark.asyncio
@bounded
async def test_no_boolean_option_unless_the_client_advertises_it(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize(boolean=False)
        session_id, result = await wire.new_session()
        assert [o["id"] for o in result["configOptions"]] == ["mode", "model"]
        _, response = await wire.call(
            "session/set_config_option", {"sessionId": session_id, "configId": "verbose", "value": True}
        )
        assert response["error"]["code"] == -32602


# --------------------------------------------------------------------------- prompt turns


@pytest.mark.asyncio
@bounded
async def test_plain_turn_update_sequence(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        prompt = "Hello there, please show me what a demo reply looks like today"
        seen, response = await wire.prompt(session_id, prompt)
        assert response["result"] == {"stopReason": "end_turn"}
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
        assert reply.startswith("#")
        assert "\n- " in reply
        assert "```python" in reply and reply.rstrip().endswith("```")
        info = updates(seen)[-2]
        assert info == {"sessionUpdate": "session_info_update", "title": prompt[:40]}
        usage = updates(seen)[-1]
        assert usage["size"] == 200000 and usage["used"] > 0
        assert usage["cost"]["currency"] == "USD" and isinstance(usage["cost"]["amount"], float)

        seen2, response2 = await wire.prompt(session_id, "and again")
        assert response2["result"] == {"stopReason": "end_turn"}
        assert "session_info_update" not in kinds(seen2), "only the first prompt names the session"
        assert updates(seen2)[-1]["used"] > usage["used"]
        assert updates(seen2)[-1]["cost"]["amount"] > usage["cost"]["amount"]
        assert not message_ids & {u.get("messageId") for u in updates(seen2)}, (
            "message ids are fresh per turn"
        )


EDIT_SEQUENCE = [
    "agent_thought_chunk",
    "agent_message_chunk",
    "tool_call",
    "tool_call_update",
    "tool_call",
    "session/request_permission",
    "tool_call_update",
    "agent_message_chunk",
    "session_info_update",
    "usage_update",
]


def wire_sequence(messages: list[Message]) -> list[str]:
    return collapse(
        [
            m["params"]["update"]["sessionUpdate"] if m["method"] == "session/update" else m["method"]
            for m in messages
        ]
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
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        seen, response = await wire.prompt(session_id, "Please edit my notes", answer_with(option_id))
        assert response["result"] == {"stopReason": "end_turn"}
        assert wire_sequence(seen) == EDIT_SEQUENCE

        notes = f"{CWD}/notes.md"
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
        assert finished["content"][0]["type"] == "content"
        assert finished["content"][0]["content"]["type"] == "text"
        diff = {"type": "diff", "path": notes, "oldText": "old line\n", "newText": "new line\n"}
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
        assert response2["result"] == {"stopReason": "end_turn"}


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
        started = time.monotonic()
        await wire.notify("session/cancel", {"sessionId": session_id})
        rest, response = await wire.until_response(request_id)
        assert time.monotonic() - started < 1.0
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
        assert wire.proc.stdin is not None
        wire.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in (prompt, cancel)))
        await wire.proc.stdin.drain()
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
        assert response["result"] == {"stopReason": "end_turn"}
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
        assert response["result"] == {"stopReason": "end_turn"}
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
        assert response["result"] == {"stopReason": "end_turn"}
        assert updates(seen)[0] == {"sessionUpdate": "session_info_update", "title": "My renamed session"}
        assert message_text(seen) == "Renamed."

        seen, response = await wire.prompt(session_id, "/explain the greet function")
        assert response["result"] == {"stopReason": "end_turn"}
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


# --------------------------------------------------------------------------- config options


@pytest.mark.asyncio
@bounded
async def test_set_config_option_valid_and_invalid(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        seen, response = await wire.call(
            "session/set_config_option", {"sessionId": session_id, "configId": "model", "value": "demo-smart"}
        )
        assert seen == []
        options = response["result"]["configOptions"]
        assert [o["id"] for o in options] == ["mode", "model", "verbose"]
        assert [o["currentValue"] for o in options] == ["ask", "demo-smart", False]

        _, response = await wire.call(
            "session/set_config_option",
            {"sessionId": session_id, "configId": "verbose", "type": "boolean", "value": True},
        )
        assert [o["currentValue"] for o in response["result"]["configOptions"]] == ["ask", "demo-smart", True]

        for config_id, value in [("model", "gpt-9"), ("nope", "x"), ("verbose", "yes"), ("mode", True)]:
            _, response = await wire.call(
                "session/set_config_option", {"sessionId": session_id, "configId": config_id, "value": value}
            )
            assert response["error"]["code"] == -32602, (config_id, value)
            assert str(config_id) in response["error"]["message"]

        _, response = await wire.call("session/set_mode", {"sessionId": session_id, "modeId": "plan"})
        assert response["result"] == {}
        _, response = await wire.call(
            "session/set_config_option", {"sessionId": session_id, "configId": "mode", "value": "code"}
        )
        assert [o["currentValue"] for o in response["result"]["configOptions"]] == [
            "code",
            "demo-smart",
            True,
        ]


# --------------------------------------------------------------------------- persistence across processes


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
        assert response["result"] == {"stopReason": "end_turn"}
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


# --------------------------------------------------------------------------- protocol edges and flags


@pytest.mark.asyncio
@bounded
async def test_unknown_method_and_unknown_notification(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.notify("_vendor/something", {"x": 1})
        _, response = await wire.call("_vendor/frobnicate", {})
        assert response["error"] == {
            "code": -32601,
            "message": "Method not found",
            "data": {"method": "_vendor/frobnicate"},
        }
        _, response = await wire.call("session/delete", {"sessionId": "x"})
        assert response["error"]["code"] == -32601


@pytest.mark.asyncio
@bounded
async def test_legacy_modes_variant(tmp_path: Path) -> None:
    async with running_agent(tmp_path, "--legacy-modes") as wire:
        await wire.initialize()
        session_id, result = await wire.new_session()
        assert "configOptions" not in result
        assert result["modes"]["currentModeId"] == "ask"
        assert [m["id"] for m in result["modes"]["availableModes"]] == ["ask", "code", "plan"]
        assert result["models"]["currentModelId"] == "demo-fast"
        assert [(m["modelId"], m["name"]) for m in result["models"]["availableModels"]] == [
            ("demo-fast", "Demo Fast"),
            ("demo-smart", "Demo Smart"),
        ]
        _, response = await wire.call(
            "session/set_config_option", {"sessionId": session_id, "configId": "mode", "value": "code"}
        )
        assert response["error"]["code"] == -32601

        seen, response = await wire.call("session/set_mode", {"sessionId": session_id, "modeId": "code"})
        assert response["result"] == {}
        assert updates(seen) == [{"sessionUpdate": "current_mode_update", "currentModeId": "code"}]
        _, response = await wire.call("session/set_model", {"sessionId": session_id, "modelId": "demo-smart"})
        assert response["result"] == {}
        _, response = await wire.call("session/set_model", {"sessionId": session_id, "modelId": "nope"})
        assert response["error"]["code"] == -32602

        _, response = await wire.call(
            "session/resume", {"sessionId": session_id, "cwd": CWD, "mcpServers": []}
        )
        assert response["result"]["modes"]["currentModeId"] == "code"
        assert response["result"]["models"]["currentModelId"] == "demo-smart"
        assert "configOptions" not in response["result"]


@pytest.mark.asyncio
@bounded
async def test_auth_required_variant(tmp_path: Path) -> None:
    async with running_agent(tmp_path, "--auth-required") as wire:
        result = await wire.initialize()
        assert result["authMethods"] == [
            {"id": "demo-login", "name": "Demo login", "description": "Run `demo login` first"}
        ]
        _, response = await wire.call("session/new", {"cwd": CWD, "mcpServers": []})
        assert response["error"] == {
            "code": -32000,
            "message": "Authentication required: run `demo login` first",
        }


@pytest.mark.asyncio
@bounded
async def test_capability_flags(tmp_path: Path) -> None:
    flags = ("--no-load", "--no-resume", "--no-list", "--no-embedded-context")
    async with running_agent(tmp_path, *flags) as wire:
        capabilities = (await wire.initialize())["agentCapabilities"]
        assert capabilities["loadSession"] is False
        assert capabilities["sessionCapabilities"] == {"close": {}}
        assert capabilities["promptCapabilities"]["embeddedContext"] is False
        session_id, _ = await wire.new_session()
        for method in ("session/load", "session/resume", "session/list"):
            _, response = await wire.call(method, {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
            assert response["error"] == {
                "code": -32601,
                "message": "Method not found",
                "data": {"method": method},
            }


@pytest.mark.asyncio
@bounded
async def test_stdin_eof_exits_zero_promptly_even_mid_turn(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        await wire.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "slow"}]}
        )
        await wire.recv()
        started = time.monotonic()
        assert await wire.stop() == 0
        assert time.monotonic() - started < 5.0


@pytest.mark.asyncio
@bounded
async def test_delay_flag_paces_the_stream(tmp_path: Path) -> None:
    async with running_agent(tmp_path, delay="0.02") as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session()
        started = time.monotonic()
        seen, response = await wire.prompt(session_id, "hi")
        assert response["result"] == {"stopReason": "end_turn"}
        assert time.monotonic() - started >= 0.02 * (len(updates(seen)) - 1)
