"""A subagent in a notebook (issue 31, part 2), against the demo agent in-process: ``%%prompt`` asking for
a subagent shows the child nested in the turn (its title, state, thought, tool call, the permission it
asked under its own id, the messages between the sessions); a restart and Run All repaints it from the
journal exactly as it was shown live, with no agent call."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell

from silo_nb.model import AgentPermissionRequest
from tests.conftest import Workspace
from tests.support.shell import final_bundle, restart, run, shell  # noqa: F401  (a fixture)

CELL = "%%prompt\nuse a subagent to look around"


async def test_a_subagent_is_nested_live_and_restored_the_same(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    await run(shell, "%silo connect demo")
    handle = shell.user_ns["demo"]
    asked: list[AgentPermissionRequest] = []

    def allow(request: AgentPermissionRequest) -> None:
        asked.append(request)
        request.respond("allow-once")

    handle.on_permission(allow)
    captured, result = await run(shell, CELL)
    assert result.success, result.error_in_exec
    live = final_bundle(captured).data
    assert 'class="silo-subagent"' in live["text/html"]
    text = live["text/plain"]
    assert "subagent [idle (end_turn)]> Explorer (looks around the folder for the parent" in text
    assert "    thinking> Listing the folder first." in text
    assert "message Explorer → main agent> The folder holds" in text
    assert "→ Explorer> Look around the session's folder" in text
    (request,) = asked
    assert request.child_title == "Explorer" and request.child_session_id == f"{handle.session_id}-child-1"
    restart(shell, workspace)
    await run(shell, "%silo connect demo")
    captured, _ = await run(shell, CELL)
    restored = captured.outputs[-1]
    assert restored.metadata["silo"]["restored"] is True
    body = live["text/markdown"].split("\n", 1)[1]  # under the header row (finished → restored)
    assert body.strip() in restored.data["text/markdown"]
    assert live["text/plain"].split("\n", 1)[1] in restored.data["text/plain"]
    assert shell.user_ns["demo"].prompts_sent == 0


async def test_the_demo_sends_no_subagent_to_a_client_that_does_not_show_them() -> None:
    from silo_nb_agents.demo.client_tools import ClientTools

    assert ClientTools.from_capabilities({"subagents": {}}).subagents
    assert not ClientTools.from_capabilities({}).subagents
    assert not ClientTools.from_capabilities({"subagents": None}).subagents
