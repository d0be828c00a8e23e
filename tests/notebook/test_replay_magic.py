"""``%silo connect --replay``: a session of this workspace, or a journal file, played back as the agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from tests.conftest import Workspace
from tests.support.shell import final_bundle, run, shell  # noqa: F401 - the fixture

LESSON = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "penguin-lesson.jsonl"


async def test_connect_replay_plays_an_earlier_session_back(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SILO_NB_REPLAY_STATE_DIR", str(workspace.root / "replay-state"))
    await run(shell, "%silo connect demo")
    live, _ = await run(shell, "%%prompt\nMake a plan for the penguins")
    recorded = final_bundle(live).data["text/markdown"].split("> **You:**")[1]
    session_id = shell.user_ns["demo"].session_id
    captured, result = await run(shell, f"%silo connect --replay {session_id} --speed 0 --as again")
    assert result.success, captured.stderr
    assert shell.user_ns["again"].agent_name == f"Replayed from {session_id}.jsonl"
    played, _ = await run(shell, "%%prompt again\nMake a plan for the penguins")
    assert final_bundle(played).data["text/markdown"].split("> **You:**")[1] == recorded


async def test_connect_replay_takes_a_journal_file_and_says_what_is_wrong(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SILO_NB_REPLAY_STATE_DIR", str(workspace.root / "replay-state"))
    captured, result = await run(shell, f"%silo connect --replay {LESSON} --speed 0 --as lesson")
    assert result.success, captured.stderr
    played, _ = await run(shell, "%%prompt lesson\nMake a plan for checking the penguin measurements")
    assert (
        "Checking" in final_bundle(played).data["text/markdown"]
        or "plan" in final_bundle(played).data["text/markdown"]
    )
    for line, says in [
        ("%silo connect --replay nothing-here", "is neither a session of this workspace"),
        ("%silo connect --replay x --speed -1", "--speed -1.0 — give 0"),
        ("%silo connect", "name a PROFILE"),
    ]:
        captured, result = await run(shell, line)
        assert not result.success and says in captured.stderr, (line, captured.stderr)
