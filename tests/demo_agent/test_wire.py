"""The demo agent's handshake, config options, flags and protocol edges, served in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.demo_agent.helpers import CWD, bounded, running_agent, updates


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
                "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
                "sessionCapabilities": {
                    "list": {},
                    "resume": {},
                    "close": {},
                    "delete": {},
                    "fork": {},
                    "systemPrompt": {"mode": {"override": {}}},
                    "title": {},
                    "status": {},
                },
            },
            "authMethods": [],
            "_meta": {"steering": {"supported": True}},
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
            {"name": "compact", "description": "Summarise the conversation to free context", "input": None},
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
        _, response = await wire.call("session/frobnicate", {"sessionId": "x"})
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
    flags = (
        "--no-load",
        "--no-resume",
        "--no-list",
        "--no-embedded-context",
        "--no-fork",
        "--no-system-prompt",
    )
    async with running_agent(tmp_path, *flags) as wire:
        capabilities = (await wire.initialize())["agentCapabilities"]
        assert capabilities["loadSession"] is False
        assert capabilities["sessionCapabilities"] == {"close": {}, "delete": {}, "title": {}, "status": {}}
        assert capabilities["promptCapabilities"]["embeddedContext"] is False
        session_id, _ = await wire.new_session()
        for method in ("session/load", "session/resume", "session/list", "session/fork"):
            _, response = await wire.call(method, {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
            assert response["error"] == {
                "code": -32601,
                "message": "Method not found",
                "data": {"method": method},
            }


@pytest.mark.asyncio
@bounded
async def test_parse_error_invalid_requests_and_batches(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.send_raw(b"{not json\n")
        assert await wire.recv() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error"},
        }
        await wire.send_raw(b'[1, {"jsonrpc": "2.0", "id": 7}]\n')
        errors = [await wire.recv(), await wire.recv()]
        assert sorted((e["id"] is None, e["error"]["code"]) for e in errors) == [
            (False, -32600),
            (True, -32600),
        ]
        batch = [
            {"jsonrpc": "2.0", "id": 8, "method": "authenticate", "params": {"methodId": "x"}},
            {"jsonrpc": "2.0", "id": 9, "method": "session/close", "params": ["not", "an", "object"]},
        ]
        await wire.send_raw(json.dumps(batch).encode() + b"\n")
        answers = {m["id"]: m for m in [await wire.recv(), await wire.recv()]}
        assert answers[8]["result"] == {}
        assert answers[9]["error"] == {"code": -32602, "message": "Invalid params: expected an object"}
        _, response = await wire.call("session/prompt", {"sessionId": "nope", "prompt": "not a list"})
        assert response["error"]["message"] == "Session not found: nope"


@pytest.mark.asyncio
@bounded
async def test_system_prompt_checks_and_fork(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        for bad in (
            {"mode": "replace", "content": [{"type": "text", "text": "x"}]},
            {"mode": "append", "content": []},
            {"mode": "append", "content": [{"type": "image", "data": "", "mimeType": "image/png"}]},
        ):
            _, response = await wire.call("session/new", {"cwd": CWD, "mcpServers": [], "systemPrompt": bad})
            assert response["error"]["code"] == -32602
        _, response = await wire.call("session/list", {})
        assert response["result"]["sessions"] == []  # a refused systemPrompt made no session
        good = {"mode": "override", "content": [{"type": "text", "text": "Be terse."}]}
        _, response = await wire.call("session/new", {"cwd": CWD, "mcpServers": [], "systemPrompt": good})
        parent = response["result"]["sessionId"]
        _, response = await wire.call("session/fork", {"sessionId": parent, "cwd": CWD, "mcpServers": []})
        child = response["result"]["sessionId"]
        assert child != parent and response["result"]["configOptions"]
        _, response = await wire.call("session/status", {"sessionId": child})
        assert response["result"] == {"status": "open"}
        _, response = await wire.call("session/fork", {"sessionId": "demo-nope", "cwd": CWD})
        assert response["error"]["code"] == -32002
        _, response = await wire.call("session/status", {"sessionId": "demo-nope"})
        assert response["error"]["code"] == -32002
