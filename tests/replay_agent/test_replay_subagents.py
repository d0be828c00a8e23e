"""A journal with a subagent replayed (issue 31, part 2): the child's updates and its permission are sent
again under the child's own id, so the replayed turn nests the child as the recorded one did."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from silo_nb.model import AgentPermissionRequest
from silo_nb.notebook.render import transcript_text
from silo_nb.replay_agent.recording import CHILD_SESSION_KEY, Permission, read_recording
from silo_nb.sessions.journal import encode_line
from silo_nb.updates.journal_turns import split_turns
from silo_nb.updates.transcript import fold_all
from tests.conftest import Workspace


async def test_a_replayed_subagent_is_nested_as_recorded(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SILO_NB_REPLAY_STATE_DIR", str(workspace.root / "replay-state"))
    svc = workspace.service()
    asked: list[AgentPermissionRequest] = []

    def allow(request: AgentPermissionRequest) -> None:
        asked.append(request)
        request.respond("allow-once")

    with anyio.fail_after(30):
        async with await svc.sessions.connect("demo") as demo:
            demo.on_permission(allow)
            await demo.prompt([{"type": "text", "text": "use a subagent"}])
            recorded = list(demo.journal_updates())
    recording_file = tmp_path / "subagent.jsonl"
    recording_file.write_text("".join(encode_line(update) + "\n" for update in recorded))
    (turn,) = read_recording(recording_file).turns
    (permission,) = [step for step in turn.steps if isinstance(step, Permission)]
    assert permission.child_session_id == asked[0].child_session_id
    assert any(isinstance(step, dict) and CHILD_SESSION_KEY in step for step in turn.steps)

    workspace.add_profiles({"id": "again", "replay": str(recording_file), "replay_speed": 0})
    replayer = workspace.service()
    with anyio.fail_after(30):
        async with await replayer.sessions.connect("again") as handle:
            handle.on_permission(allow)
            await handle.prompt([{"type": "text", "text": "use a subagent"}])
            replayed = list(handle.journal_updates())
    assert [request.child_title for request in asked] == ["Explorer", "Explorer"]

    def body(updates: list[object]) -> str:
        (first,) = [t for t in split_turns(updates) if t.number is not None]  # type: ignore[arg-type]
        state = fold_all(list(first.head))
        return transcript_text(state).split("subagent [", 1)[1].split("\n-- ")[0]

    # The same child, nested the same; its tool call says it is the recording's (issue 35's rule).
    assert body(replayed) == body(recorded).replace("· completed\n", "· completed (recorded)\n")
