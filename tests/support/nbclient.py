"""Notebooks written into a test workspace and run headless with nbclient, then read back."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.conftest import Workspace

WIDGET = "application/vnd.jupyter.widget-view+json"


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
