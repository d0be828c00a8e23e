"""Regressions of issue 7: what a transcript shows reaches the reducer one way, live and restored alike.

- A permission answered by an ``on_permission`` listener showed twice in the live transcript.
- A title sent as ``sessionInfo.title`` showed live but was lost on restore.
- Live and static views disagreed (headings, the header row), so a cell jumped when its turn ended.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from IPython.core.interactiveshell import InteractiveShell

import silo_nb
from silo_nb.notebook.render import static_bundle, transcript_html
from silo_nb.notebook.widgets import TurnView
from silo_nb.updates.transcript import PermissionEntry, fold_all, with_status
from tests.agents.scripted import Peer, scripted_service
from tests.conftest import Workspace
from tests.support.shell import final_bundle, run, shell  # noqa: F401 - the shell fixture

EDIT = {
    "toolCall": {"toolCallId": "call-1", "title": "Edit notes.md", "kind": "edit", "status": "pending"},
    "options": [
        {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    ],
}


async def titled_turn(peer: Peer, text: str) -> None:
    await peer.update({"sessionUpdate": "session_info_update", "sessionInfo": {"title": "Penguin cleanup"}})
    await peer.update(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"# Done\n{text}"}}
    )
    answer = await peer.ask_permission(EDIT)
    outcome = answer["outcome"]
    status = "completed" if outcome.get("optionId") == "allow-once" else "failed"
    await peer.update({"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": status})


async def live_and_restored(workspace: Workspace, answer: Any) -> tuple[TurnView, list[Any], str]:
    svc = scripted_service(workspace, titled_turn)
    with anyio.fail_after(20):
        handle = await svc.sessions.connect("scripted")
    async with handle:
        if answer is not None:
            handle.on_permission(answer)  # registered before the view's own listener
        view = TurnView(label=handle.agent_name)
        handle.on_transcript(view.transcript.apply)
        handle.on_permission(view.add_permission)
        with anyio.fail_after(20):
            await handle.prompt([{"type": "text", "text": "tidy the notes"}])
        view.transcript.set_status("finished", stop_reason="end_turn")
        journal = await svc.sessions.read_journal(handle.session_id)
        title = handle.title
    return view, journal, title


async def test_a_permission_answered_by_a_listener_shows_once(workspace: Workspace) -> None:
    view, journal, _ = await live_and_restored(workspace, lambda request: request.respond("allow-once"))
    live = [e for e in view.state.entries if isinstance(e, PermissionEntry)]
    assert len(live) == 1 and live[0].choice == "allow-once" and live[0].answered
    assert view.html.count("Permission:") == 1
    restored = [e for e in fold_all(journal).entries if isinstance(e, PermissionEntry)]
    assert restored == live
    view.close_all()


async def test_the_live_and_the_restored_transcript_are_the_same_entries(workspace: Workspace) -> None:
    def later(request: silo_nb.AgentPermissionRequest) -> None:
        asyncio.get_running_loop().call_later(0.01, request.respond, "reject-once")

    view, journal, _ = await live_and_restored(workspace, later)
    assert fold_all(journal).entries == view.state.entries
    assert view.state.prompt_text == "tidy the notes"  # the prompt came in as an update too
    view.close_all()


async def test_a_session_info_title_survives_restore(workspace: Workspace) -> None:
    view, journal, title = await live_and_restored(workspace, lambda r: r.respond("allow-once"))
    assert title == "Penguin cleanup"
    assert view.state.title == "Penguin cleanup"
    assert fold_all(journal).title == "Penguin cleanup"
    # A resumed connect takes its title from the journal by the same rule.
    from silo_nb.sessions.journal import encode_line
    from silo_nb.sessions.journal.reconcile import last_title

    assert last_title([encode_line(u) for u in journal]) == "Penguin cleanup"
    view.close_all()


async def test_the_live_view_and_the_static_bundle_render_alike(workspace: Workspace) -> None:
    """The cell must not jump when the turn ends: the live body is exactly the saved HTML."""
    view, journal, _ = await live_and_restored(workspace, lambda r: r.respond("allow-once"))
    assert view.state.title == "Penguin cleanup"  # a title arrived during the turn, and must not add a row
    live_html = view.html
    static_html = static_bundle(view.state, metadata={}, title="", label=view.label)[0]["text/html"]
    assert live_html == static_html
    assert 'class="silo-header"' in live_html and "<h1" in live_html
    # The restored transcript is the same box, but for its status.
    restored = transcript_html(with_status(fold_all(journal), "finished"), title="", label=view.label)
    assert restored == static_html
    view.close_all()


@pytest.mark.usefixtures("shell")
async def test_the_notebook_path_shows_a_listener_answer_once(shell: InteractiveShell) -> None:  # noqa: F811
    """The issue's own steps: ``%silo connect demo --new``, an ``on_permission`` listener, an edit."""
    await run(shell, "%silo connect demo --new")
    shell.user_ns["demo"].on_permission(lambda r: r.respond("allow-once"))
    captured, result = await run(shell, "%%prompt\nPlease edit notes.md")
    assert result.success, result.error_in_exec
    bundle = final_bundle(captured)
    assert bundle.data["text/html"].count("Permission:") == 1
    assert bundle.data["text/plain"].count("permission>") == 1
