"""Forgetting a session (ACP ``session/delete``: ``handle.delete()``, ``agents.sessions.forget``), signing
out (``logout``) and what ``doctor`` says of the profile's MCP servers."""

from __future__ import annotations

import pytest

import silo_nb
from silo_nb.model.errors import AgentSessionError, AgentSessionInputError
from tests.conftest import Workspace, demo_agent, raw_agent


def text(value: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": value}]


async def listed(svc: silo_nb.AgentsService) -> set[str]:
    """The session ids the demo agent still keeps (``session/list`` on a fresh connection)."""
    async with await svc.sessions.connect("demo") as probe:
        return {s.session_id for s in await probe.list_sessions()} - {probe.session_id}


async def test_delete_asks_the_agent_closes_and_keeps_the_journal_unless_asked(workspace: Workspace) -> None:
    svc = workspace.service()
    handle = await svc.sessions.connect("demo")
    await handle.prompt(text("remember me"))
    session_id = handle.session_id
    assert handle.can_delete and session_id in await listed(svc)
    assert await handle.delete() is True
    assert handle.disposed and session_id not in await listed(svc)
    journal = svc.sessions.journals.path(svc.workspace_id, session_id)
    assert journal.is_file() and await svc.sessions.read_journal(session_id)  # kept: still readable

    other = await svc.sessions.connect("demo")
    await other.prompt(text("forget me entirely"))
    path = svc.sessions.journals.path(svc.workspace_id, other.session_id)
    assert await other.delete(journal=True) is True
    assert not path.exists() and await svc.sessions.read_journal(other.session_id) == []


async def test_forget_a_dormant_session_through_a_fresh_agent(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        await handle.prompt(text("a session for later"))
        session_id = handle.session_id
    path = svc.sessions.journals.path(svc.workspace_id, session_id)
    assert await svc.sessions.forget(session_id) is True  # the journal names the profile
    assert session_id not in await listed(svc) and path.is_file()
    message = "would not delete session " + session_id + ": Resource not found"
    with pytest.raises(AgentSessionError, match=message):  # the agent's refusal, with its message
        await svc.sessions.forget(session_id)
    assert path.is_file()  # a refusal removes nothing
    with pytest.raises(AgentSessionInputError, match="pass profile_id"):
        await svc.sessions.forget("never-journaled")
    with pytest.raises(AgentSessionError, match="would not delete session gone"):
        await svc.sessions.forget("gone", profile_id="demo")


async def test_an_agent_without_delete_is_only_let_go(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("ok"))
    svc = workspace.service()
    handle = await svc.sessions.connect("raw-ok")
    await handle.prompt(text("hi"))
    path = svc.sessions.journals.path(svc.workspace_id, handle.session_id)
    assert handle.can_delete is False
    assert await handle.delete(journal=True) is False
    assert handle.disposed and not path.exists()


async def test_logout_where_the_agent_offers_it(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("demo-auth", "--auth-on-prompt"))
    svc = workspace.service()
    await svc.sessions.logout("demo-auth")
    with pytest.raises(AgentSessionError, match="does not offer logout"):
        await svc.sessions.logout("demo")


async def test_doctor_says_which_mcp_servers_the_agent_takes(workspace: Workspace) -> None:
    servers = [
        {"name": "kernel", "command": "python", "args": ["-m", "tool"]},
        {"name": "remote", "type": "http", "url": "https://example.org/mcp"},
    ]
    workspace.add_profiles(demo_agent("demo-mcp", mcp_servers=servers))
    svc = workspace.service()
    report = "\n".join((await svc.sessions.doctor("demo-mcp")).lines())
    assert "MCP servers it takes: stdio\n" in report + "\n"
    assert 'MCP server "kernel" (stdio, python -m tool): sent' in report
    assert 'MCP server "remote" left out: the agent does not take http servers' in report
    assert "delete=True" in report and "logout=False" in report
