"""Resume routing (silo-agents-api.md §2.1 step 11, §3.5, §3.6), with real agent subprocesses.

Every branch: session/resume, session/load with replay, journal-only, a stale id, start_fresh carry and
discard, and a load that adopts a new session id. Plus the in-place ``AgentsService.resume``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import silo_nb
from tests.conftest import Workspace, demo_agent, raw_agent


def text(value: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": value}]


async def first_session(svc: silo_nb.AgentsService, profile: str, prompt: str = "hello there") -> str:
    async with await svc.sessions.connect(profile) as handle:
        await handle.prompt(text(prompt))
        return handle.session_id


def journal_file(svc: silo_nb.AgentsService, session_id: str) -> list[dict[str, object]]:
    path = svc.sessions.journals.path(svc.workspace_id, session_id)
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_resume_capable_agent_resumes_without_replay(workspace: Workspace) -> None:
    svc = workspace.service()
    session_id = await first_session(svc, "demo")
    prior = await svc.sessions.read_journal(session_id)
    states: list[list[silo_nb.AgentInfo]] = []
    svc.subscribe(states.append)
    async with await svc.sessions.connect(
        "demo", resume={"session_id": session_id}, title="Old title"
    ) as handle:
        assert handle.resume_outcome == "resumed"
        assert handle.session_id == session_id and handle.id == f"chat:{session_id}"
        assert list(handle.journal) == prior  # resume replays nothing: the journal is the transcript
        assert states[0][0].chat_resume_state == "resuming" and states[0][0].can_resume is False
        assert states[0][0].title == "Old title"
        info = svc.get_state()[0]
        assert info.chat_resume_state == "resumed" and info.activity == "idle" and info.can_resume
        assert info.title == "Old title"
        await handle.prompt(text("and a second turn"))
    journal = await svc.sessions.read_journal(session_id)
    users = [u for u in journal if u.kind == "user_message_chunk"]
    assert [u.text for u in users] == ["hello there", "and a second turn"]
    assert journal[: len(prior)] == prior


async def test_load_only_agent_replays_and_journal_is_reconciled(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("demo-load", "--no-resume"))
    svc = workspace.service()
    session_id = await first_session(svc, "demo-load")
    prior = journal_file(svc, session_id)
    prior_stamp = prior[0]["timestamp"]
    async with await svc.sessions.connect("demo-load", resume={"session_id": session_id}) as handle:
        assert handle.resume_outcome == "resumed"
        assert svc.get_state()[0].activity == "idle"  # a replay is not a turn
        kinds = [u.kind for u in handle.journal]
        assert kinds.count("user_message_chunk") == 1  # the replay replaced the seed: nothing doubled
        user = handle.journal[0]
        assert user.kind == "user_message_chunk" and user.text == "hello there"
        assert user.timestamp == prior_stamp  # backfilled by position from the prior journal
    on_disk = journal_file(svc, session_id)
    assert [line["kind"] for line in on_disk] == kinds
    assert on_disk[0]["timestamp"] == prior_stamp


async def test_agent_that_can_neither_resume_nor_load_is_journal_only(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("demo-old", "--no-resume", "--no-load"))
    svc = workspace.service()
    session_id = await first_session(svc, "demo-old")
    prior = await svc.sessions.read_journal(session_id)
    handle = await svc.sessions.connect("demo-old", resume={"session_id": session_id})
    assert handle.resume_outcome == "journal-only"
    assert list(handle.journal) == prior and handle.session_id == session_id
    assert handle.can_resume is False and not handle.is_live
    info = svc.get_state()[0]
    assert info.activity == "dead" and info.chat_resume_state == "journal-only"
    with pytest.raises(silo_nb.AgentSessionError) as error:
        await handle.prompt(text("more"))
    assert str(error.value) == (
        f"Demo demo-old is journal-only — reconnect with resume={{'session_id': '{session_id}', "
        "'start_fresh': True} to continue."
    )
    handle.cancel()  # does nothing
    with pytest.raises(silo_nb.AgentSessionError, match="journal-only — there is no live connection to ask"):
        await handle.list_sessions()
    await handle.aclose()

    # Continue it: start fresh, carrying the transcript into the new session's journal.
    async with await svc.sessions.connect(
        "demo-old", resume={"session_id": session_id, "start_fresh": True}
    ) as fresh:
        assert fresh.resume_outcome == "new" and fresh.session_id != session_id
        assert list(fresh.journal) == prior
        assert svc.get_state()[0].chat_resume_state == "live"
        await fresh.prompt(text("carry on"))
        carried = await svc.sessions.read_journal(fresh.session_id)
    assert carried[: len(prior)] == prior and carried[len(prior)].text == "carry on"
    assert await svc.sessions.read_journal(session_id) == prior  # the old file is left alone


async def test_start_fresh_discard_deletes_the_old_journal(workspace: Workspace) -> None:
    svc = workspace.service()
    session_id = await first_session(svc, "demo")
    old_path = svc.sessions.journals.path(svc.workspace_id, session_id)
    assert old_path.exists()
    async with await svc.sessions.connect(
        "demo",
        resume=silo_nb.AgentSessionRestore(session_id=session_id, start_fresh=True, transcript="discard"),
    ) as handle:
        assert handle.resume_outcome == "new" and handle.journal == ()
        assert not old_path.exists()
        assert await svc.sessions.read_journal(session_id) == []


@pytest.mark.parametrize("journal", ["none", "metadata-only"])
async def test_stale_id_falls_back_to_a_new_session(workspace: Workspace, journal: str) -> None:
    svc = workspace.service()
    stale = "demo-000000000000"
    if journal == "metadata-only":
        path = svc.sessions.journals.path(svc.workspace_id, stale)
        path.parent.mkdir(parents=True)
        path.write_text(
            '{"kind":"session_info_update","raw":{"sessionUpdate":"session_info_update","title":"x"}}\n'
        )
    async with await svc.sessions.connect("demo", resume={"session_id": stale}) as handle:
        assert handle.resume_outcome == "new"
        assert handle.session_id != stale and handle.journal == ()
        assert svc.get_state()[0].chat_resume_state == "live"
        assert [i.id for i in svc.get_state()] == [handle.id]  # the placeholder is gone


async def test_load_that_adopts_a_new_id_rekeys_the_journal(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("load-forks"))
    svc = workspace.service()
    old_id = await first_session(svc, "raw-load-forks", prompt="hello")
    assert old_id == "raw-1"
    prior = journal_file(svc, old_id)
    async with await svc.sessions.connect("raw-load-forks", resume={"session_id": old_id}) as handle:
        assert handle.resume_outcome == "resumed"
        assert handle.session_id == "forked-2" and handle.id == "chat:forked-2"
        assert [u.text for u in handle.journal] == ["hello", "echo: hello (replayed)", None]
        assert handle.journal[-1].kind == "turn_end"  # the first turn's outcome, carried over the replay
        assert [i.id for i in svc.get_state()] == ["chat:forked-2"]
        assert svc.get_state()[0].session_id == "forked-2"
    adopted = journal_file(svc, "forked-2")
    assert adopted[0]["timestamp"] == prior[0]["timestamp"]
    # As in Silo the old file is reconciled in place and then left on disk (an orphan prune collects it).
    assert journal_file(svc, old_id) == adopted


async def test_session_config_is_not_applied_to_resumed_sessions(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("demo-cfg", session_config={"mode": "plan"}))
    svc = workspace.service()
    async with await svc.sessions.connect("demo-cfg") as handle:
        assert {o.id: o.current_value for o in handle.config_options}["mode"] == "plan"
        await handle.set_config_option("mode", "ask")
        session_id = handle.session_id
    async with await svc.sessions.connect("demo-cfg", resume={"session_id": session_id}) as resumed:
        assert resumed.resume_outcome == "resumed"
        assert {o.id: o.current_value for o in resumed.config_options}["mode"] == "ask"


async def test_in_place_resume_keeps_the_handle(workspace: Workspace) -> None:
    svc = workspace.service(subprocess=True)  # a real process is swapped for a new one
    async with await svc.sessions.connect("demo") as handle:
        await handle.prompt(text("first"))
        old_pid = handle.core.wiring.connection.process.pid  # type: ignore[union-attr]
        svc.acknowledge(handle.id)
        await svc.resume(handle.id)
        assert handle.core.wiring.connection.process.pid != old_pid  # type: ignore[union-attr]
        info = svc.get_state()[0]
        assert info.id == handle.id and info.chat_resume_state == "resumed" and info.activity == "idle"
        assert (await handle.prompt(text("second"))).stop_reason == "end_turn"
    await svc.resume("chat:unknown")  # unknown ids: nothing happens


async def test_read_journal_of_unknown_or_hostile_ids(workspace: Workspace) -> None:
    svc = workspace.service()
    assert await svc.sessions.read_journal("never-seen") == []
    assert await svc.sessions.read_journal("../../../etc/passwd") == []
    assert await svc.sessions.read_journal("") == []


async def test_resumed_session_keeps_the_title_from_its_journal(workspace: Workspace) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        await handle.prompt(text("/title Penguin clean-up"))
        session_id = handle.session_id
    async with await svc.sessions.connect("demo", resume={"session_id": session_id}):
        assert svc.get_state()[0].title == "Penguin clean-up"
    async with await svc.sessions.connect("demo", resume={"session_id": session_id}, title="Given title"):
        assert svc.get_state()[0].title == "Given title"


async def test_permission_request_ids_stay_unique_across_a_resume(workspace: Workspace) -> None:
    """Request ids restart with each connection unless seeded: a resumed journal holding
    ``silo-permission-1`` must not get a second one (the reducer pairs decisions by id)."""
    svc = workspace.service()
    seen: list[str] = []

    def allow(request: silo_nb.AgentPermissionRequest) -> None:
        seen.append(request.request_id)
        request.respond(request.options[0].option_id)

    async with await svc.sessions.connect("demo") as handle:
        handle.on_permission(allow)
        await handle.prompt(text("edit notes.md"))
        session_id = handle.session_id
    async with await svc.sessions.connect("demo", resume={"session_id": session_id}) as resumed:
        resumed.on_permission(allow)
        await resumed.prompt(text("edit notes.md again"))
    assert seen == ["silo-permission-1", "silo-permission-2"]
    lines = journal_file(svc, session_id)
    asked = [line["raw"]["requestId"] for line in lines if line["kind"] == "permission_request"]  # type: ignore[index]
    assert asked == seen


@pytest.mark.parametrize("kind", ["usage_update", "config_option_update", "agent_message_chunk"])
async def test_a_stale_id_whose_journal_holds_more_than_silos_metadata_is_journal_only(
    workspace: Workspace, kind: str
) -> None:
    """Silo §2.1: only commands, titles and modes are metadata here; a usage or config-option update
    keeps the journal (journal-only), it is not thrown away for a fresh session."""
    svc = workspace.service()
    stale = "demo-000000000001"
    path = svc.sessions.journals.path(svc.workspace_id, stale)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"kind": kind, "raw": {"sessionUpdate": kind}}) + "\n")
    async with await svc.sessions.connect("demo", resume={"session_id": stale}) as handle:
        assert handle.resume_outcome == "journal-only"
        assert [u.kind for u in handle.journal] == [kind]


async def test_ids_skip_past_requests_answered_with_nobody_listening(workspace: Workspace) -> None:
    """A request answered ``cancelled`` because nobody listens is not recorded and takes no id, so a
    resumed journal's highest id is the one to continue after."""
    workspace.add_profiles(demo_agent("demo-noload", "--no-load"))
    svc = workspace.service()
    async with await svc.sessions.connect("demo-noload") as handle:
        await handle.prompt(text("edit notes.md"))  # no listener: cancelled, nothing recorded
        handle.on_permission(lambda r: r.respond(r.options[0].option_id))
        await handle.prompt(text("edit notes.md now"))
        session_id = handle.session_id
    async with await svc.sessions.connect("demo-noload", resume={"session_id": session_id}) as resumed:
        resumed.on_permission(lambda r: r.respond(r.options[-1].option_id))
        await resumed.prompt(text("edit notes.md again"))
    asked = [
        line["raw"]["requestId"]  # type: ignore[index]
        for line in journal_file(svc, session_id)
        if line["kind"] == "permission_request"
    ]
    assert asked == ["silo-permission-1", "silo-permission-2"]


async def test_a_failed_in_place_resume_leaves_the_live_session_as_it_was(
    workspace: Workspace, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The new process is closed when its resume fails; the old one carries on: same status, the same
    journal, and the next prompt goes through."""
    import shutil

    svc = workspace.service(subprocess=True)
    async with await svc.sessions.connect("demo") as handle:
        await handle.prompt(text("first"))
        old_pid = handle.core.wiring.connection.process.pid  # type: ignore[union-attr]
        svc.acknowledge(handle.id)
        before = svc.get_state()[0]
        shutil.rmtree(tmp_path / "demo-state")  # a new agent process knows nothing of the session
        with caplog.at_level(logging.INFO, logger="silo_nb"):
            await svc.resume(handle.id)  # logged, state unchanged
        assert "could neither resume nor load" in caplog.text
        assert handle.core.wiring.connection.process.pid == old_pid  # type: ignore[union-attr]
        after = svc.get_state()[0]
        assert (after.activity, after.chat_resume_state) == (before.activity, before.chat_resume_state)
        journal = await svc.sessions.read_journal(handle.session_id)
        assert [u.raw.get("outcome") for u in journal if u.kind == "turn_end"] == ["finished"]
        assert (await handle.prompt(text("second"))).stop_reason == "end_turn"


async def test_a_replacement_that_dies_during_an_in_place_resume_leaves_the_old_agent_s_turn_alone(
    workspace: Workspace,
) -> None:
    """The agent started for an in-place resume exits before answering: the resume fails (logged), and
    the live agent's pending permission and running turn are untouched — the closing of the process that
    never took over is not the session's connection being lost."""
    import anyio

    from silo_nb.acp.transport import InProcessTransport
    from tests.conftest import in_process_demo

    spawned: list[str] = []

    async def factory(profile: silo_nb.AgentProfile, cwd: str) -> InProcessTransport:
        spawned.append(profile.id)
        if len(spawned) == 1:
            return await in_process_demo(profile, cwd)  # type: ignore[return-value]

        async def dies(receive: object, send: object) -> None:
            raise SystemExit(3)  # like a process that exits at once

        return InProcessTransport(dies, name="dying replacement")

    svc = silo_nb.AgentsService(
        workspace_dir=workspace.folder,
        config_dirs=[workspace.config],
        data_dir=workspace.data,
        transport_factory=factory,
    )
    async with await svc.sessions.connect("demo") as handle:
        asked: list[silo_nb.AgentPermissionRequest] = []
        handle.on_permission(asked.append)  # held, not answered yet
        results: list[silo_nb.AgentPromptResult] = []
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                results.append(await handle.prompt(text("edit the notes")))

            tg.start_soon(run)
            with anyio.fail_after(10):
                while not asked:
                    await anyio.sleep(0.01)
            await svc.resume(handle.id)  # the replacement dies: logged, nothing else
            assert len(spawned) == 2
            assert not asked[0].answered, "the live agent's request was cancelled by the dead replacement"
            assert svc.get_state()[0].activity in ("blocked", "working")
            asked[0].respond(asked[0].options[0].option_id)
        assert results[0].stop_reason == "end_turn"
        assert (await handle.prompt(text("and again"))).stop_reason == "end_turn"
