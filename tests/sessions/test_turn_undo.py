"""``handle.undo()`` through a real session with the demo agent (issue 32): the files a turn wrote through
the client put back, the agent rewound where it offers ``_session/rewind`` (else the report says it still
remembers), back to before turn N (the later turns too, newest first), a file the user changed since left
alone, and the bad inputs as one line each."""

from __future__ import annotations

import pytest

import silo_nb
from silo_nb.model import TurnUndoneLine
from tests.conftest import Workspace, demo_agent


def allow(request: silo_nb.AgentPermissionRequest) -> None:
    request.respond(next(o.option_id for o in request.options if o.kind == "allow_once"))


def text(value: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": value}]


async def test_back_to_before_turn_1_puts_the_files_back_and_rewinds_the_agent(workspace: Workspace) -> None:
    notes = workspace.folder / "notes.md"
    notes.write_text("# Notes\n")
    async with await workspace.service().sessions.connect("demo") as handle:
        handle.on_permission(allow)
        await handle.prompt(text("edit: the first change"))
        await handle.prompt(text("hello"))
        assert "the first change" in notes.read_text()
        report = await handle.undo(turn=1)
        assert report.turns == (2, 1) and notes.read_text() == "# Notes\n"
        files = report.part("files")
        assert [(i.subject, i.restored) for i in files] == [("notes.md", True)]
        [conversation] = report.part("conversation")
        assert conversation.restored and "rewound to before turn 1" in conversation.said
        [line] = [TurnUndoneLine.read(u) for u in handle.journal_updates() if u.kind == "turn_undone"]
        assert line is not None and line.turns == [2, 1] and len(line.items) == len(report.items)
        for turn in (1, 2):
            with pytest.raises(silo_nb.AgentSessionError, match=f"turn {turn} is already undone"):
                await handle.undo(turn=turn)
        with pytest.raises(silo_nb.AgentSessionInputError, match="from 1 to 2"):
            await handle.undo(turn=0)


async def test_a_file_the_user_changed_since_is_refused_and_kept(workspace: Workspace) -> None:
    notes = workspace.folder / "notes.md"
    notes.write_text("# Notes\n")
    async with await workspace.service().sessions.connect("demo") as handle:
        handle.on_permission(allow)
        await handle.prompt(text("edit: the agent's change"))
        notes.write_text("# Notes\nmine\n")  # the user's edit after the turn
        report = await handle.undo()
        [item] = report.part("files")
        assert (item.subject, item.restored) == ("notes.md", False) and "your change wins" in item.said
        assert notes.read_text() == "# Notes\nmine\n"
        assert report.text().startswith("Undid turn 1: 1 restored, 1 not restored.")  # the rewind, the file


async def test_an_agent_without_rewind_is_said_to_still_remember(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("plain", "--no-rewind"))
    async with await workspace.service().sessions.connect("plain") as handle:
        await handle.prompt(text("hello"))
        report = await handle.undo()
        [conversation] = report.part("conversation")
        assert not conversation.restored
        assert conversation.said == "the agent will still remember turn 1 (it offers no rewind)"


async def test_nothing_to_undo_is_one_line(workspace: Workspace) -> None:
    async with await workspace.service().sessions.connect("demo") as handle:
        with pytest.raises(silo_nb.AgentSessionError, match="no turn yet") as raised:
            await handle.undo()
        assert "\n" not in str(raised.value)


async def test_with_checkpoint_conversation_fork_the_undo_points_at_the_fork_from_before_the_turn(
    workspace: Workspace,
) -> None:
    workspace.add_profiles(demo_agent("forky", "--no-rewind", checkpoint_conversation="fork"))
    svc = workspace.service()
    async with await svc.sessions.connect("forky") as handle:
        await handle.prompt(text("the first thing"))
        await handle.prompt(text("the second thing"))
        ends = [u for u in handle.journal_updates() if u.kind == "turn_end"]
        forks = [u.raw.get("checkpointFork") for u in ends]
        assert all(isinstance(f, str) and f.startswith("demo-") for f in forks) and len(set(forks)) == 2
        # The forks' own traffic (the commands the agent announces for them) is not shown as a subagent.
        assert not any(u.child_session_id in forks for u in handle.journal_updates())
        report = await handle.undo()
        [conversation] = report.part("conversation")
        assert conversation.restored and conversation.subject == f"fork {forks[1]}"
        assert f"%silo connect forky --resume {forks[1]}" in conversation.said
        assert report.fork_session_id == forks[1]
    # The fork is the conversation from before turn 2: it remembers the first prompt only.
    async with await svc.sessions.connect("forky", resume={"session_id": forks[1]}) as before:
        said: list[str] = []
        before.on_update(
            lambda u: said.append(u.raw["content"]["text"]) if u.kind == "compaction_summary_chunk" else None
        )
        await before.prompt(text("/compact"))
        assert "asked 1 thing(s) before this; the last: 'the first thing'" in "".join(said), said


async def test_checkpoint_conversation_off_leaves_the_agent_alone(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("quiet", checkpoint_conversation="off"))
    async with await workspace.service().sessions.connect("quiet") as handle:
        await handle.prompt(text("hello"))
        [conversation] = (await handle.undo()).part("conversation")
        assert not conversation.restored and "checkpoint_conversation is off" in conversation.said


async def test_the_turns_as_data_say_which_were_undone(workspace: Workspace) -> None:
    from silo_nb.experiments.rows import turn_rows

    async with await workspace.service().sessions.connect("demo") as handle:
        for said in ("one", "two", "three"):
            await handle.prompt(text(said))
        await handle.undo(turn=2)
        rows = turn_rows(handle.journal_updates())
        assert [(row["prompt"], row["undone"]) for row in rows] == [
            ("one", False),
            ("two", True),
            ("three", True),
        ]
