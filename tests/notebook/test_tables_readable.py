"""Tables people read (issue 35, item 3): the columns they read first come first (the cell, its prompt
shortened beside the opaque id, the variant, how it ended, the scores), and a table wider than the window
scrolls inside the output instead of being cut off on the right."""

from __future__ import annotations

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

from silo_nb.experiments._pandas import MISSING_PANDAS
from silo_nb.notebook.magics import frame as frame_magic
from silo_nb.notebook.render import styles
from silo_nb.notebook.render.column_order import PROMPT_CHARS, reading_order, short_prompt
from silo_nb.notebook.render.frame_table import frame_bundle
from silo_nb.notebook.results.run_tables import cells_table_html, summary_table_html
from tests.support.shell import run, shell

__all__ = ["shell"]  # the fixture

WIDE = [
    "cell", "variant", "cell_status", "stop_reason", "files_changed", "lines_added", "lines_removed",
    "cell_tokens", "cell_cost", "duration_s", "tool_calls", "attempts", "error", "prompt", "score.tests",
]  # fmt: skip


def test_the_columns_read_first_come_first() -> None:
    order = reading_order(WIDE)
    assert order[:5] == ["cell", "prompt", "variant", "cell_status", "stop_reason"]
    assert order[5] == "score.tests"  # the scores before the counts, not past the right edge
    assert sorted(order) == sorted(WIDE)  # nothing lost


def test_a_prompt_beside_an_opaque_id_is_shortened_to_one_line() -> None:
    long = "Fix the median function in stats.py so that\n the tests pass, and explain what was wrong"
    short = short_prompt(long)
    assert len(short) <= PROMPT_CHARS and short.endswith("…") and "\n" not in short
    assert short.startswith("Fix the median function in stats.py")
    assert short_prompt("fix mean") == "fix mean" and short_prompt(None) == ""


def test_a_wide_table_scrolls_inside_the_output() -> None:
    counts = {"files_changed": 1, "lines_added": 2, "lines_removed": 0, "tool_calls": 3, "attempts": 1}
    cells = pd.DataFrame([dict.fromkeys(reading_order(WIDE), "x") | counts | {"cell": "p0-demo-c0-r0"}])
    html = cells_table_html(cells)
    assert styles.SCROLL_BOX in html and "overflow-x:auto" in styles.SCROLL_BOX
    assert html.index(">prompt<") < html.index(">variant<")
    summary = pd.DataFrame([{"variant": "model=demo-fast", "n": 2}])
    summary.attrs["by"] = ["variant"]  # as summarize() marks it
    assert styles.SCROLL_BOX in summary_table_html(summary)
    assert styles.SCROLL_BOX in frame_bundle(pd.DataFrame([{"turn": 1, "prompt": "hi"}]))["text/html"]


async def test_silo_frame_without_pandas_is_one_line_that_says_what_to_install(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_pandas(*args: object, **kwargs: object) -> None:
        raise ImportError(MISSING_PANDAS)

    monkeypatch.setattr(frame_magic, "frame", no_pandas)
    captured, result = await run(shell, "%silo frame some-session")
    assert not result.success
    message = str(result.error_in_exec)
    assert message.startswith("%silo frame: silo_nb.frame and run_grid need pandas") and "\n" not in message
    assert "pip install" in message and "Traceback" not in captured.stdout
