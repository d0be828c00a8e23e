"""``%silo undo`` and the **Undo turn N** row (issue 32) in a real ``InteractiveShell`` with the demo agent:
the row under a finished turn undoes it once and says what it restored; the magic marks the row, says an
earlier undo again instead of failing (a notebook re-runs top to bottom), refuses while a turn runs; a
restore after a restart shows the turn undone."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import silo_nb
from silo_nb.notebook.magics import session_of
from silo_nb.notebook.widgets.undo_turn_row import UndoTurnRow
from tests.conftest import Workspace
from tests.support.shell import final_bundle, restart, run, said, shell  # noqa: F401  (a fixture)

PROMPT = '%%prompt\nrun in the kernel:\ndf.loc[0, "a"] = 99\nx = 1'


def _allow(request: silo_nb.AgentPermissionRequest) -> None:
    request.respond("run")


def _rows(ip: InteractiveShell) -> list[UndoTurnRow]:
    return [w for w in session_of(ip).shown.widgets() if isinstance(w, UndoTurnRow)]


async def _one_turn(ip: InteractiveShell) -> silo_nb.AgentSessionHandle:
    ip.user_ns["df"] = pd.DataFrame({"a": [1, 2, 3]})
    ip.user_ns.pop("x", None)
    await run(ip, "%silo connect demo")
    handle: silo_nb.AgentSessionHandle = ip.user_ns["demo"]
    handle.on_permission(_allow)
    _, result = await run(ip, PROMPT)
    assert result.success, result.error_in_exec
    journal = [u.raw for u in handle.journal_updates()][-1:]  # how the turn ended, if the code did not run
    assert ip.user_ns["df"].loc[0, "a"] == 99 and ip.user_ns["x"] == 1, journal
    return handle


async def test_the_row_undoes_its_turn_once_and_says_what_it_restored(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    await _one_turn(shell)
    [row] = _rows(shell)
    assert row.turn == 1 and row.snapshot() == ("", "")  # nothing saved with the notebook until undone
    report = await row.undo()
    assert report is not None and shell.user_ns["df"]["a"].tolist() == [1, 2, 3] and "x" not in shell.user_ns
    html, text = row.snapshot()
    assert text.startswith("↶ Turn 1 undone:") and "variables · df: restored" in text
    assert 'class="silo-undone"' in html and row.button.layout.display == "none"
    assert await row.undo() is report  # a second click does nothing more

    # The magic says the earlier undo again (a notebook run again top to bottom does not fail).
    captured, result = await run(shell, "%silo undo demo")
    assert result.success and "turn 1 was undone already" in said(captured)


async def test_the_magic_undoes_and_marks_the_turns_row(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    await _one_turn(shell)
    captured, result = await run(shell, "%silo undo demo 1")
    assert result.success, result.error_in_exec
    assert "Undid turn 1" in said(captured) and "made by turn 1: removed" in said(captured)
    [row] = _rows(shell)
    assert row.items is not None and row.snapshot()[1].startswith("↶ Turn 1 undone")
    with pytest.raises(silo_nb.AgentSessionInputError, match="takes a turn number from 1 to 1"):
        await shell.user_ns["demo"].undo(5)
    captured, result = await run(shell, "%silo undo demo 5")
    assert isinstance(result.error_in_exec, UsageError) and "from 1 to 1" in str(result.error_in_exec)


async def test_undo_while_a_turn_runs_is_refused_in_one_line(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    handle = await _one_turn(shell)
    turn = asyncio.get_running_loop().create_task(handle.prompt([{"type": "text", "text": "slow count"}]))
    while handle.current_turn < 2:
        await asyncio.sleep(0.01)
    _, result = await run(shell, "%silo undo demo")
    assert not result.success and "a turn is running" in str(result.error_in_exec)
    assert "\n" not in str(result.error_in_exec)
    handle.cancel()
    await turn
    assert shell.user_ns["df"].loc[0, "a"] == 99  # nothing was undone


async def test_a_restored_turn_shows_it_was_undone(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    handle = await _one_turn(shell)
    await handle.undo()
    session_id = handle.session_id
    restart(shell, workspace)
    await run(shell, "%silo connect demo")
    assert shell.user_ns["demo"].session_id == session_id
    captured, result = await run(shell, PROMPT)
    assert result.success, result.error_in_exec
    text = final_bundle(captured).data["text/plain"]
    assert "↶ Turn 1 undone" in text, text
