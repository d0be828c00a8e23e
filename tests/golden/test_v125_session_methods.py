"""What silo_nb sends for ACP v1.25's session methods, and what the demo agent answers, checked against
the v1.25 unstable JSON schema itself (the one the official SDK 2.4.0 ships, installed in ``tests/node``
by ``.ci/setup``; the pinned Python SDK 0.12.1 predates them): ``systemPrompt`` on ``session/new``,
``session/fork``, ``session/set_title``, ``session/status``, ``auth/status`` and their answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.agents.scripted import Peer, scripted_service
from tests.conftest import NODE_MODULES, Workspace
from tests.demo_agent.helpers import CWD, bounded, running_agent

SCHEMA = NODE_MODULES / "acp-sdk-24" / "schema" / "v1" / "schema.unstable.json"  # ACP schema v1.25.0


def check(definition: str, value: Any) -> None:
    """``value`` is valid as the schema's ``definition`` (extra keys included: the schema is open)."""
    if not SCHEMA.is_file():
        pytest.fail(f"{SCHEMA} is missing — run .ci/setup (it installs the official SDK 2.4.0 in tests/node)")
    defs = json.loads(SCHEMA.read_text())["$defs"]
    jsonschema.Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": defs}).validate(value)


async def quiet(_peer: Peer, _text: str) -> None:
    return None


def test_the_schema_check_rejects_what_it_should() -> None:
    with pytest.raises(jsonschema.ValidationError):
        check("ForkSessionResponse", {})  # no sessionId
    with pytest.raises(jsonschema.ValidationError):
        check("SessionStatusRequest", {"sessionId": 7})


async def test_silo_nb_requests_follow_the_v125_schema(workspace: Workspace) -> None:
    seen: dict[str, dict[str, Any]] = {}

    def recording(method: str, result: dict[str, Any]) -> Any:
        async def handler(_peer: Peer, params: dict[str, Any]) -> Any:
            seen[method] = params
            return result

        return handler

    caps = {
        "auth": {"status": {}},
        "sessionCapabilities": {
            "systemPrompt": {"mode": {"override": {}}},
            "fork": {},
            "title": {},
            "status": {},
            "additionalDirectories": {},
        },
    }
    svc = scripted_service(
        workspace,
        quiet,
        profile={"system_prompt": "Be brief.", "system_prompt_mode": "override"},
        agent_capabilities=caps,
        methods={
            "session/new": recording("session/new", {"sessionId": "s-1"}),
            "session/fork": recording("session/fork", {"sessionId": "s-2"}),
            "session/set_title": recording("session/set_title", {"title": "A title, as stored"}),
            "session/status": recording("session/status", {"status": "open"}),
            "auth/status": recording("auth/status", {"state": "not_required"}),
        },
    )
    async with await svc.sessions.connect("scripted", notebook_guidance=True) as handle:
        await handle.set_title("A title")
        assert handle.title == "A title, as stored"  # the agent's answer is what is shown
        assert await handle.session_status() == "open"
        async with await handle.fork():
            pass
    assert "signed in: not needed" in "\n".join((await svc.sessions.doctor("scripted")).lines())
    check("NewSessionRequest", seen["session/new"])
    check("SystemPrompt", seen["session/new"]["systemPrompt"])
    check("ForkSessionRequest", seen["session/fork"])
    check("SystemPrompt", seen["session/fork"]["systemPrompt"])
    check("SetSessionTitleRequest", seen["session/set_title"])
    check("SessionStatusRequest", seen["session/status"])
    check("AuthStatusRequest", seen["auth/status"])
    assert (
        seen["session/fork"]["sessionId"] == "s-1"
        and seen["session/fork"]["systemPrompt"]["mode"] == "override"
    )


@pytest.mark.asyncio
@bounded
async def test_the_demo_agent_answers_follow_the_v125_schema(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        init = await wire.initialize()
        check("SessionCapabilities", init["agentCapabilities"]["sessionCapabilities"])
        session_id, _ = await wire.new_session()
        prompt = {"mode": "append", "content": [{"type": "text", "text": "Be brief."}]}
        request = {"sessionId": session_id, "cwd": CWD, "mcpServers": [], "systemPrompt": prompt}
        check("ForkSessionRequest", request)
        _, response = await wire.call("session/fork", request)
        check("ForkSessionResponse", response["result"])
        _, response = await wire.call("session/set_title", {"sessionId": session_id, "title": "Named"})
        check("SetSessionTitleResponse", response["result"])
        _, response = await wire.call("session/status", {"sessionId": session_id})
        check("SessionStatusResponse", response["result"])
