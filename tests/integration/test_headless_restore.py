"""Headless runs (nbclient, papermill) restore a ``%%prompt`` turn only for the notebook run that recorded
it, and ask the agent again when told to sample (issue 34, item 3).

What the kernel can tell apart in a headless run: nbclient and papermill set no ``JPY_SESSION_NAME`` and
send no ``cellId``, so without them a notebook is the cells it has run, in order, in its folder. The
count that matters is what the demo agent itself received (its own session files), not our journals.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import nbformat
import papermill
import pytest
from nbclient import NotebookClient

from silo_nb.cli.demo_notebook import agent_prompts, prepare, turn_outputs
from tests.conftest import ROOT, Workspace

LOAD = "%load_ext silo_nb"
PROMPT = "%%prompt\nSummarise the data in three bullets"


@pytest.fixture(autouse=True)
def _kernel_env(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels write to the workspace's data dir; nothing names the notebook (as under papermill)."""
    monkeypatch.setenv("SILO_NB_DATA_DIR", str(workspace.data))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.delenv("SILO_NB_SAMPLE", raising=False)


def write(workspace: Workspace, name: str, cells: list[str], *, parameters: str | None = None) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    if parameters is not None:  # papermill puts its injected cell after the one tagged "parameters"
        cell = nbformat.v4.new_code_cell(parameters)
        cell.metadata["tags"] = ["parameters"]
        nb.cells.insert(0, cell)
    path = workspace.folder / name
    nbformat.write(nb, path)
    return path


def run(path: Path, **env: str) -> Any:
    """Run the notebook in a new kernel with nbclient (no cell ids sent), save it, return it."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=120)
    client.execute(cwd=str(path.parent), env={**os.environ, **env})
    nbformat.write(nb, path)
    return nb


def received(workspace: Workspace) -> list[str]:
    """Every prompt the demo agent itself received, in its own session files."""
    return agent_prompts(workspace.root / "demo-state")


def restored(nb: Any) -> list[bool]:
    return [bool(t["metadata"]["silo"].get("restored")) for t in turn_outputs(nb)]


def test_another_notebook_in_the_folder_asks_the_agent(workspace: Workspace) -> None:
    """Two notebooks, one folder, the same prompt at the same position: the second is not "restored" from
    the first one's turn; each still restores its own."""
    penguins = write(workspace, "penguins.ipynb", [LOAD, "%silo connect demo", "data = 'penguins'", PROMPT])
    iris = write(workspace, "iris.ipynb", [LOAD, "%silo connect demo", "data = 'iris'", PROMPT])
    assert restored(run(penguins)) == [False]
    assert restored(run(iris)) == [False]  # before: [True], the penguins answer shown as the iris one
    assert len(received(workspace)) == 2
    assert restored(run(penguins)) == [True] and restored(run(iris)) == [True]  # each its own turn
    assert len(received(workspace)) == 2


def test_the_same_notebook_with_fresh_asks_every_run(workspace: Workspace) -> None:
    """``%silo connect NAME --fresh``: a new agent session each run, which hears every prompt (the old
    transcript is carried into its journal, never replayed as this run's answer)."""
    path = write(workspace, "sample.ipynb", [LOAD, "%silo connect demo --fresh", PROMPT])
    first, second = run(path), run(path)
    assert restored(first) == [False]
    assert restored(second) == [False]  # before: [True], repainted from the carried transcript
    assert len(received(workspace)) == 2
    sessions = [turn_outputs(nb)[0]["metadata"]["silo"]["session_id"] for nb in (first, second)]
    assert sessions[0] != sessions[1]


def test_sampling_by_environment_asks_every_run_in_a_new_session(workspace: Workspace) -> None:
    path = write(workspace, "sample.ipynb", [LOAD, "%silo connect demo", PROMPT])
    runs = [run(path, SILO_NB_SAMPLE="1") for _ in range(2)]
    assert [restored(nb) for nb in runs] == [[False], [False]]
    assert len(received(workspace)) == 2
    sessions = [turn_outputs(nb)[0]["metadata"]["silo"]["session_id"] for nb in runs]
    assert sessions[0] != sessions[1]  # each sample in a session of its own: it does not see the others
    again = run(path)  # not sampling: the same cells ran, so the last run's turn is repainted
    assert restored(again) == [True] and len(received(workspace)) == 2
    assert turn_outputs(again)[0]["metadata"]["silo"]["session_id"] == sessions[1]


def test_papermill_samples_when_asked_and_restores_otherwise(workspace: Workspace) -> None:
    """papermill run three times with ``-p silo_sample True``: three real turns. Without it, a second run
    of the same notebook and parameters restores."""
    source = write(workspace, "source.ipynb", [LOAD, "%silo connect demo", PROMPT], parameters="topic = 'x'")
    out = workspace.folder / "out.ipynb"

    def papermill_run(**parameters: Any) -> Any:
        papermill.execute_notebook(
            str(source),
            str(out),
            parameters=parameters,
            kernel_name="python3",
            cwd=str(workspace.folder),
            progress_bar=False,
        )
        return nbformat.read(out, as_version=4)

    sampled = [papermill_run(silo_sample=True) for _ in range(3)]
    assert [restored(nb) for nb in sampled] == [[False]] * 3  # before: [[False], [True], [True]]
    assert len(received(workspace)) == 3
    assert restored(papermill_run(topic="penguins")) == [False]
    assert restored(papermill_run(topic="penguins")) == [True]
    assert restored(papermill_run(topic="iris")) == [False]  # other parameters: another run, asked
    assert len(received(workspace)) == 5


def test_papermill_samples_the_experiments_notebook(workspace: Workspace) -> None:
    """notebooks/05-experiments.ipynb (two named ``run_grid`` runs and a ``fork_grid``, 48 prompts) run
    twice with ``-p silo_sample True``: every grid cell asks the agent both times, and the first run's
    folders are kept beside the new ones (the forks of each run's own session are a run of their own).
    Without it, a third run resumes the last: nothing is asked."""
    source = prepare(ROOT / "notebooks" / "05-experiments.ipynb", workspace.folder)
    out = workspace.folder / "out.ipynb"

    def papermill_run(**parameters: Any) -> None:
        papermill.execute_notebook(
            str(source), str(out), parameters=parameters, cwd=str(workspace.folder), progress_bar=False
        )

    papermill_run(silo_sample=True)
    once = len(received(workspace))
    assert once == 48
    papermill_run(silo_sample=True)
    assert len(received(workspace)) == 2 * once  # before: once, every cell skipped as done
    runs = workspace.folder / "runs"
    kept = ["demo-grid", "demo-grid.1", "stats-task", "stats-task.1"]
    assert sorted(p.name for p in runs.iterdir() if not p.name.startswith("fork-")) == kept
    assert len(list(runs.glob("fork-*"))) == 2
    papermill_run()
    # The grids resume, and the fork grid finds its run through the promoted fork that %silo connect
    # resumed; only the two %%prompt turns are asked again (a sampled run's turns are not restored in a
    # run that does not sample: see the papermill test above).
    assert len(received(workspace)) == 2 * once + 2
    assert len(list(runs.glob("fork-*"))) == 2
