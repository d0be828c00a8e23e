"""``%silo forget SESSION_ID [--journal]`` and ``%silo logout NAME`` in a real shell."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell

from silo_nb.notebook.magics import session_of
from tests.conftest import Workspace, demo_agent
from tests.support.shell import run, shell  # noqa: F401  (a fixture)


async def test_forget_disconnects_the_connection_and_keeps_the_journal_unless_asked(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    await run(shell, "%silo connect demo")
    await run(shell, "%%prompt\nhello")
    handle = shell.user_ns["demo"]
    journals = session_of(shell).service.sessions.journals
    path = journals.path(handle.workspace_id, handle.session_id)
    captured, result = await run(shell, f"%silo forget {handle.session_id}")
    assert result.success, result.error_in_exec
    assert f"forgot {handle.session_id}: the agent deleted it; its journal is kept" in captured.stdout
    assert handle.disposed and "demo" not in session_of(shell).connections and path.is_file()
    captured, result = await run(shell, f"%silo forget {handle.session_id} --journal")
    assert not result.success and "would not delete session" in str(result.error_in_exec)  # already gone
    assert path.is_file()
    _, result = await run(shell, "%silo forget nobody-knows")
    assert not result.success and "--profile PROFILE" in str(result.error_in_exec)


async def test_logout_names_what_the_agent_offers(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    workspace.add_profiles(demo_agent("demo-auth", "--auth-on-prompt"))
    captured, result = await run(shell, "%silo logout demo-auth")
    assert result.success and "logged out of demo-auth" in captured.stdout
    _, result = await run(shell, "%silo logout demo")
    assert not result.success and "does not offer logout" in str(result.error_in_exec)
