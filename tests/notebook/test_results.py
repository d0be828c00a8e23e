"""A run's results: a cell's page (the %%prompt renderer), the report page, the live view, the magics."""

from __future__ import annotations

import html.parser
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import comm
import pytest
from IPython.core.interactiveshell import InteractiveShell

import silo_nb
from silo_nb.experiments import command_scorer, run_grid
from silo_nb.experiments.runs_index import list_runs
from silo_nb.notebook.render.column_order import short_prompt
from silo_nb.notebook.render.html import transcript_html
from silo_nb.notebook.render.page import export_turns
from silo_nb.notebook.results.cell_page import cell_html
from silo_nb.notebook.results.loaded_run import LoadedRun
from silo_nb.notebook.widgets.results_view import ResultsView
from tests.experiments.grid_checks import FIX_PROMPTS, MODELS, TASK, check_argv
from tests.notebook.widget_utils import RecordingComm, frontend_update
from tests.support.shell import run, shell

__all__ = ["shell"]  # the fixture

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A finished stats run: 4 prompts × 2 models, scored by the task's check."""
    root = tmp_path_factory.mktemp("results")
    saved = {k: os.environ.get(k) for k in ("SILO_NB_DEMO_STATE_DIR", "SILO_NB_DEMO_DELAY")}
    os.environ.update(SILO_NB_DEMO_STATE_DIR=str(root / "demo-state"), SILO_NB_DEMO_DELAY="0")
    df = anyio.run(
        lambda: run_grid(
            FIX_PROMPTS,
            configs=MODELS,
            policy=silo_nb.PermissionPolicy("allow *"),
            template=TASK,
            folder=root / "runs",
            name="stats",
            config_dirs=[],
            progress=False,
            scorers={"tests": command_scorer(check_argv)},
        )
    )
    yield Path(df.attrs["run_folder"])
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def test_a_cells_page_shows_its_turns_as_a_prompt_cell_does(run_folder: Path) -> None:
    loaded = LoadedRun.load(run_folder)
    page = cell_html(loaded, "p1-demo-c0-r0")
    for turn in export_turns(loaded.updates("p1-demo-c0-r0")):
        if turn.number is not None:
            assert transcript_html(turn.state, title="", label=turn.label) in page  # the same renderer
    assert 'class="language-diff"' in page and "return values[len(values) // 2]" in page
    assert "✗ fail" in page and "FAIL median([3, 1, 2]) = 1, expected 2" in page  # the command's output
    with pytest.raises(ValueError, match="No cell 'p9' in the run 'stats'"):
        cell_html(loaded, "p9")


class Balanced(html.parser.HTMLParser):
    """Fails on a closing tag that closes nothing open (a page cut or nested wrong)."""

    VOID = frozenset({"meta", "br", "input", "img", "hr", "link", "path", "use", "rect", "circle"})

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        pass

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, (tag, self.open[-5:])
        self.open.pop()


def test_the_report_is_one_self_contained_page_with_every_cell(run_folder: Path, tmp_path: Path) -> None:
    df = silo_nb.frame(run_folder)
    path = silo_nb.report(df, tmp_path / "report.html")
    page = path.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page) and "<link" not in page
    assert page.count('<details class="silo-cell"') == 8
    assert all(f'id="cell-{cell}"' in page for cell in df["cell"])
    assert page.count("<svg") >= 2  # the pass-rate plot and the cost plot, inline
    assert "50 % (15–85 %)" in page and "100 % (51–100 %)" in page  # fast and smart, with intervals
    assert page.count('class="silo-transcript"') == 8
    checker = Balanced()
    checker.feed(page)
    assert checker.open == []
    with pytest.raises(ValueError, match=r"must end in \.html"):
        silo_nb.report(run_folder, tmp_path / "report.pdf")
    with pytest.raises(ValueError, match="No run 'ghost'"):
        silo_nb.report("ghost", tmp_path / "r.html", folder=run_folder.parent)


def test_the_view_opens_a_cell_by_a_click_or_its_python_twin(
    run_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    RecordingComm.sent = []
    monkeypatch.setattr(comm, "create_comm", RecordingComm)
    view = ResultsView(LoadedRun.load(run_folder))
    try:
        assert view.ids == [f"p{p}-demo-c{c}-r0" for p in range(4) for c in range(2)]
        assert "Choose a row" in view.detail.value
        view.choose("p3-demo-c1-r0")
        assert view.chosen == "p3-demo-c1-r0" and 'data-cell="p3-demo-c1-r0"' in view.detail.value
        assert view.table.selected_rows == [7]  # the row is selected in the browser too
        frontend_update(view.table, selected_rows=[2])  # a click on the third row
        assert view.chosen == "p1-demo-c0-r0" and "FAIL median" in view.detail.value
        bundle = view._repr_mimebundle_()
        assert WIDGET in bundle and 'data-cell="p1-demo-c0-r0"' in bundle["text/html"]
        assert 'class="silo-cells"' in bundle["text/html"] and bundle["text/plain"].startswith("Run stats")
        with pytest.raises(ValueError, match="No cell 'nope'"):
            view.choose("nope")
    finally:
        view.close_all()


async def test_the_runs_magics_list_show_and_diff(shell: InteractiveShell, run_folder: Path) -> None:
    folder = run_folder.parent
    captured, result = await run(shell, f"%silo runs --folder {folder}")
    assert result.success, result.error_in_exec
    listing = captured.outputs[-1].data
    assert "stats" in listing["text/plain"] and "tests 6/8 (75 %)" in listing["text/plain"]
    captured, result = await run(shell, f"%silo runs stats --folder {folder} --static")
    assert result.success and 'class="silo-summary"' in captured.outputs[-1].data["text/html"]
    assert WIDGET not in captured.outputs[-1].data  # not in a kernel: the static page
    captured, result = await run(shell, f"%silo diff {run_folder} p3-demo-c0-r0")
    assert result.success and 'class="language-diff"' in captured.outputs[-1].data["text/html"]
    assert "+++ b/stats.py" in captured.outputs[-1].data["text/plain"]
    for line, says in [
        (f"%silo diff ghost p0 --folder {folder}", "%silo diff: No run 'ghost'"),
        (f"%silo diff {run_folder} p7", "%silo diff: No cell 'p7' in the run 'stats'"),
        (f"%silo runs nope --folder {folder}", "(runs there: stats)"),
    ]:
        captured, result = await run(shell, line)
        assert not result.success and says in str(result.error_in_exec), line


def test_list_runs_counts_cells_sizes_and_pass_rates(run_folder: Path) -> None:
    (info,) = list_runs(run_folder.parent)
    assert (info.name, info.cells, info.done, info.failed) == ("stats", 8, 8, 0)
    assert info.pass_rates == {"tests": (6, 8)} and info.size_bytes > 0 and info.age_seconds >= 0
    assert list_runs(run_folder / "nowhere") == []


def test_the_cells_table_reads_the_prompt_and_the_scores_first(run_folder: Path) -> None:
    """Issue 35: the prompt (shortened) beside the opaque cell id, the scores before the counts."""
    loaded = LoadedRun.load(run_folder)
    columns = list(loaded.cells.columns)
    assert columns[:4] == ["cell", "prompt", "variant", "cell_status"]
    assert columns.index("score.tests") < columns.index("files_changed")
    assert set(loaded.cells["prompt"]) == {short_prompt(prompt) for prompt in FIX_PROMPTS}
