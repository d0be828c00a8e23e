"""ACP v1.25's session methods (issue 31, items 3, 4 and 6): the client's system prompt on every session
set-up, ``session/fork`` (a new handle, its journal starting from the parent's), ``session/set_title``,
``session/status``, and what the agent says of its sign-in (``auth/status``, ``_auth/status_update``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import silo_nb
from silo_nb.acp import AcpRpcError
from silo_nb.model import AgentSessionError, AgentSessionInputError
from silo_nb.sessions.system_prompt import NOTEBOOK_GUIDANCE
from tests.agents.scripted import Peer, scripted_service
from tests.conftest import Workspace, demo_agent

PROMPT_CAPS = {"sessionCapabilities": {"systemPrompt": {}}}
OVERRIDE_CAPS = {"sessionCapabilities": {"systemPrompt": {"mode": {"override": {}}}}}


def text(value: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": value}]


async def quiet(_peer: Peer, _text: str) -> None:
    return None


def recording(seen: list[tuple[str, dict[str, Any]]], method: str, result: dict[str, Any]) -> Any:
    async def handler(_peer: Peer, params: dict[str, Any]) -> Any:
        seen.append((method, params))
        return result

    return handler


def journal_kinds(svc: silo_nb.AgentsService, session_id: str) -> list[dict[str, Any]]:
    path = svc.sessions.journals.path(svc.workspace_id, session_id)
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- system prompt --------------------------------------------------------------------------------


async def test_profile_system_prompt_is_sent_on_session_new(workspace: Workspace) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    svc = scripted_service(
        workspace,
        quiet,
        profile={"system_prompt": "Answer in French.", "system_prompt_mode": "override"},
        agent_capabilities=OVERRIDE_CAPS,
        methods={"session/new": recording(seen, "session/new", {"sessionId": "s-1"})},
    )
    async with await svc.sessions.connect("scripted") as handle:
        assert handle.system_prompt == {
            "mode": "override",
            "content": [{"type": "text", "text": "Answer in French."}],
        }
    ((_, params),) = seen
    assert params["systemPrompt"] == handle.system_prompt


async def test_connect_system_prompt_wins_and_the_notebook_guidance_is_appended(workspace: Workspace) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    svc = scripted_service(
        workspace,
        quiet,
        profile={"system_prompt": "from the profile"},
        agent_capabilities=PROMPT_CAPS,
        methods={"session/new": recording(seen, "session/new", {"sessionId": "s-1"})},
    )
    async with await svc.sessions.connect("scripted", system_prompt="Be brief.", notebook_guidance=True):
        pass
    async with await svc.sessions.connect("scripted", system_prompt=""):  # "" : none at all
        pass
    first, second = (params for _, params in seen)
    prompt = first["systemPrompt"]
    assert prompt["mode"] == "append"
    assert prompt["content"][0]["text"] == "Be brief.\n\n" + NOTEBOOK_GUIDANCE
    assert "read_notebook" in NOTEBOOK_GUIDANCE and ".ipynb" in NOTEBOOK_GUIDANCE
    assert "systemPrompt" not in second


async def test_notebook_guidance_can_be_turned_off_in_the_profile(workspace: Workspace) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    svc = scripted_service(
        workspace,
        quiet,
        profile={"notebook_guidance": False},
        agent_capabilities=PROMPT_CAPS,
        methods={"session/new": recording(seen, "session/new", {"sessionId": "s-1"})},
    )
    async with await svc.sessions.connect("scripted", notebook_guidance=True) as handle:
        assert handle.system_prompt is None
    assert "systemPrompt" not in seen[0][1]


async def test_no_system_prompt_to_an_agent_that_does_not_offer_it(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    svc = scripted_service(
        workspace,
        quiet,
        profile={"system_prompt": "Answer in French."},
        methods={"session/new": recording(seen, "session/new", {"sessionId": "s-1"})},
    )
    async with await svc.sessions.connect("scripted", notebook_guidance=True):
        pass
    assert "systemPrompt" not in seen[0][1]
    assert "does not offer sessionCapabilities.systemPrompt" in caplog.text
    report = "\n".join((await svc.sessions.doctor("scripted")).lines())
    assert "system prompt: not sent — scripted does not offer sessionCapabilities.systemPrompt" in report


async def test_override_only_where_offered_the_guidance_still_goes(workspace: Workspace) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    svc = scripted_service(
        workspace,
        quiet,
        profile={"system_prompt": "You are a pirate.", "system_prompt_mode": "override"},
        agent_capabilities=PROMPT_CAPS,
        methods={"session/new": recording(seen, "session/new", {"sessionId": "s-1"})},
    )
    async with await svc.sessions.connect("scripted", notebook_guidance=True):
        pass
    assert seen[0][1]["systemPrompt"] == {
        "mode": "append",
        "content": [{"type": "text", "text": NOTEBOOK_GUIDANCE}],
    }
    report = "\n".join((await svc.sessions.doctor("scripted")).lines())
    assert (
        "system prompt: not sent — scripted does not offer sessionCapabilities.systemPrompt.mode.override"
        in report
    )


async def test_the_system_prompt_goes_with_resume_and_load_too(workspace: Workspace) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    caps = {"loadSession": True, "sessionCapabilities": {"systemPrompt": {}, "resume": {}}}

    async def refuse_resume(_peer: Peer, params: dict[str, Any]) -> Any:
        seen.append(("session/resume", params))
        raise AcpRpcError(-32002, "not in memory")

    svc = scripted_service(
        workspace,
        quiet,
        profile={"system_prompt": "Stay on topic."},
        agent_capabilities=caps,
        methods={"session/resume": refuse_resume, "session/load": recording(seen, "session/load", {})},
    )
    async with await svc.sessions.connect("scripted") as handle:
        await handle.prompt(text("hello"))
    async with await svc.sessions.connect("scripted", resume={"session_id": "scripted-1"}) as back:
        assert back.resume_outcome == "resumed"
    assert [method for method, _ in seen] == ["session/resume", "session/load"]
    for _, params in seen:
        assert params["systemPrompt"] == {
            "mode": "append",
            "content": [{"type": "text", "text": "Stay on topic."}],
        }


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"system_prompt_mode": "replace"}, "system_prompt_mode 'replace' is not one of append, override"),
        ({"system_prompt": 42}, "system_prompt must be text"),
    ],
)
async def test_bad_system_prompt_arguments_are_refused_before_anything_starts(
    workspace: Workspace, kwargs: dict[str, Any], words: str
) -> None:
    svc = scripted_service(workspace, quiet, agent_capabilities=PROMPT_CAPS)
    with pytest.raises(AgentSessionInputError, match=words):
        await svc.sessions.connect("scripted", **kwargs)
    assert svc.get_state() == []


async def test_a_refused_system_prompt_names_the_profile_and_creates_nothing(workspace: Workspace) -> None:
    async def refuse(_peer: Peer, _params: dict[str, Any]) -> Any:
        raise AcpRpcError(-32602, "Unsupported systemPrompt mode: override")

    svc = scripted_service(
        workspace,
        quiet,
        profile={"system_prompt": "x" * 10_000, "system_prompt_mode": "override"},
        agent_capabilities=OVERRIDE_CAPS,
        methods={"session/new": refuse},
    )
    with pytest.raises(AgentSessionError) as caught:
        await svc.sessions.connect("scripted")
    message = str(caught.value)
    assert "\n" not in message and "x" * 100 not in message
    assert "refused the system prompt of profile 'scripted'" in message
    assert "Unsupported systemPrompt mode: override" in message
    assert "system_prompt_mode in the profile" in message
    assert svc.get_state() == []
    assert not list(workspace.data.rglob("*.jsonl"))


async def test_the_demo_agent_takes_a_system_prompt_and_refuses_a_bad_one(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect(
        "demo", system_prompt="Be terse.", system_prompt_mode="override"
    ) as h:
        assert h.system_prompt is not None and h.system_prompt["mode"] == "override"
        assert (await h.prompt(text("hello"))).stop_reason == "end_turn"
    workspace.add_profiles(demo_agent("demo-plain", "--no-system-prompt"))
    async with await svc.sessions.connect("demo-plain", system_prompt="Be terse.") as plain:
        assert plain.system_prompt is None  # not offered: not sent, the session opens


# -- fork -----------------------------------------------------------------------------------------


async def test_fork_is_a_new_session_whose_journal_starts_from_the_parent(workspace: Workspace) -> None:
    svc = workspace.service()
    parent = await svc.sessions.connect("demo")
    await parent.prompt(text("first question"))
    parent_lines = parent.journal_lines()
    fork = await parent.fork()
    try:
        assert fork.session_id != parent.session_id and fork.can_fork
        assert fork.resume_outcome == "new" and fork.is_live
        assert [u.kind for u in fork.journal] == [u.kind for u in parent.journal_updates()]
        await fork.prompt(text("only in the fork"))
        forked = journal_kinds(svc, fork.session_id)
        assert [json.dumps(line) for line in forked[: len(parent_lines)]] == [
            json.dumps(json.loads(line)) for line in parent_lines
        ]
        prompts = [line["text"] for line in forked if line["kind"] == "user_message_chunk"]
        assert prompts == ["first question", "only in the fork"]
        parent_prompts = [u.text for u in parent.journal_updates() if u.kind == "user_message_chunk"]
        assert parent_prompts == ["first question"]  # the fork's turn is not the parent's
        titles = {info.id: info.title for info in svc.get_state()}
        assert titles[fork.id].endswith("· fork")
        fork_id = fork.session_id
    finally:
        await fork.aclose()
        await parent.aclose()
    # Restorable like any session: the agent resumes it, the journal shows both turns.
    async with await svc.sessions.connect("demo", resume={"session_id": fork_id}) as back:
        assert back.resume_outcome == "resumed"
        restored = [u.text for u in back.journal if u.kind == "user_message_chunk"]
        assert restored == ["first question", "only in the fork"]
        assert (await back.prompt(text("after the restore"))).stop_reason == "end_turn"


async def test_fork_where_the_agent_does_not_offer_it(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("demo-nofork", "--no-fork"))
    svc = workspace.service()
    async with await svc.sessions.connect("demo-nofork") as handle:
        assert not handle.can_fork
        with pytest.raises(
            AgentSessionError, match=r"does not offer session/fork \(its sessionCapabilities.fork\)"
        ):
            await handle.fork()
        assert len(svc.get_state()) == 1


@pytest.mark.parametrize("answer", [{}, {"sessionId": ""}, {"sessionId": 7}, {"sessionId": "scripted-1"}])
async def test_a_fork_answer_without_a_new_session_id_leaves_nothing(
    workspace: Workspace, answer: dict[str, Any]
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    svc = scripted_service(
        workspace,
        quiet,
        agent_capabilities={"sessionCapabilities": {"fork": {}}},
        methods={"session/fork": recording(seen, "session/fork", answer)},
    )
    async with await svc.sessions.connect("scripted") as handle:
        with pytest.raises(AgentSessionError) as caught:
            await handle.fork()
        assert "could not fork session scripted-1" in str(caught.value)
        assert "\n" not in str(caught.value)
        assert [info.id for info in svc.get_state()] == [handle.id]
    assert seen[0][1]["sessionId"] == "scripted-1" and seen[0][1]["cwd"] == handle.cwd


async def test_fork_sends_the_system_prompt_and_an_agent_refusal_is_one_line(workspace: Workspace) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    async def fork(_peer: Peer, params: dict[str, Any]) -> Any:
        seen.append(("session/fork", params))
        if params.get("systemPrompt", {}).get("mode") == "override":
            raise AcpRpcError(-32602, "override is not for forks")
        return {"sessionId": "forked-1"}

    svc = scripted_service(
        workspace,
        quiet,
        profile={"system_prompt": "Stay calm."},
        agent_capabilities={"sessionCapabilities": {"fork": {}, **OVERRIDE_CAPS["sessionCapabilities"]}},
        methods={"session/fork": fork},
    )
    async with await svc.sessions.connect("scripted") as handle:
        async with await handle.fork(title="Side quest") as child:
            assert child.session_id == "forked-1"
            assert child.title == "Side quest"
        with pytest.raises(AgentSessionError, match="refused the system prompt of profile 'scripted'"):
            await handle.fork(system_prompt_mode="override")
    first, second = (params for _, params in seen)
    assert first["systemPrompt"]["content"][0]["text"] == "Stay calm."
    assert second["systemPrompt"]["mode"] == "override"


# -- title, status, sign-in -----------------------------------------------------------------------


async def test_set_title_and_session_status_on_the_demo_agent(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        assert handle.can_set_title
        await handle.set_title("  Cleaning   the data ")
        assert handle.title == "Cleaning the data"
        assert svc.get(handle.id) is not None and svc.get(handle.id).title == "Cleaning the data"  # type: ignore[union-attr]
        assert await handle.session_status() == "open"
        with pytest.raises(AgentSessionInputError, match="non-empty text"):
            await handle.set_title("   ")


async def test_set_title_and_status_where_not_offered(workspace: Workspace) -> None:
    svc = scripted_service(workspace, quiet)
    async with await svc.sessions.connect("scripted") as handle:
        with pytest.raises(AgentSessionError, match=r"does not offer session/set_title"):
            await handle.set_title("Mine")
        assert await handle.session_status() is None


CLAUDE_PUSH = {
    "authStatus": {
        "kind": "account",
        "label": "Claude Max",
        "account": {"email": "ada@example.org", "organization": "Analytical"},
    }
}


async def test_the_sign_in_push_is_kept_on_the_session(workspace: Workspace) -> None:
    async def new(peer: Peer, _params: dict[str, Any]) -> Any:
        await peer.write({"method": "_auth/status_update", "params": CLAUDE_PUSH})
        await peer.write({"method": "_auth/status_update", "params": {"authStatus": "not an object"}})
        return {"sessionId": "s-1"}

    svc = scripted_service(workspace, quiet, methods={"session/new": new})
    async with await svc.sessions.connect("scripted") as handle:
        status = handle.auth_status
        assert status is not None and status.signed_in is True
        assert status.line() == "signed in: yes (Claude Max, ada@example.org, Analytical)"


async def test_doctor_says_whether_the_agent_is_signed_in(workspace: Workspace) -> None:
    async def status(_peer: Peer, _params: dict[str, Any]) -> Any:
        accounts = [{"label": "OpenAI API key", "active": True}, {"label": "x" * 1000}, "junk"]
        return {"state": "authenticated", "accounts": accounts}

    svc = scripted_service(
        workspace, quiet, agent_capabilities={"auth": {"status": {}}}, methods={"auth/status": status}
    )
    report = "\n".join((await svc.sessions.doctor("scripted")).lines())
    line = next(line for line in report.splitlines() if "signed in:" in line)
    assert line.startswith("  signed in: yes (OpenAI API key — active; xxx")
    assert len(line) < 300


async def test_doctor_waits_for_the_pushed_sign_in_without_a_prompt(workspace: Workspace) -> None:
    async def initialize(peer: Peer, _params: dict[str, Any]) -> Any:
        async def push() -> None:
            await peer.write(
                {"method": "_auth/status_update", "params": {"authStatus": {"kind": "none", "label": "-"}}}
            )

        import anyio

        async with anyio.create_task_group() as tg:
            tg.start_soon(push)
        return {"protocolVersion": 1, "agentCapabilities": {"_meta": {"authStatus": {}}}}

    svc = scripted_service(workspace, quiet, methods={"initialize": initialize})
    report = "\n".join((await svc.sessions.doctor("scripted")).lines())
    assert "  signed in: no\n" in report + "\n"


async def test_doctor_without_any_sign_in_report(workspace: Workspace) -> None:
    svc = workspace.service()
    report = "\n".join((await svc.sessions.doctor("demo")).lines())
    assert "signed in: not reported (the agent offers neither auth/status nor _auth/status_update)" in report
    assert "fork=True" in report and "title=True" in report and "status=True" in report
    assert "system prompt: none in the profile (the agent takes append, override)" in report
    assert "notebook guidance for kernel sessions: on" in report


async def test_the_demo_agent_says_its_system_prompt_when_asked_its_mode(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo", system_prompt="Answer like a pirate.") as handle:
        said: list[str] = []
        handle.on_update(lambda u: said.append(u.text or "") if u.kind == "agent_message_chunk" else None)
        await handle.prompt(text("which mode are you in?"))
        assert "System prompt (append, 21 characters): “Answer like a pirate.”" in "".join(said)
        fork = await handle.fork()
        said.clear()
        fork.on_update(lambda u: said.append(u.text or "") if u.kind == "agent_message_chunk" else None)
        await fork.prompt(text("and the fork's mode?"))
        await fork.aclose()
        assert "Answer like a pirate." in "".join(said)  # the fork is sent the parent's system prompt
