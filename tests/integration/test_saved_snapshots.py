"""A notebook run headless (nbclient), saved and converted with nbconvert: every silo_nb output reads as
a transcript or a snapshot — no widget repr (``VBox(children=…``, ``SessionPanel(…``) anywhere (issue 11)."""

from __future__ import annotations

from pathlib import Path

import pytest
from nbconvert import HTMLExporter, MarkdownExporter

from tests.conftest import Workspace
from tests.support.nbclient import WIDGET, execute, write_notebook

CELLS = [
    "%load_ext silo_nb",
    "%silo connect demo",
    "%%prompt\nMake a plan for the penguins",
    "%silo set demo mode code",
    "%%prompt\n/title Penguin clean-up",
    "%silo agents",
]
REPRS = ("VBox(children", "SessionPanel(", "AgentsList(", "ConnectionBox(", "HTML(value=", "Loading widget")


@pytest.fixture
def notebook(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> Path:
    return write_notebook(workspace, monkeypatch, CELLS, "snapshots.ipynb")


def test_saved_widgets_carry_current_snapshots(notebook: Path, workspace: Workspace) -> None:
    nb = execute(notebook, workspace.folder)
    panel = [o for o in nb.cells[1].outputs if WIDGET in o.get("data", {})]
    assert len(panel) == 1, nb.cells[1].outputs
    data = panel[0]["data"]
    # Kept current at each turn's end: the snapshot saved with the connect cell shows the later title
    # and the mode set after the first turn.
    assert "Penguin clean-up" in data["text/plain"] and "Mode: Code" in data["text/plain"]
    assert "Penguin clean-up" in data["text/html"]
    agents = [o for o in nb.cells[5].outputs if WIDGET in o.get("data", {})]
    assert agents and "Penguin clean-up" in agents[0]["data"]["text/plain"]
    for exporter in (HTMLExporter(), MarkdownExporter()):
        body, _ = exporter.from_notebook_node(nb)
        for marker in REPRS:
            assert marker not in body, (type(exporter).__name__, marker)
        assert "Penguin clean-up" in body and "Make a plan for the penguins" in body
