"""Every notebook in notebooks/ runs headless twice, and its saved copy reads well without a kernel.

- Each notebook (but ``04-real-agents``, which needs vendor agents) is copied to a temporary folder and run
  by ``silo_nb.cli.demo_notebook.run_twice``: once in a new kernel against the demo agent, then the saved copy
  again in another new kernel, as "Restart Kernel and Run All" would. The second run must send no prompt:
  the prompts in silo_nb's journals and in the demo agent's own session files are compared, not outputs.
- The saved copy is converted with ``jupyter nbconvert --to html`` twice: as saved (widget state embedded)
  and without its widget state, which is what a viewer that cannot run widgets (GitHub, JupyterLab without
  a kernel) has to work with. Neither may show a widget repr or "Loading widget"; every widget output must
  also carry a ``text/html`` snapshot.
- The quickstart runs on ipykernel 6.29.5 too (``.venv-ipk6``, ``kernels.py``), the oldest supported.
- New notebooks are picked up by the glob; a notebook that needs files of its own keeps them in
  ``notebooks/data/`` (copied along).
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from silo_nb.cli.demo_notebook import RunReport, main, prepare, run_twice, turn_outputs
from tests.integration.kernels import IPYKERNEL6_KERNEL, THIS_KERNEL

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").glob("*.ipynb") if not p.name.startswith("04-real-agents"))
WIDGET = "application/vnd.jupyter.widget-view+json"
REPRS = ("VBox(children=", "SessionPanel(", "AgentsList(", "Loading widget")


# Each notebook on this venv's ipykernel (7.4); the quickstart also on ipykernel 6.29.5 (issue 34).
RUNS = [pytest.param((p, THIS_KERNEL), id=p.stem) for p in NOTEBOOKS] + [
    pytest.param(
        (ROOT / "notebooks" / "01-quickstart.ipynb", IPYKERNEL6_KERNEL), id="01-quickstart-ipykernel6"
    )
]


@pytest.fixture(scope="module", params=RUNS)
def ran(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, RunReport, RunReport]:
    """One notebook, run twice (module-scoped: the tests below share the two runs)."""
    source, kernel_name = request.param
    if kernel_name == IPYKERNEL6_KERNEL:
        kernel_name = request.getfixturevalue("ipykernel6")
    tracked = source.read_bytes()
    folder = tmp_path_factory.mktemp(f"{source.stem}-{kernel_name}")
    result = run_twice(source, folder, timeout=180, kernel_name=kernel_name)
    assert source.read_bytes() == tracked  # only the copy is written
    return result


def prompt_cells(nb: Any) -> list[Any]:
    return [c for c in nb.cells if c.cell_type == "code" and c.source.lstrip().startswith("%%prompt")]


def test_the_notebooks_are_there() -> None:
    names = [p.name for p in NOTEBOOKS]
    assert "01-quickstart.ipynb" in names and "03-teaching.ipynb" in names, names


def test_runs_headless_then_restores_after_a_restart_with_no_prompt_resent(
    ran: tuple[Path, RunReport, RunReport],
) -> None:
    path, first, second = ran
    for report in (first, second):
        errors = [o for c in report.notebook.cells for o in c.get("outputs", []) if o.output_type == "error"]
        assert not errors, [f"{o.ename}: {o.evalue}" for o in errors]
    cells = prompt_cells(first.notebook)
    if not cells:  # a notebook of API calls (run_grid): run 1 asked the agent, run 2 asked nothing more
        assert first.agent_prompts, f"{path.name} sent the agent nothing"
        assert second.agent_prompts == first.agent_prompts
        return
    # Run 1 talked to the agent: one prompt per %%prompt cell, each with its transcript saved (a notebook
    # that also runs grids, 05, sent theirs too: each cell's prompt is among them).
    if any("_grid(" in c.source for c in first.notebook.cells if c.cell_type == "code"):
        asked = [c.source.split("\n", 1)[1].strip() for c in cells]
        assert all(text in first.journal_prompts for text in asked), (asked, first.journal_prompts)
        assert len(first.agent_prompts) > len(cells)
    else:
        assert len(first.agent_prompts) == len(first.journal_prompts) == len(cells)
    first_turns = turn_outputs(first.notebook)
    assert len(first_turns) == len(cells) and not any(
        t["metadata"]["silo"].get("restored") for t in first_turns
    )
    # Run 2, a new kernel on the saved copy: nothing sent, every turn repainted from the journal.
    assert second.agent_prompts == first.agent_prompts
    assert second.journal_prompts == first.journal_prompts
    second_turns = turn_outputs(second.notebook)
    assert len(second_turns) == len(cells)
    assert all(t["metadata"]["silo"]["restored"] is True for t in second_turns)
    # Keyed by the cells' own ids (sent as JupyterLab sends them), so JupyterLab finds these turns too.
    cell_ids = [c.id for c in cells]
    assert [t["metadata"]["silo"]["cell_id"] for t in first_turns] == cell_ids
    # A notebook that promotes a fork (05) resumes the fork after the restart: its journal starts with the
    # parent's turns, so a turn before the promote comes back from the fork's session.
    promotes = any("promote(" in c.source for c in first.notebook.cells if c.cell_type == "code")
    sessions = {t["metadata"]["silo"]["session_id"] for t in second_turns}
    for before, after in zip(first_turns, second_turns, strict=True):
        if promotes:
            assert len(sessions) == 1
        else:
            assert after["metadata"]["silo"]["session_id"] == before["metadata"]["silo"]["session_id"]
        assert WIDGET not in after["data"] and "text/html" in after["data"]


def to_html(*paths: Path) -> list[str]:
    """``jupyter nbconvert --to html`` (one process for all), and the pages it wrote."""
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [path.with_suffix(".html").read_text(encoding="utf-8") for path in paths]


def test_saved_notebook_shows_no_widget_repr_in_nbconvert_html(
    ran: tuple[Path, RunReport, RunReport],
) -> None:
    path, _, second = ran
    # Without the widget state, as GitHub or JupyterLab without a kernel see it: the static fallback shows.
    bare = nbformat.read(path, as_version=4)
    bare.metadata.pop("widgets", None)
    bare_path = path.with_name(path.stem + "-no-widget-state.ipynb")
    nbformat.write(bare, bare_path)
    as_saved, html = to_html(path, bare_path)
    # As saved: nbconvert embeds the widget state, and its page renders the widgets with JavaScript.
    assert not [r for r in REPRS if r in as_saved]
    shown = [r for r in REPRS if r in html]
    assert not shown, f"{path.name}: nbconvert HTML shows widget reprs {shown} (no static snapshot)"
    for cell in second.notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET in data:
                assert "text/html" in data, (
                    f"{cell.source.splitlines()[0]}: a widget with no text/html snapshot"
                )
                assert not [r for r in REPRS if r in data.get("text/plain", "")], data.get("text/plain")


def test_prepare_starts_afresh_and_removes_only_its_own_files(tmp_path: Path) -> None:
    source = tmp_path / "src" / "nb.ipynb"
    (source.parent / "data").mkdir(parents=True)
    (source.parent / "data" / "penguins.csv").write_text("a,b\n1,2\n")
    nbformat.write(nbformat.v4.new_notebook(), source)
    out = tmp_path / "out"
    (out / ".silo" / "data").mkdir(parents=True)
    for name in ("notes.md", "mine.txt"):
        (out / name).write_text("x")
    target = prepare(source, out)
    assert target == out / "nb.ipynb" and target.read_bytes() == source.read_bytes()
    assert not (out / ".silo").exists() and not (out / "notes.md").exists()
    assert (out / "mine.txt").read_text() == "x"  # not ours: kept
    assert (out / "data" / "penguins.csv").is_file()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["no-such.ipynb"], "error: no-such.ipynb is not a notebook file; give the path of an .ipynb"),
        (
            ["notebooks/03-teaching.ipynb", "--out", "notebooks"],
            "error: --out notebooks is the notebook's own",
        ),
    ],
)
def test_bad_arguments_get_one_line(argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    tracked = (ROOT / "notebooks" / "03-teaching.ipynb").read_bytes()
    out = io.StringIO()
    assert main(argv, out=out) in (1, 2)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), lines
    assert (ROOT / "notebooks" / "03-teaching.ipynb").read_bytes() == tracked
