"""Today's agents' quirks, each handled by shape (the real agents: ``integration/test_vendor_agents.py``):

- Sign-in hints in every shape ``initialize`` uses (``auth_methods.parse_auth_methods``), the key set
  for an ``api-key`` provider method signing in, and the one-line advice.
- A banner before the first prompt (pi): kept as the session's opening — handed to listeners added
  before the first prompt, journaled, and no agent turn.
- A Stop answered ``end_turn`` (opencode): the turn is "cancelled", the agent's reason kept in ``raw``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.sessions.connecting.auth_methods import choose_method, parse_auth_methods, sign_in_advice
from tests.conftest import Workspace, raw_agent

AGENT = ("/opt/agent", "--acp")
INIT = {
    "authMethods": [
        {"id": "term", "name": "Terminal", "type": "terminal", "args": ["--login"], "env": {"MODE": "a b"}},
        {"id": "legacy", "name": "Legacy", "_meta": {"terminal-auth": {"command": "/bin/x", "args": ["in"]}}},
        {"id": "meta", "name": "Meta", "_meta": {"type": "terminal", "args": ["--auth-type=openai"]}},
        {"id": "key", "name": "API key", "_meta": {"api-key": {"provider": "openai"}}},
        {"id": "odd", "name": "Odd key", "_meta": {"api-key": {"provider": "acme"}}},
        {"id": "said", "name": "Said", "description": "Run `tool auth login` in the terminal"},
        {"id": "env", "name": "Env", "type": "env_var", "vars": [{"name": "A_KEY"}]},
        {"id": "agent", "name": "Agent login"},
        {"name": "no id"},
    ]
}


def test_every_sign_in_shape_is_read() -> None:
    methods = {m.id: m for m in parse_auth_methods(INIT, AGENT)}
    assert list(methods) == ["term", "legacy", "meta", "key", "odd", "said", "env", "agent"]
    assert [(m.type, m.command) for m in methods.values()] == [
        ("terminal", (*AGENT, "--login")),  # the agent's own command, the args appended
        ("terminal", ("/bin/x", "in")),
        ("terminal", (*AGENT, "--auth-type=openai")),
        ("agent", ()),
        ("agent", ()),
        ("terminal", ("tool", "auth", "login")),
        ("env_var", ()),
        ("agent", ()),
    ]
    assert methods["term"].shell == "MODE='a b' /opt/agent --acp --login"
    assert (methods["key"].provider, methods["key"].variables) == ("openai", ("OPENAI_API_KEY",))
    assert (methods["odd"].provider, methods["odd"].variables) == ("acme", ())
    assert parse_auth_methods({"authMethods": "none"}) == () and parse_auth_methods({}) == ()


def test_a_provider_key_that_is_set_signs_in_with_its_method(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("A_KEY", raising=False)
    methods = parse_auth_methods(INIT, AGENT)
    assert choose_method(methods, {}, None) is None
    chosen = choose_method(methods, {"OPENAI_API_KEY": "sk-x"}, None)
    assert chosen is not None and chosen.id == "key"
    with pytest.raises(ValueError, match=r"run `/opt/agent --acp --auth-type=openai` in a terminal instead"):
        choose_method(methods, {}, "meta")


def test_the_advice_names_every_way_in_one_line() -> None:
    advice = sign_in_advice(parse_auth_methods(INIT, AGENT), "p")
    assert advice == (
        "sign in: set OPENAI_API_KEY (key) or A_KEY (env) in the profile's env; "
        "or run `MODE='a b' /opt/agent --acp --login` in a terminal (Terminal); "
        "or run `/bin/x in` in a terminal (Legacy); "
        "or run `/opt/agent --acp --auth-type=openai` in a terminal (Meta); "
        "or run %silo login p odd (Odd key); "
        "or run `tool auth login` in a terminal (Said); "
        "or run %silo login p agent (Agent login)"
    )


async def wait_for(predicate: Callable[[], Any], timeout: float = 10) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


async def test_a_banner_before_the_first_prompt_is_kept_for_listeners_and_opens_no_turn(
    workspace: Workspace,
) -> None:
    workspace.add_profiles(raw_agent("banner"))
    svc = workspace.service()
    async with await svc.sessions.connect("raw-banner") as handle:
        await wait_for(lambda: len(handle.core.opening) == 2)  # it came right after session/new
        updates: list[silo_nb.AgentSessionUpdate] = []
        transcript: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        handle.on_transcript(transcript.append)
        assert [(u.kind, u.text) for u in updates] == [
            ("agent_message_chunk", "raw-fake v1\n---\n"),
            ("usage_update", None),
        ]
        assert [u.kind for u in transcript] == ["agent_message_chunk", "usage_update"]
        (info,) = svc.get_state()
        assert info.activity == "idle" and not info.needs_attention  # a banner is not the agent's turn
        assert [u.kind for u in handle.journal_updates()][:2] == ["agent_message_chunk", "usage_update"]
        await handle.prompt([{"type": "text", "text": "hi"}])
        later: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(later.append)
        assert later == []  # after the first prompt, listeners get what comes from then on only


async def test_a_stop_answered_end_turn_is_reported_cancelled_with_the_agent_s_reason_kept(
    workspace: Workspace,
) -> None:
    workspace.add_profiles(raw_agent("stop-ends-turn"))
    svc = workspace.service()
    async with await svc.sessions.connect("raw-stop-ends-turn") as handle:
        results: list[silo_nb.AgentPromptResult] = []
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)

        async def turn() -> None:
            results.append(await handle.prompt([{"type": "text", "text": "hi"}]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(turn)
            await wait_for(lambda: updates)
            handle.cancel()
        (result,) = results
        assert result.stop_reason == "cancelled" and not handle.stop_overdue
        assert result.raw["stopReason"] == "end_turn" and result.raw["usage"]["totalTokens"] == 0
        end = handle.journal_updates()[-1].raw
        assert (end["outcome"], end["stopReason"], end["agentStopReason"]) == (
            "cancelled",
            "cancelled",
            "end_turn",
        )
        assert svc.get_state()[0].needs_attention is False  # a cancelled turn raises no attention
