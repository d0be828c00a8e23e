"""ACP v1.25 subagents through a live session (issue 31, part 2), against an in-process scripted agent: the
client advertises ``subagents``; a child's traffic (its own session id) reaches ``on_update`` with
``child_session_id``, is journaled under the parent and restored as shown live; a child's permission
request goes to the parent's listeners naming the child; a per-child Stop sends ``session/cancel`` with the
child's id; a child never announced is kept; a child's permission outside a turn is served all the same."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio

from silo_nb.model import AgentPermissionRequest, AgentSessionUpdate
from silo_nb.notebook.render import transcript_html
from silo_nb.updates import SubagentEntry
from silo_nb.updates.transcript import fold_all
from tests.agents.scripted import Peer, scripted_service
from tests.agents.subagent_turns import ASK, CHILD, chunk, delegate
from tests.conftest import Workspace


async def test_a_child_s_traffic_permission_and_journal(workspace: Workspace) -> None:
    answers: list[Any] = []
    peers: list[Peer] = []

    async def turn(peer: Peer, _text: str) -> None:
        peers.append(peer)
        await delegate(peer, answers)

    svc = scripted_service(workspace, turn)
    updates: list[AgentSessionUpdate] = []
    transcript: list[AgentSessionUpdate] = []
    asked: list[AgentPermissionRequest] = []
    with anyio.fail_after(20):
        async with await svc.sessions.connect("scripted") as handle:
            handle.on_update(updates.append)
            handle.on_transcript(transcript.append)

            def allow(request: AgentPermissionRequest) -> None:
                asked.append(request)
                request.respond("allow")

            handle.on_permission(allow)
            await handle.prompt([{"type": "text", "text": "go"}])
            journal = await svc.sessions.read_journal(handle.session_id)
            title = handle.title
    assert peers[0].client_capabilities["subagents"] == {}
    # on_update: the child's updates carry its id; the parent's none
    children = [(u.kind, u.child_session_id) for u in updates if u.child_session_id]
    assert children == [
        ("agent_message_chunk", CHILD),
        ("session_info_update", CHILD),
        ("agent_message_chunk", CHILD),
        ("agent_message_chunk", "ghost-9"),
    ]
    assert title != "CHILD TITLE"  # a child's title is not its parent's
    # the permission: to the parent's listener, naming the child; the agent got the answer
    (request,) = asked
    assert (request.child_session_id, request.child_title) == (CHILD, "Explorer")
    assert answers == [{"outcome": {"outcome": "selected", "optionId": "allow"}}]
    # the journal restores what was shown live
    restored, live = fold_all(journal), fold_all(transcript)
    assert transcript_html(restored) == transcript_html(live)
    explorer, ghost = restored.subagents
    assert (explorer.title, explorer.state, explorer.cancel) == ("Explorer", "idle", True)
    assert [type(e).__name__ for e in explorer.entries] == ["MessageEntry", "PermissionEntry", "MessageEntry"]
    assert explorer.transcript is not None and explorer.transcript.permissions[0].choice == "allow"
    assert not ghost.announced and ghost.label == "unannounced child ghost-9"
    assert "main agent → Explorer" in transcript_html(restored)
    assert restored.reply_text == "Delegating.All done."  # the child's words stay in the child


async def test_a_per_child_stop_sends_session_cancel_with_the_child_s_id(workspace: Workspace) -> None:
    release = anyio.Event()
    peers: list[Peer] = []

    async def turn(peer: Peer, _text: str) -> None:
        peers.append(peer)
        await peer.update(
            {"sessionUpdate": "subagent_update", "sessionId": CHILD, "capabilities": {"cancel": {}}}
        )
        await peer.update({"sessionUpdate": "subagent_update", "sessionId": "no-cancel"})
        await peer.update(chunk("working"), session_id=CHILD)
        await release.wait()

    svc = scripted_service(workspace, turn)
    with anyio.fail_after(20):
        async with await svc.sessions.connect("scripted") as handle:
            seen: list[AgentSessionUpdate] = []
            handle.on_update(seen.append)
            async with anyio.create_task_group() as tg:
                tg.start_soon(handle.prompt, [{"type": "text", "text": "go"}])
                while not any(u.child_session_id == CHILD for u in seen):
                    await anyio.sleep(0.01)
                assert handle.cancel_child("no-cancel") is False  # it offers no cancel
                assert handle.cancel_child("never-heard-of") is False
                assert handle.cancel_child(CHILD) is True
                while not peers[0].notifications:
                    await anyio.sleep(0.01)
                release.set()
    (sent,) = peers[0].notifications
    assert sent["method"] == "session/cancel" and sent["params"] == {"sessionId": CHILD}


async def test_a_child_s_permission_while_no_turn_runs_is_served_and_journaled(workspace: Workspace) -> None:
    answers: list[Any] = []
    later: list[asyncio.Task[None]] = []

    async def ask_later(peer: Peer) -> None:
        await anyio.sleep(0.05)
        answers.append(await peer.ask_permission(ASK, session_id=CHILD))

    async def turn(peer: Peer, _text: str) -> None:
        await peer.update({"sessionUpdate": "subagent_update", "sessionId": CHILD, "title": "Background"})
        later.append(asyncio.get_running_loop().create_task(ask_later(peer)))

    svc = scripted_service(workspace, turn)
    asked: list[AgentPermissionRequest] = []
    with anyio.fail_after(20):
        async with await svc.sessions.connect("scripted") as handle:
            handle.on_permission(lambda request: (asked.append(request), request.respond("reject")))
            await handle.prompt([{"type": "text", "text": "go"}])
            await later[0]
            journal = await svc.sessions.read_journal(handle.session_id)
    assert asked[0].child_title == "Background"
    assert answers == [{"outcome": {"outcome": "selected", "optionId": "reject"}}]
    (child,) = fold_all(journal).subagents
    assert isinstance(child, SubagentEntry) and child.transcript is not None
    assert child.transcript.permissions[0].choice == "reject"


async def test_a_request_under_an_id_never_seen_is_still_refused(workspace: Workspace) -> None:
    answers: list[Any] = []

    async def turn(peer: Peer, _text: str) -> None:
        answers.append(await peer.ask_permission(ASK, session_id="stranger"))

    svc = scripted_service(workspace, turn)
    with anyio.fail_after(20):
        async with await svc.sessions.connect("scripted") as handle:
            handle.on_permission(lambda request: request.respond("allow"))
            await handle.prompt([{"type": "text", "text": "go"}])
    assert answers == [None]  # answered with an error (no result): an unknown session asks nothing


async def test_a_child_s_question_names_the_child_and_shows_in_its_transcript(workspace: Workspace) -> None:
    answers: list[Any] = []

    async def turn(peer: Peer, _text: str) -> None:
        await peer.update({"sessionUpdate": "subagent_update", "sessionId": CHILD, "title": "Asker"})
        schema = {"type": "object", "properties": {"ok": {"type": "boolean", "title": "OK?"}}}
        question = {"mode": "form", "message": "May I?", "requestedSchema": schema}
        answers.append(await peer.ask("elicitation/create", question, session_id=CHILD))

    svc = scripted_service(workspace, turn)
    questions: list[Any] = []
    with anyio.fail_after(20):
        async with await svc.sessions.connect("scripted") as handle:
            handle.on_elicitation(lambda request: (questions.append(request), request.accept({"ok": True})))
            await handle.prompt([{"type": "text", "text": "go"}])
            journal = await svc.sessions.read_journal(handle.session_id)
    (request,) = questions
    assert (request.child_session_id, request.child_title) == (CHILD, "Asker")
    assert answers == [{"action": "accept", "content": {"ok": True}}]
    (child,) = fold_all(journal).subagents
    assert [type(entry).__name__ for entry in child.entries] == ["QuestionEntry"]


def test_the_children_told_apart_are_bounded() -> None:
    from silo_nb.sessions.session.subagents import CHILDREN_KEPT, Subagents

    children = Subagents()
    for number in range(CHILDREN_KEPT + 500):
        children.child(f"c{number}")
        children.synth(f"c{number}")
    assert len(children) == CHILDREN_KEPT
    assert children.synth("c-late-1") is children.synth("c-late-2")  # one shared past the bound
    assert children.child("c-late-3").label == "unannounced child c-late-3"  # still named, not kept
