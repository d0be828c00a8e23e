"""Restart + Run All repaints a turn that used the kernel tools — its cards (the code, the output, the
figure) and the permission decision — from the journal, sending nothing and running nothing again."""

from __future__ import annotations

import pandas as pd
from IPython.core.interactiveshell import InteractiveShell

import silo_nb
from tests.conftest import Workspace
from tests.support.shell import final_bundle, restart, run, shell  # noqa: F401  (a fixture)

CELL = "%%prompt\nlook into df, please"


async def test_restart_and_run_all_repaints_kernel_tool_cards_running_nothing(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    shell.user_ns["df"] = pd.DataFrame({"kind": ["a", "b", "a"], "size": [1.0, 2.0, 3.0]})
    shell.user_ns.pop("summary", None)
    await run(shell, "%silo connect demo")
    handle = shell.user_ns["demo"]
    handle.on_permission(silo_nb.PermissionPolicy("allow code"))
    captured, result = await run(shell, CELL)
    assert result.success, result.error_in_exec
    live = final_bundle(captured).data
    assert "run_code" in live["text/markdown"] and "allow code" not in live["text/markdown"]
    assert "summary" in shell.user_ns
    del shell.user_ns["summary"]

    restart(shell, workspace)
    await run(shell, "%silo connect demo")
    again = shell.user_ns["demo"]
    captured, _ = await run(shell, CELL)
    restored = captured.outputs[-1]
    assert restored.metadata["silo"]["restored"] is True
    for text in ("list_variables", "inspect_variable", "run_code", "groupby('kind')", "Run it", "1 figure"):
        assert text in restored.data["text/markdown"], text
    figure = 'class="silo-kernel-figure" src="data:image/png;base64,iVBOR'
    assert live["text/html"].count(figure) == restored.data["text/html"].count(figure) == 1
    body = live["text/markdown"].split("\n", 1)[1]
    assert body.strip() in restored.data["text/markdown"]  # the same transcript, repainted
    assert again.prompts_sent == 0  # nothing reached the agent
    assert "summary" not in shell.user_ns  # and no code ran again
