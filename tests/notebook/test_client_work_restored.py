"""Restart + Run All repaints what the agent did through the client — a file edit with its diff, a
terminal's output and exit, an answered question — from the journal, with no agent call."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell

from tests.conftest import Workspace
from tests.support.shell import final_bundle, restart, run, shell  # noqa: F401  (a fixture)

CELLS = {
    "edit": (
        "%%prompt\nedit: a line through the client",
        ["Edited notes.md.", "+- a line through the client"],
    ),
    "terminal": ("%%prompt\nplease run the tests", ["Run the tests", "3 passed in 0.01s", "exit 0"]),
    "question": (
        "%%prompt\na risky step",
        ["may I delete scratch.txt?", "→ answered", "Why (optional): restore", "You said yes (restore)"],
    ),
}


async def test_restart_and_run_all_repaints_edits_terminals_and_questions(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    await run(shell, "%silo connect demo")
    handle = shell.user_ns["demo"]
    handle.on_permission(lambda request: request.respond("allow-once"))
    handle.on_elicitation(lambda request: request.accept({"confirm": True, "reason": "restore"}))
    live = {}
    for name, (cell, expected) in CELLS.items():
        captured, result = await run(shell, cell)
        assert result.success, result.error_in_exec
        live[name] = final_bundle(captured).data
        for text in expected:
            assert text in live[name]["text/plain"] + live[name]["text/markdown"], (name, text)
    sent = handle.prompts_sent
    restart(shell, workspace)
    await run(shell, "%silo connect demo")
    again = shell.user_ns["demo"]
    for name, (cell, expected) in CELLS.items():
        captured, _ = await run(shell, cell)
        restored = captured.outputs[-1]
        assert restored.metadata["silo"]["restored"] is True, name
        for text in expected:
            assert text in restored.data["text/plain"] + restored.data["text/markdown"], (name, text)
        body = live[name]["text/markdown"].split("\n", 1)[1]  # under the header row (finished → restored)
        assert body.strip() in restored.data["text/markdown"], name  # the same transcript, repainted
    assert again.prompts_sent == 0 and sent == 3  # nothing reached the agent after the restart
