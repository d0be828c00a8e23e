"""The README's first example, run with "Run All" through nbclient (issue 28, item 1): one cell loads the
extension and connects, the next one prompts. The blocking transform is installed only while the first
cell runs, so its connect goes on in the background and the prompt comes while it is still running: the
prompt waits for it. The agent here starts slower than the demo agent (every vendor agent does), and
takes the demo's profile id, so the cells are the README's own."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

from tests.conftest import AGENTS, Workspace
from tests.support.nbclient import WIDGET, execute, user_prompts, write_notebook

# The README's cells; its first one without the comments (a magic reads a trailing comment as arguments).
README_CELLS = [
    "%load_ext silo_nb\n%silo connect demo",
    "%%prompt\nMake a plan for cleaning the penguin measurements in {path}",
]
START_SECONDS = "3"  # far longer than nbclient takes to send the next cell


def slow_demo() -> dict[str, object]:
    return {
        "id": "demo",
        "label": "Slow-starting demo",
        "command": sys.executable,
        "args": [str(AGENTS / "slow_start.py"), START_SECONDS],
    }


def errors(nb: nbformat.NotebookNode) -> list[str]:
    return [
        f"{output.get('ename')}: {output.get('evalue')}"
        for cell in nb.cells
        for output in cell.outputs
        if output["output_type"] == "error"
    ] + [
        output["text"]
        for cell in nb.cells
        for output in cell.outputs
        if output["output_type"] == "stream" and output.get("name") == "stderr"
    ]


def test_run_all_of_the_readme_example_waits_for_a_slow_agent(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace.add_profiles(slow_demo())
    monkeypatch.setenv("SILO_NB_PROFILES", str(workspace.config / "silo" / "profiles.json"))
    path: Path = write_notebook(workspace, monkeypatch, README_CELLS, "readme.ipynb")
    nb = execute(path, workspace.folder)  # nbclient stops at the first failing cell, as Run All does
    assert not errors(nb), errors(nb)
    prompt = nb.cells[1].outputs
    assert len(prompt) == 1 and WIDGET not in prompt[0]["data"], prompt  # the turn's static transcript
    assert prompt[0]["metadata"]["silo"]["profile_id"] == "demo"
    markdown = prompt[0]["data"]["text/markdown"]
    assert "Make a plan for cleaning the penguin measurements in {path}" in markdown
    assert "Silo demo agent" in markdown  # the agent answered
    assert user_prompts(workspace) == ["Make a plan for cleaning the penguin measurements in {path}"]
