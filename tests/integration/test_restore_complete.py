"""Restore is complete: every ``%silo`` output a notebook saves comes back after Restart + Run All the same
as the first time, and every restored turn says "restored" whatever its outcome.

Each notebook runs twice with nbclient, the second time in a new kernel on the saved copy (what "Restart
Kernel and Run All" does), and the saved text of each ``%silo`` cell is compared: the session panel
(with its commands), ``%silo set``, ``%silo commands``, ``%silo agents`` and ``%silo frame``. An agent that
can neither resume nor load (journal-only after the restart) says no commands again: they come from the
journal's last ``available_commands_update``. The first test runs on ipykernel 7.4 and 6.29.5 alike
(issue 34).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Workspace, demo_agent
from tests.support.nbclient import execute, prompt_outputs, user_prompts, write_notebook

SILO_CELLS = [
    "%load_ext silo_nb",
    "%silo connect {profile}",
    "%%prompt\nMake a plan for the penguins",
    "%silo set {name} mode code",
    "%silo commands",
    "%%prompt\n/explain the greet function",
    "%silo agents",
    "%silo frame {name}",
]


def saved_text(nb: Any) -> list[tuple[str, list[str]]]:
    """Each ``%silo`` cell's source and the plain text of each of its outputs, as saved."""
    return [
        (cell.source, [str(o.get("text") or o.get("data", {}).get("text/plain")) for o in cell.outputs])
        for cell in nb.cells
        if cell.source.startswith("%silo")
    ]


def test_every_silo_output_comes_back_the_same_after_a_restart(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, kernel_name: str
) -> None:
    cells = [c.format(profile="demo", name="demo") for c in SILO_CELLS]
    notebook = write_notebook(workspace, monkeypatch, cells, "complete.ipynb")
    first = execute(notebook, workspace.folder, kernel_name)
    sent = user_prompts(workspace)
    second = execute(notebook, workspace.folder, kernel_name)
    assert user_prompts(workspace) == sent  # nothing sent again
    before, after = saved_text(first), saved_text(second)
    by_cell = dict(before)
    assert "commands: /explain, /plan, /title, /clear" in by_cell["%silo connect demo"][-1]
    assert by_cell["%silo commands"][0].startswith("/explain <what to explain>  Explain a piece of code")
    assert "Agent sessions" in by_cell["%silo agents"][-1]
    assert "Make a plan for the penguins" in by_cell["%silo frame demo"][-1]
    for (source, was), (_, now) in zip(before, after, strict=True):
        assert now == was, source
    for outputs in prompt_outputs(second):
        assert "↺ restored" in str(outputs[-1]["data"]["text/plain"]).splitlines()[0]


def test_commands_of_a_journal_only_session_come_from_the_journal(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace.add_profiles(demo_agent("forgetful", "--no-resume", "--no-load"))
    # The demo agent announces its commands 50 ms after session/new; a turn of this agent (no pauses) can
    # end before that, so the notebook waits for them (bounded) before listing them, as a reader would.
    wait = (
        "import asyncio\nfor _ in range(600):\n"
        "    if forgetful.commands: break\n    await asyncio.sleep(0.05)"
    )
    cells = ["%load_ext silo_nb", "%silo connect forgetful", "%%prompt\nhello", wait, "%silo commands"]
    notebook = write_notebook(workspace, monkeypatch, cells, "forgetful.ipynb")
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(workspace.config))
    first = execute(notebook, workspace.folder)
    second = execute(notebook, workspace.folder)
    listed = next(out for source, out in saved_text(first) if source == "%silo commands")
    again = next(out for source, out in saved_text(second) if source == "%silo commands")
    assert listed and listed[0].startswith("/explain"), listed
    assert again == listed
    connect = next(out for source, out in saved_text(second) if source == "%silo connect forgetful")
    assert any("can neither resume nor load" in text for text in connect), connect  # it was journal-only


def test_restored_failed_and_cancelled_turns_are_marked_restored(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    cells = [
        "%load_ext silo_nb",
        "%silo connect demo",
        "%%prompt\nPlease fail this one",
        "%%prompt --bg\nCount slow please",
        "import asyncio\nawait asyncio.sleep(0.6)",
        "%silo cancel",
        "import silo_nb\nawait silo_nb.wait()",
    ]
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0.05")
    notebook = write_notebook(workspace, monkeypatch, cells, "marks.ipynb")
    execute(notebook, workspace.folder)
    second = execute(notebook, workspace.folder)
    headers = [str(o[-1]["data"]["text/plain"]).splitlines()[0] for o in prompt_outputs(second)]
    assert headers == [
        "Silo demo agent · ✗ failed · ↺ restored",
        "Silo demo agent · ■ cancelled · ↺ restored",
    ]
    markdown = [str(o[-1]["data"]["text/markdown"]) for o in prompt_outputs(second)]
    assert all("↺ restored" in m.splitlines()[0] for m in markdown), markdown
    html = [str(o[-1]["data"]["text/html"]) for o in prompt_outputs(second)]
    assert all("↺ restored" in h for h in html)
