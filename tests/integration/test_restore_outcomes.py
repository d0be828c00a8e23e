"""Turn outcomes survive a restart: a notebook whose turns failed and were cancelled, run headless, then
run again in a new kernel (restart + Run All), repaints those turns failed and cancelled — the same status,
stop reason and error as live — through the real restore path (the journal's ``turn_end`` lines)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Workspace
from tests.support.nbclient import execute, prompt_outputs, user_prompts, write_notebook

CELLS = [
    "%load_ext silo_nb",
    "%silo connect demo",
    "%%prompt\nPlease fail this one",
    "%%prompt --bg\nCount slow please",
    "import asyncio\nawait asyncio.sleep(0.6)",
    "%silo cancel",
    "import silo_nb\nawait silo_nb.wait()",
    "%%prompt\nAnd a plain one",
]


@pytest.fixture
def notebook(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> Path:
    return write_notebook(workspace, monkeypatch, CELLS, "outcomes.ipynb")


def _status_lines(output: dict[str, object]) -> list[str]:
    """The lines that show the outcome, minus the restore's own notes (the intended differences)."""
    text = str(output["data"]["text/plain"])  # type: ignore[index]
    lines = [
        line.split(" · restored from the journal")[0].replace(" · ↺ restored", "")
        for line in text.splitlines()
    ]
    return [line for line in lines if any(k in line for k in ("failed", "cancelled", "error:"))]


def test_failed_and_cancelled_turns_repaint_as_they_ended(notebook: Path, workspace: Workspace) -> None:
    first = execute(notebook, workspace.folder)
    failed, cancelled, _plain = (outputs[-1] for outputs in prompt_outputs(first))
    assert "✗ failed" in failed["data"]["text/plain"]
    assert "the demo agent was asked to fail" in failed["data"]["text/plain"]
    assert "■ cancelled" in cancelled["data"]["text/plain"]
    sent = user_prompts(workspace)

    second = execute(notebook, workspace.folder)  # restart + Run All
    assert user_prompts(workspace) == sent  # nothing was sent again
    again_failed, again_cancelled, again_plain = (outputs[-1] for outputs in prompt_outputs(second))
    for live, restored in ((failed, again_failed), (cancelled, again_cancelled)):
        assert restored["metadata"]["silo"]["restored"] is True
        assert _status_lines(restored) == _status_lines(live)
        assert _status_lines(restored)
    assert "↺ restored" in again_plain["data"]["text/plain"]  # a finished turn restores as before
    assert "✗ failed" not in again_plain["data"]["text/plain"]
