"""``%silo fork``, ``%silo connect --system-prompt / --no-notebook-guidance`` and the default title of a
notebook's session (issue 31), in a real ``InteractiveShell`` against the in-process demo agent."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

import silo_nb
from silo_nb.notebook.magics import NotebookSession, session_of, use_session
from silo_nb.notebook.magics.connecting import default_title
from silo_nb.notebook.magics.dormant_list import dormant_sessions
from silo_nb.notebook.widgets.snapshot_views import dormant_state
from silo_nb.sessions.system_prompt import NOTEBOOK_GUIDANCE
from tests.conftest import Workspace, demo_agent
from tests.support.shell import final_bundle, restart, run, shell

__all__ = ["shell"]  # the fixture


def prompt_text(handle: silo_nb.AgentSessionHandle) -> str:
    prompt = handle.system_prompt
    assert prompt is not None
    return str(prompt["content"][0]["text"])


async def test_fork_magic_opens_a_connection_that_starts_from_the_parent(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    await run(shell, "%silo connect demo")
    await run(shell, "%%prompt demo\nfirst question")
    captured, result = await run(shell, "%silo fork demo --as side")
    assert result.success, captured.stderr + captured.stdout
    parent, side = shell.user_ns["demo"], shell.user_ns["side"]
    assert isinstance(side, silo_nb.AgentSessionHandle) and side.is_live
    assert side.session_id != parent.session_id
    assert [u.text for u in side.journal if u.kind == "user_message_chunk"] == ["first question"]
    assert side.core.extra_mcp_servers, "the fork has kernel tools of its own"
    assert side.core.extra_mcp_servers != parent.core.extra_mcp_servers
    captured, _ = await run(shell, "%%prompt side\nonly in the fork")
    assert "only in the fork" in final_bundle(captured).data["text/markdown"]
    fork_id = side.session_id
    # After a restart, the same cells resume that fork (not a second one).
    restart(shell, workspace)
    await run(shell, "%silo connect demo")
    captured, result = await run(shell, "%silo fork demo --as side")
    assert result.success, captured.stderr + captured.stdout
    back = shell.user_ns["side"]
    assert back.session_id == fork_id and back.resume_outcome == "resumed"
    assert [u.text for u in back.journal if u.kind == "user_message_chunk"] == [
        "first question",
        "only in the fork",
    ]


async def test_fork_magic_errors_are_one_line(shell: InteractiveShell, workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("plain", "--no-fork"))
    use_session(shell, NotebookSession(shell, workspace.service()))
    await run(shell, "%silo connect plain")
    for cell, expected in [
        ("%silo fork plain --as other", "does not offer session/fork (its sessionCapabilities.fork)"),
        ("%silo fork plain --as plain", "is the connection being forked"),
        ("%silo fork plain --as 2x", "must be a Python identifier"),
        ("%silo fork ghost --as other", 'No connection named "ghost"'),
    ]:
        captured, result = await run(shell, cell)
        assert not result.success
        message = captured.stderr + captured.stdout
        assert "UsageError" in message and expected in message, message
        assert "Traceback" not in message
    assert "other" not in session_of(shell).connections


async def test_connect_system_prompt_and_notebook_guidance(shell: InteractiveShell) -> None:
    await run(shell, '%silo connect demo --system-prompt "Answer in haiku."')
    text = prompt_text(shell.user_ns["demo"])
    assert text == "Answer in haiku.\n\n" + NOTEBOOK_GUIDANCE  # a kernel session: the guidance follows
    # Connecting the name again with another prompt reconnects (the prompt goes with the session's set-up).
    await run(shell, "%silo connect demo --no-notebook-guidance")
    assert prompt_text(shell.user_ns["demo"]) == "Answer in haiku."
    await run(shell, "%silo connect demo --as bare --no-kernel-tools")
    assert shell.user_ns["bare"].system_prompt is None  # no kernel tools: no notebook guidance, no text


async def test_a_named_notebook_names_its_new_session(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/ada/analysis.ipynb")
    await run(shell, "%silo connect demo")
    handle = shell.user_ns["demo"]
    assert handle.title.startswith("analysis · cell ")
    assert session_of(shell).service.get(handle.id).title == handle.title  # type: ignore[union-attr]
    # A resumed session keeps its title; a headless run (no notebook name) sets none.
    monkeypatch.delenv("JPY_SESSION_NAME")
    assert default_title(shell) is None
    await run(shell, "%silo connect demo --as other")
    assert not shell.user_ns["other"].title.startswith("analysis")


async def test_the_agents_list_asks_a_live_agent_about_dormant_sessions(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    ids = {}
    for name in ("kept", "lost"):
        await run(shell, f"%silo connect demo --as {name} --no-kernel-tools")
        await run(shell, f"%%prompt {name}\nhello")
        ids[name] = shell.user_ns[name].session_id
        await run(shell, f"%silo disconnect {name}")
    (workspace.root / "demo-state" / f"{ids['lost']}.json").unlink()  # the agent forgets one of them
    listed = {d.session_id: d for d in await dormant_sessions(session_of(shell))}
    assert listed[ids["lost"]].agent_status is None  # nothing live to ask: from disk alone
    await run(shell, "%silo connect demo --as asker --no-kernel-tools")
    listed = {d.session_id: d for d in await dormant_sessions(session_of(shell))}
    assert (listed[ids["kept"]].agent_status, listed[ids["kept"]].stale) == ("saved", False)
    assert (listed[ids["lost"]].agent_status, listed[ids["lost"]].stale) == ("unknown", True)
    assert dormant_state(listed[ids["lost"]]).startswith("stale — the agent no longer knows it")
