"""Notebooks run headless with nbclient: saved outputs hold static transcripts (no kernel needed to
read them), and a second run in a new kernel (restart + Run All) sends the agent no prompt while every
prompt cell shows its transcript again — on ipykernel 7.4 and 6.29.5 alike (issue 34)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Workspace
from tests.support.nbclient import WIDGET, execute, prompt_outputs, user_prompts, write_notebook

CELLS = [
    "%load_ext silo_nb",
    "%silo connect demo",
    "%%prompt\nSummarise the penguin data",
    "%%prompt\nMake a plan for the analysis",
    "%%prompt --bg\nOne more, in the background",
    "import silo_nb\nawait silo_nb.wait()\nprint(silo_nb.agents.get_state()[0].activity)",
]


@pytest.fixture
def notebook(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> Path:
    return write_notebook(workspace, monkeypatch, CELLS, "analysis.ipynb")


def test_saved_notebook_holds_static_transcripts_and_restores_after_restart(
    notebook: Path, workspace: Workspace, kernel_name: str
) -> None:
    first = execute(notebook, workspace.folder, kernel_name)
    # The connect cell ran until connected (it blocks, as on every supported kernel): its panel is its output.
    connect = next(cell for cell in first.cells if cell.source == "%silo connect demo")
    assert [o["data"]["text/plain"].split(" · ")[0] for o in connect.outputs] == ["Silo demo agent"]
    for outputs in prompt_outputs(first):
        assert len(outputs) == 1, outputs
        output = outputs[0]
        assert WIDGET not in output["data"]  # the live view was swapped for plain data
        assert {"text/html", "text/markdown", "text/plain"} <= set(output["data"])
        assert output["metadata"]["silo"]["profile_id"] == "demo"
    markdowns = [o[0]["data"]["text/markdown"] for o in prompt_outputs(first)]
    assert "Summarise the penguin data" in markdowns[0] and "Silo demo agent" in markdowns[0]
    assert "Make a plan" in markdowns[1]
    assert "One more, in the background" in markdowns[2] and "finished" in markdowns[2].lower()
    assert first.cells[-1].outputs[-1]["text"].strip() == "idle"
    sent = user_prompts(workspace)
    assert sent == [
        "Summarise the penguin data",
        "Make a plan for the analysis",
        "One more, in the background",
    ]

    # Restart + Run All: the same notebook in a new kernel.
    second = execute(notebook, workspace.folder, kernel_name)
    assert user_prompts(workspace) == sent  # the agent received no prompt
    for before, after in zip(prompt_outputs(first), prompt_outputs(second), strict=True):
        restored = after[-1]
        assert WIDGET not in restored["data"]
        assert restored["metadata"]["silo"]["restored"] is True
        assert restored["metadata"]["silo"]["session_id"] == before[0]["metadata"]["silo"]["session_id"]
        prompt = before[0]["metadata"]["silo"]
        assert prompt["cell_id"] == restored["metadata"]["silo"]["cell_id"]
        assert "restored" in restored["data"]["text/plain"]
