"""``%silo undo-cells``: what it says when there is nothing to take back (the undo itself, through a real
server, is in ``tests/integration/test_notebook_channel.py``; each kind of change in
``tests/kernel_tools/test_notebook_tools.py``)."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell

from tests.conftest import Workspace
from tests.support.shell import restart, run, said, shell  # noqa: F401  (a fixture)


async def test_nothing_to_take_back_is_said_in_one_line(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    restart(shell, workspace)
    await run(shell, "%silo connect demo")
    captured, _ = await run(shell, "%silo undo-cells demo")
    assert said(captured).strip() == "demo: no turn yet, so no cell to take back."
    await run(shell, "%%prompt demo\nhello")
    captured, _ = await run(shell, "%silo undo-cells")
    assert said(captured).strip() == "demo: its last turn (turn 1) changed no cell."
    _, result = await run(shell, "%silo undo-cells nobody")
    assert not result.success and "nobody" in str(result.error_in_exec)
