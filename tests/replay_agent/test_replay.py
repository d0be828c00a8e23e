"""The replay agent: a recorded session played back as a real ACP agent, to silo_nb's own client.

Played over stdio by a real subprocess (a profile with ``replay = "<journal>"``) and in-process
(``serve`` behind an ``InProcessTransport``): the same turns as recorded, a recorded permission asked again
(the same answer goes on; another ends the replay with a note), Stop, a resume in a new agent process that
goes on where it was, and the shipped lesson (``notebooks/data/penguin-lesson.jsonl``) is one.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

import silo_nb
from silo_nb.acp import InProcessTransport, Transport
from silo_nb.replay_agent import parse_args, serve
from silo_nb.replay_agent.recording import Permission, read_recording
from silo_nb.sessions.profiles import AgentProfile, load_profiles, profile_files
from silo_nb.updates.journal_turns import split_turns
from silo_nb.updates.transcript import fold_all
from tests.conftest import Workspace

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "notebooks" / "data" / "penguin-lesson.jsonl"


def replies(updates: Any) -> list[str]:
    """Each turn's agent text, as a transcript shows it."""
    return [fold_all(list(t.head)).reply_text for t in split_turns(updates) if t.number is not None]


@pytest.fixture
def lesson(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> silo_nb.AgentsService:
    monkeypatch.setenv("SILO_NB_REPLAY_STATE_DIR", str(workspace.root / "replay-state"))
    workspace.add_profiles({"id": "lesson", "replay": str(LESSON), "replay_speed": 0})
    return workspace.service()


def test_the_shipped_lesson_is_a_recording() -> None:
    recording = read_recording(LESSON)
    assert [t.prompt for t in recording.turns] == [
        "Make a plan for checking the penguin measurements",
        "/explain the greet function",
        "Edit notes.md: two bill lengths are missing",
        "Please run the tests",
    ]
    permissions = [s for t in recording.turns for s in t.steps if isinstance(s, Permission)]
    assert [p.chosen for p in permissions] == ["allow-once"]
    assert all(t.duration_ms > 0 for t in recording.turns)
    terminal = [s for s in recording.turns[3].steps if isinstance(s, dict) and s.get("content")]
    assert any("3 passed" in str(s["content"]) for s in terminal)  # the terminal's output, as text
    assert "/tmp" not in LESSON.read_text()


async def test_a_replay_plays_the_recorded_turns_and_asks_the_permission_again(
    lesson: silo_nb.AgentsService,
) -> None:
    handle = await lesson.sessions.connect("lesson")
    asked: list[Any] = []

    def allow(request: silo_nb.AgentPermissionRequest) -> None:
        asked.append(request)
        request.respond("allow-once")

    handle.on_permission(allow)
    try:
        assert handle.agent_name == "Replayed from penguin-lesson.jsonl"  # every turn's header says so
        results = [
            await handle.prompt([{"type": "text", "text": t.prompt}]) for t in read_recording(LESSON).turns
        ]
        assert [r.stop_reason for r in results] == ["end_turn"] * 4
        assert [c.name for c in handle.commands] == ["explain", "plan", "title", "clear"]  # its opening
        assert [r.title for r in asked] == ["Edit notes.md"]
        assert [o.option_id for o in asked[0].options] == ["allow-once", "allow-always", "reject-once"]
        assert replies(handle.journal_updates()) == replies(lesson.sessions.journals.read_updates(LESSON))
        over = await handle.prompt([{"type": "text", "text": "and then?"}])
        assert over.stop_reason == "end_turn"
        assert "the recording has no more turns (4 played)" in replies(handle.journal_updates())[-1]
    finally:
        await handle.aclose()


async def test_a_replayed_edit_says_it_was_recorded_and_not_applied(
    lesson: silo_nb.AgentsService, workspace: Workspace
) -> None:
    """Issue 35: a replay showed "Edit notes.md" completed, with its diff, though nothing was written."""
    from silo_nb.notebook.render.markdown import transcript_markdown

    handle = await lesson.sessions.connect("lesson")
    handle.on_permission(lambda request: request.respond("allow-once"))
    try:
        for turn in read_recording(LESSON).turns[:3]:
            await handle.prompt([{"type": "text", "text": turn.prompt}])
        (edit_turn,) = [t for t in split_turns(handle.journal_updates()) if t.number == 3]
        state = fold_all(list(edit_turn.head))
    finally:
        await handle.aclose()
    edit = next(e for e in state.entries if getattr(e, "title", None) == "Edit notes.md")
    assert edit.recorded and edit.status == "completed"  # the recording's status, kept
    shown = transcript_markdown(state)
    assert (
        "Edit notes.md · _recorded, not applied_" in shown
        and "_completed_" not in shown.split("Edit notes.md")[1][:40]
    )
    assert not (workspace.root / "notes.md").exists()  # and truly nothing was written


async def test_another_answer_ends_the_replay_with_a_note(lesson: silo_nb.AgentsService) -> None:
    handle = await lesson.sessions.connect("lesson")
    handle.on_permission(lambda request: request.respond("reject-once"))
    try:
        for text in ("plan", "explain", "edit"):
            await handle.prompt([{"type": "text", "text": text}])
        said = replies(handle.journal_updates())
        assert (
            "The replay ends here: you chose **Reject** where the recording chose **Allow once**" in said[2]
        )
        assert "Edited notes.md" not in said[2]  # the recorded turn stopped at the permission
        await handle.prompt([{"type": "text", "text": "run the tests"}])
        assert "This replay is over: you chose **Reject**" in replies(handle.journal_updates())[3]
    finally:
        await handle.aclose()


async def test_stop_ends_the_turn_being_played(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SILO_NB_REPLAY_STATE_DIR", str(workspace.root / "replay-state"))
    # A thousandth of the recorded pace: each step waits the longest pause (1 s), long enough to stop it.
    workspace.add_profiles({"id": "slow", "replay": str(LESSON), "replay_speed": 0.001})
    handle = await workspace.service().sessions.connect("slow")
    try:
        import asyncio

        turn = asyncio.ensure_future(handle.prompt([{"type": "text", "text": "plan"}]))
        while not any(u.kind == "agent_thought_chunk" for u in handle.journal_updates()):
            await asyncio.sleep(0.02)
        handle.cancel()
        assert (await turn).stop_reason == "cancelled"
    finally:
        await handle.aclose()


async def test_a_resumed_replay_goes_on_where_it_was(
    lesson: silo_nb.AgentsService, workspace: Workspace
) -> None:
    handle = await lesson.sessions.connect("lesson")
    await handle.prompt([{"type": "text", "text": "plan"}])
    session_id = handle.session_id
    await handle.aclose()
    again = await workspace.service().sessions.connect("lesson", resume={"session_id": session_id})
    try:
        assert again.resume_outcome == "resumed"
        await again.prompt([{"type": "text", "text": "explain"}])
        said = replies(again.journal_updates())
        assert len(said) == 2 and "Explaining the greet function" in said[1]
    finally:
        await again.aclose()


async def test_served_in_process(workspace: Workspace, tmp_path: Path) -> None:
    async def factory(profile: AgentProfile, cwd: str) -> Transport:
        argv = [str(LESSON), "--speed", "0", "--state-dir", str(tmp_path / "state")]
        return InProcessTransport(functools.partial(serve, argv=argv), name="replay agent")

    workspace.add_profiles({"id": "lesson", "replay": str(LESSON)})
    service = silo_nb.AgentsService(
        workspace_dir=workspace.folder,
        config_dirs=[workspace.config],
        data_dir=workspace.data,
        transport_factory=factory,
    )
    handle = await service.sessions.connect("lesson")
    try:
        result = await handle.prompt([{"type": "text", "text": "plan"}])
        assert result.stop_reason == "end_turn"
        assert (
            replies(handle.journal_updates())[0] == replies(service.sessions.journals.read_updates(LESSON))[0]
        )
    finally:
        await handle.aclose()


def test_a_profile_with_replay_runs_the_replay_agent(tmp_path: Path) -> None:
    profile = AgentProfile.model_validate({"id": "r", "replay": "lesson.jsonl", "replay_speed": 4})
    assert profile.args == ("-m", "silo_nb.replay_agent", "lesson.jsonl", "--speed", "4")
    (tmp_path / "silo").mkdir()
    (tmp_path / "silo" / "profiles.toml").write_text('[[profiles]]\nid = "r"\nreplay = "../lesson.jsonl"\n')
    loaded, problems = load_profiles(profile_files([tmp_path]))
    assert not problems and loaded["r"].replay == str(tmp_path / "lesson.jsonl")  # anchored at its file
    assert loaded["r"].args[2] == str(tmp_path / "lesson.jsonl")
    assert parse_args(["x.jsonl", "--speed", "0"]).speed == 0
    with pytest.raises(ValueError, match="holds no recorded turn"):
        (tmp_path / "empty.jsonl").write_text("")
        read_recording(tmp_path / "empty.jsonl")
