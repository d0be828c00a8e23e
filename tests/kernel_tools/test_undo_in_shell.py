"""Undo of a turn that ran code in the kernel (issue 32), in a real ``InteractiveShell`` with the demo agent:
the allowed ``run_code`` mutates ``df`` and binds ``x``; ``handle.undo()`` puts ``df`` back as it was and
removes ``x``, rewinds the agent's conversation, is journaled, and refuses a second time."""

from __future__ import annotations

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

import silo_nb
from silo_nb.kernel_tools import KernelNamespace
from silo_nb.kernel_tools.turn_parts import VariableCheckpoints
from silo_nb.model import TurnUndoneLine
from tests.conftest import Workspace
from tests.support.shell import run, shell  # noqa: F401  (a fixture)

CODE = 'df.loc[0, "a"] = 99\ndf.pop("b")\nx = df["a"].sum()'


def _allow(request: silo_nb.AgentPermissionRequest) -> None:
    request.respond("run")


async def test_undo_puts_df_back_removes_x_and_rewinds_the_agent(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    before = pd.DataFrame({"a": [1, 2, 3], "b": ["p", "q", "r"]})
    shell.user_ns["df"] = before.copy()
    shell.user_ns.pop("x", None)
    await run(shell, "%silo connect demo")
    handle = shell.user_ns["demo"]
    handle.on_permission(_allow)
    _, result = await run(shell, f"%%prompt\nrun in the kernel:\n```python\n{CODE}\n```")
    assert result.success, result.error_in_exec
    assert shell.user_ns["df"].loc[0, "a"] == 99 and list(shell.user_ns["df"].columns) == ["a"]
    assert "x" in shell.user_ns

    report = await handle.undo()

    pd.testing.assert_frame_equal(shell.user_ns["df"], before)
    assert "x" not in shell.user_ns
    said = {(i.part, i.subject): i for i in report.items}
    assert said["variables", "df"].restored and said["variables", "x"].said == "made by turn 1: removed"
    assert said["conversation", f"session {handle.session_id}"].restored, report.text()
    assert report.turns == (1,)
    undone = [TurnUndoneLine.read(u) for u in handle.journal_updates() if u.kind == "turn_undone"]
    assert len(undone) == 1 and undone[0] is not None and undone[0].turns == [1]
    with pytest.raises(silo_nb.AgentSessionError, match="turn 1 is already undone"):
        await handle.undo()
    # The agent no longer remembers the turn: its summary counts no earlier request.
    await run(shell, "%%prompt\n/compact")
    summary = "".join(
        u.raw["content"]["text"] for u in handle.journal_updates() if u.kind == "compaction_summary_chunk"
    )
    assert "Nothing to keep yet" in summary, summary


async def test_a_name_the_user_changed_after_the_turn_is_left_as_it_is(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    shell.user_ns["df"] = pd.DataFrame({"a": [1, 2, 3], "b": ["p", "q", "r"]})
    await run(shell, "%silo connect demo")
    handle = shell.user_ns["demo"]
    handle.on_permission(_allow)
    await run(shell, f"%%prompt\nrun in the kernel:\n{CODE}")
    await run(shell, "x = 'mine'")
    report = await handle.undo()
    said = {(i.part, i.subject): i for i in report.items}
    assert not said["variables", "x"].restored and "your change wins" in said["variables", "x"].said
    assert shell.user_ns["x"] == "mine"
    assert said["variables", "df"].restored


async def test_after_a_restart_variables_are_listed_not_restorable() -> None:
    from silo_nb.model import KernelToolLine

    ran = KernelToolLine.written({"callId": "c1", "tool": "run_code", "status": "completed"})
    part = VariableCheckpoints(KernelNamespace({}))
    items = await part.undo_turn(3, [ran])
    assert [(i.part, i.restored) for i in items] == [("variables", False)]
    assert items[0].said.startswith("not restorable: the kernel restarted")
    assert await part.undo_turn(4, []) == []  # a turn that ran no code has no variables to speak of
