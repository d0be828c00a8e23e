"""Every way ``connect`` can fail (silo-agents-api.md §2.1), with real agent subprocesses.

Each error is one ``AgentSessionError`` that carries the agent's own words, and no agent process is
left behind.
"""

from __future__ import annotations

import os

import anyio
import pytest

import silo_nb
from silo_nb.acp import process as acp_process
from silo_nb.acp.client import background_closes
from tests.conftest import Workspace, raw_agent, sdk_agent


async def no_live_agents() -> bool:
    """No agent process left once the background shutdowns of failed connects are done."""
    await background_closes()
    return not list(acp_process._LIVE)


async def test_unknown_profile_names_the_known_ones(workspace: Workspace) -> None:
    svc = workspace.service()
    with pytest.raises(
        silo_nb.AgentSessionError, match=r'^No agent profile with id "nope"\. Known profiles: demo'
    ):
        await svc.sessions.connect("nope")


async def test_unknown_profile_mentions_a_skipped_broken_entry(workspace: Workspace) -> None:
    workspace.add_profiles({"id": "Bad Id", "command": "x"})
    svc = workspace.service()
    with pytest.raises(silo_nb.AgentSessionError, match=r"Skipped: .*profiles\.json: profile Bad Id"):
        await svc.sessions.connect("bad-id")


async def test_terminal_profile_is_rejected(workspace: Workspace) -> None:
    workspace.add_profiles(
        {"id": "term", "label": "My Shell Agent", "interface": "terminal", "command": "claude"}
    )
    svc = workspace.service()
    with pytest.raises(silo_nb.AgentSessionError) as info:
        await svc.sessions.connect("term")
    assert str(info.value) == (
        'Agent profile "My Shell Agent" is a Terminal profile — silo_nb connects Chat profiles only.'
    )


async def test_command_not_on_path(workspace: Workspace) -> None:
    workspace.add_profiles({"id": "ghost", "label": "Ghost", "command": "no-such-agent-binary-xyz"})
    svc = workspace.service()
    with pytest.raises(
        silo_nb.AgentSessionError, match=r'^Could not start Ghost: command "no-such-agent-binary-xyz"'
    ):
        await svc.sessions.connect("ghost")


async def test_agent_exiting_at_start_up_reports_code_and_stderr_tail(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("exit-at-start"))
    svc = workspace.service()
    with pytest.raises(silo_nb.AgentSessionError) as info:
        await svc.sessions.connect("raw-exit-at-start")
    message = str(info.value)
    assert message.startswith("Could not start Raw exit-at-start: agent exited with code 3:")
    assert "raw-fake: config file ~/.rawfake missing" in message
    assert "raw-fake: giving up" in message
    assert svc.get_state() == []
    assert await no_live_agents()


async def test_authentication_needed_at_session_new_sdk_agent(workspace: Workspace) -> None:
    workspace.add_profiles(sdk_agent("auth"))
    svc = workspace.service()
    with pytest.raises(silo_nb.AgentSessionError) as info:
        await svc.sessions.connect("sdk-auth")
    # The agent's words, then what to do (this agent lists no sign-in methods).
    assert str(info.value) == (
        "SDK fake agent could not start a session (it may need you to sign in first): Authentication "
        "required: sign in with `sdk-fake login` "
        "first — it lists no sign-in methods: sign in with the agent's own tool in a terminal, or put its "
        "API key in the profile's env."
    )
    assert isinstance(info.value, silo_nb.AgentSignInError)
    assert await no_live_agents()


async def test_authentication_needed_at_session_new_demo_agent(workspace: Workspace) -> None:
    from tests.conftest import demo_agent

    workspace.add_profiles(demo_agent("demo-auth", "--auth-required"))
    svc = workspace.service()
    with pytest.raises(silo_nb.AgentSignInError) as info:
        await svc.sessions.connect("demo-auth")
    assert str(info.value) == (
        "Demo demo-auth could not start a session (it may need you to sign in first): Authentication "
        "required: run `demo login` first — "
        "sign in: run %silo login demo-auth demo-login (Demo login)."
    )
    assert [m.id for m in info.value.methods] == ["demo-login"]
    # What %silo login does: authenticate with the method, then the session starts.
    handle = await svc.sessions.connect("demo-auth", auth_method="demo-login")
    try:
        assert handle.is_live and handle.session_id
    finally:
        await handle.aclose()
    # A pinned method the agent does not offer is refused with the ones it does.
    with pytest.raises(
        silo_nb.AgentSignInError, match=r'offers no sign-in method "nope" \(it offers: demo-login\)'
    ):
        await svc.sessions.connect("demo-auth", auth_method="nope")


async def test_vendor_message_from_session_new_is_kept_verbatim(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("new-fails"))
    svc = workspace.service()
    with pytest.raises(silo_nb.AgentSessionError, match=r"Internal error: model gemini-1 is retired$"):
        await svc.sessions.connect("raw-new-fails")


async def test_session_new_without_session_id(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("no-session-id"))
    svc = workspace.service()
    with pytest.raises(silo_nb.AgentSessionError, match="session/new returned no sessionId"):
        await svc.sessions.connect("raw-no-session-id")


async def test_wrong_protocol_version(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("bad-version"))
    svc = workspace.service()
    with pytest.raises(silo_nb.AgentSessionError, match="speaks ACP protocol version 99"):
        await svc.sessions.connect("raw-bad-version")
    assert await no_live_agents()


async def test_initialize_timeout_is_bounded_and_configurable(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("silent", connect_timeout=1.5))
    svc = workspace.service()
    with anyio.fail_after(20), pytest.raises(silo_nb.AgentSessionError) as info:
        await svc.sessions.connect("raw-silent")
    assert str(info.value).startswith("Could not start Raw silent: no answer within 1.5 s")
    assert "connect_timeout" in str(info.value)
    assert await no_live_agents()


def test_default_connect_timeout_is_60_seconds(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("ok"))
    profile = workspace.service().profiles.get("raw-ok")
    assert profile is not None and profile.connect_timeout == 60


async def test_cwd_must_exist(workspace: Workspace) -> None:
    svc = workspace.service()
    with pytest.raises(ValueError, match="is not a folder"):
        await svc.sessions.connect("demo", cwd=str(workspace.root / "missing"))


async def test_missing_workspace_folder(workspace: Workspace) -> None:
    svc = silo_nb.AgentsService(
        workspace_dir=workspace.root / "gone", config_dirs=[workspace.config], data_dir=workspace.data
    )
    with pytest.raises(silo_nb.AgentSessionError, match=r"^No workspace to connect the Chat session in\.$"):
        await svc.sessions.connect("demo")


async def test_resume_option_is_validated(workspace: Workspace) -> None:
    svc = workspace.service()
    with pytest.raises(ValueError, match="transcript"):
        await svc.sessions.connect("demo", resume={"session_id": "x", "transcript": "shred"})
    assert os.listdir(workspace.folder) == []
