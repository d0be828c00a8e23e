"""``%silo agents`` after a kernel restart: the earlier sessions of this workspace, each with a Resume
button that reconnects it under a name (the one it had, or a fresh one when taken)."""

from __future__ import annotations

import asyncio

import anyio
import pytest
from IPython.core.interactiveshell import InteractiveShell

from silo_nb.notebook.magics import session_of
from silo_nb.notebook.widgets import AgentsList
from tests.conftest import Workspace, demo_agent
from tests.notebook.widget_utils import frontend_click
from tests.support.shell import restart, run, shell  # noqa: F401  (a fixture)


async def agents_list(ip: InteractiveShell) -> AgentsList:
    _, result = await run(ip, "%silo agents")
    assert result.success, result.error_in_exec
    shown = [w for w in session_of(ip).shown.widgets() if isinstance(w, AgentsList)]  # type: ignore[attr-defined]
    assert shown
    return shown[-1]


async def click_resume(widget: AgentsList, session_id: str) -> None:
    frontend_click(widget.dormant_rows[session_id].button)
    with anyio.fail_after(30):
        await asyncio.gather(*widget._tasks)


async def test_resume_reconnects_under_the_name_it_had(shell: InteractiveShell, workspace: Workspace) -> None:  # noqa: F811
    await run(shell, "%silo connect demo --as mine")
    await run(shell, "%%prompt\nhello from the first kernel")
    old = shell.user_ns["mine"]
    restart(shell, workspace)
    widget = await agents_list(shell)
    row = widget.dormant_rows[old.session_id]
    assert (row.dormant.name, row.dormant.profile_id, row.dormant.can_resume) == ("mine", "demo", True)
    assert row.button.description == "Resume" and not row.dormant.stale
    html, text = widget.snapshot()
    assert "Earlier sessions" in text and "dormant · idle since" in text and "1 turn" in text
    await click_resume(widget, old.session_id)
    handle = shell.user_ns["mine"]
    assert handle is not old and handle.session_id == old.session_id and handle.resume_outcome == "resumed"
    assert old.session_id not in [r.dormant.session_id for r in widget._shown_dormant()]
    assert widget.resumed and widget.resumed[-1] in widget.children  # the panel, under the list
    html, text = widget.snapshot()
    assert "Earlier sessions" not in text and "Silo demo agent" in html
    # The resumed session takes prompts like any connection; the journal keeps both kernels' turns.
    await run(shell, "%%prompt mine\nand hello again")
    prompts = [u.text for u in handle.journal if u.kind == "user_message_chunk"]
    assert "hello from the first kernel" in prompts


async def test_a_taken_name_gets_a_fresh_one(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JPY_SESSION_NAME", "analysis.ipynb")  # each notebook keeps its own records
    restart(shell, workspace)
    await run(shell, "%silo connect demo --as mine")
    await run(shell, "%%prompt\nfirst session")
    first = shell.user_ns["mine"].session_id
    monkeypatch.setenv("JPY_SESSION_NAME", "report.ipynb")
    restart(shell, workspace)
    await run(shell, "%silo connect demo --as mine")
    widget = await agents_list(shell)
    assert widget.dormant_rows[first].dormant.name == "mine"
    await click_resume(widget, first)
    assert shell.user_ns["mine_2"].session_id == first
    assert shell.user_ns["mine"].session_id != first  # the live one kept its name


async def test_a_stale_session_continues_fresh_and_errors_stay_in_the_row(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    workspace.add_profiles(demo_agent("forgetful", "--no-load", "--no-resume"), demo_agent("doomed"))
    await run(shell, "%silo connect forgetful")
    await run(shell, "%%prompt\nremember this")
    forgetful = shell.user_ns["forgetful"].session_id
    await run(shell, "%silo connect doomed")
    doomed = shell.user_ns["doomed"].session_id
    restart(shell, workspace)
    workspace.profiles = [p for p in workspace.profiles if p["id"] != "doomed"]
    workspace.add_profiles()  # rewrites the file without it (profiles are re-read on every use)
    widget = await agents_list(shell)
    row = widget.dormant_rows[forgetful]
    assert row.dormant.stale and row.button.description == "Continue"
    assert "can neither resume nor load" in widget.snapshot()[1]
    await click_resume(widget, doomed)
    note = widget.dormant_rows[doomed].note.value
    assert "profile &quot;doomed&quot;, which no longer exists" in note and "✗" in note
    assert widget.dormant_rows[doomed].button.description == "Resume"  # can be tried again
    await click_resume(widget, forgetful)
    handle = shell.user_ns["forgetful"]
    assert handle.is_live and handle.session_id != forgetful  # a new session, carrying the transcript
    assert any(u.text == "remember this" for u in handle.journal if u.kind == "user_message_chunk")
    assert forgetful not in [r.dormant.session_id for r in widget._shown_dormant()]
