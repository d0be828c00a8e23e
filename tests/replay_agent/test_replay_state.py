"""The replay agent's progress files (``--state-dir``) kept as silo_nb keeps its own (issue 21): private
whatever the umask, no link followed, no name outside the folder, and a folder another user made first
(the default one is in the shared temporary folder) never used."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from silo_nb.acp.rpc_errors import AcpRpcError
from silo_nb.replay_agent.player import ReplayAgent
from silo_nb.replay_agent.recording import read_recording
from tests.conftest import make_other_user

LESSON = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "penguin-lesson.jsonl"


def agent(state: Path) -> tuple[ReplayAgent, dict[str, Any]]:
    replay = ReplayAgent(read_recording(LESSON), speed=0, state_dir=state)
    requests, _notifications = replay.handlers()
    return replay, requests


async def test_progress_is_private_whatever_the_umask(tmp_path: Path) -> None:
    state = tmp_path / "state" / "deeper"
    old = os.umask(0)
    try:
        _replay, requests = agent(state)
        session_id = (await requests["session/new"]({"cwd": str(tmp_path)}))["sessionId"]
    finally:
        os.umask(old)
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE(state.parent.stat().st_mode) == 0o700
    saved = state / f"{session_id}.json"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert json.loads(saved.read_text())["journal"] == str(LESSON)
    # A new agent process resumes it from there.
    _again, requests = agent(state)
    assert (await requests["session/resume"]({"sessionId": session_id}))["sessionId"] == session_id


async def test_a_linked_state_file_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    state, outside = tmp_path / "state", tmp_path / "outside.json"
    _replay, requests = agent(state)
    session_id = (await requests["session/new"]({"cwd": str(tmp_path)}))["sessionId"]
    saved = state / f"{session_id}.json"
    outside.write_text(saved.read_text())  # a valid progress file, but not in the folder
    saved.unlink()
    saved.symlink_to(outside)
    _again, requests = agent(state)
    with pytest.raises(AcpRpcError, match="Session not found"):
        await requests["session/resume"]({"sessionId": session_id})
    before = outside.read_text()
    _third, requests = agent(state)
    fresh = (await requests["session/new"]({"cwd": str(tmp_path)}))["sessionId"]
    assert (state / f"{fresh}.json").is_file() and outside.read_text() == before


@pytest.mark.parametrize("session_id", ["../outside", "/etc/passwd", ".hidden", "a/b", "", "x" * 300])
async def test_a_resume_names_no_file_outside_the_folder(tmp_path: Path, session_id: str) -> None:
    (tmp_path / "outside.json").write_text(json.dumps({"journal": str(LESSON), "next": 0}))
    (tmp_path / "state").mkdir(mode=0o700)
    _replay, requests = agent(tmp_path / "state")
    with pytest.raises(AcpRpcError, match="Session not found"):
        await requests["session/resume"]({"sessionId": session_id})


async def test_another_users_state_folder_is_not_used(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    other = make_other_user()
    state = tmp_path / "state"
    state.mkdir(mode=0o777)
    os.chmod(state, 0o777)
    os.chown(state, other.pw_uid, other.pw_gid)
    _replay, requests = agent(state)
    result = await requests["session/new"]({"cwd": str(tmp_path)})
    assert result["sessionId"].startswith("replay-")  # the replay goes on, keeping nothing
    assert list(state.iterdir()) == []
    said = capfd.readouterr().err
    assert said.count("not keeping progress") == 1 and "belongs to another user" in said
    await requests["session/new"]({"cwd": str(tmp_path)})
    assert "not keeping progress" not in capfd.readouterr().err  # said once
