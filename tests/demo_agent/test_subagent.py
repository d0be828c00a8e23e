"""The demo agent's subagent (issue 31, part 2), in-process through a session: a child's Stop
(``handle.cancel_child``, ``session/cancel`` with the child's id) stops the child, whose pending permission
is answered cancelled, and the parent's turn goes on to its end."""

from __future__ import annotations

import anyio

from silo_nb.model import AgentPermissionRequest
from silo_nb.updates.transcript import fold_all
from tests.conftest import Workspace


async def test_a_child_s_stop_ends_the_child_and_not_the_turn(workspace: Workspace) -> None:
    svc = workspace.service()
    stopped: list[bool] = []
    with anyio.fail_after(30):
        async with await svc.sessions.connect("demo") as handle:

            def stop_the_child(request: AgentPermissionRequest) -> None:
                assert request.child_session_id is not None
                stopped.append(handle.cancel_child(request.child_session_id))

            handle.on_permission(stop_the_child)
            result = await handle.prompt([{"type": "text", "text": "use a subagent"}])
            journal = await svc.sessions.read_journal(handle.session_id)
    assert stopped == [True]
    assert result.stop_reason == "end_turn"
    state = fold_all(journal)
    (child,) = state.subagents
    assert (child.title, child.state, child.stop_reason) == ("Explorer", "idle", "cancelled")
    assert child.transcript is not None and child.transcript.permissions[0].choice is None
    assert "I was stopped before I finished." in [getattr(entry, "text", None) for entry in state.entries]
