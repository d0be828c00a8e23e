"""Notebooks run headless with nbclient: saved outputs hold static transcripts (no kernel needed to
read them), and a second run in a new kernel (restart + Run All) sends the agent no prompt while every
prompt cell shows its transcript again — on ipykernel 7.4 and 6.29.5 alike (issue 34)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import Workspace

WIDGET = "application/vnd.jupyter.widget-view+json"
CELLS = [
    "%load_ext silo_nb",
    "%silo connect demo",
    "%%prompt\nSummarise the penguin data",
    "%%prompt\nMake a plan for the analysis",
    "%%prompt --bg\nOne more, in the background",
    "import silo_nb\nawait silo_nb.wait()\nprint(silo_nb.agents.get_state()[0].activity)",
]


def execute(path: Path, folder: Path, kernel_name: str = "python3") -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, kernel_name=kernel_name, timeout=120, resources={"metadata": {"path": str(folder)}}
    ).execute()
    nbformat.write(nb, path)
    return nbformat.read(path, as_version=4)  # saved and reloaded


def prompt_outputs(nb: nbformat.NotebookNode) -> list[list[dict[str, object]]]:
    return [cell.outputs for cell in nb.cells if cell.source.startswith("%%prompt")]


def user_prompts(workspace: Workspace) -> list[str]:
    texts: list[str] = []
    for path in sorted(workspace.data.rglob("chat-sessions/*.jsonl")):
        for line in path.read_text().splitlines():
            update = json.loads(line)
            if update["kind"] == "user_message_chunk":
                texts.append(update["text"])
    return texts


@pytest.fixture
def notebook(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> Path:
    return write_notebook(workspace, monkeypatch, CELLS, "analysis.ipynb")


def write_notebook(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, cells: list[str], name: str
) -> Path:
    """A notebook of ``cells`` in the workspace folder, for kernels writing to the workspace's data dir."""
    monkeypatch.setenv("SILO_NB_DATA_DIR", str(workspace.data))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path = workspace.folder / name
    nbformat.write(nb, path)
    return path


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
