"""Issue 22's readability fixes, seen in JupyterLab in Debian's chromium (beside ``test_browser.py``).

One small notebook, run with Run All: a turn with an attached DataFrame whose edit of a bulleted
``notes.md`` is rejected (the attachment's SVG icon, diff context lines starting with "- " shown with no
deletion marker, the Reject decision's red bar), a long session title, ``%silo frame`` (one line per cell,
a tooltip on the cut prompt), notebook 02's own plot cell (whole-number turn ticks) and ``%silo agents``
(the title cut with "…", the whole one in a tooltip). Each is checked in the DOM and screenshotted:
``readability-*.png`` in pytest's ``tmp_path`` (and ``tests/e2e/artifacts/`` with
SILO_NB_KEEP_SCREENSHOTS=1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.browser import (
    NOTEBOOK,
    Screens,
    lab_in_chromium,
    open_notebook,
    run_all,
    wait_done,
    wait_kernel_idle,
    write_code_notebook,
)
from tests.support.lab import require_browser_stack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
LONG_TITLE = "Investigate why the nightly penguin measurement import drops the last two rows of bill lengths"
RED = "rgba(244, 67, 54, 0.7)"


def plot_cell() -> str:
    """Notebook 02's plot of the turns, as the notebook has it."""
    cells = json.loads((ROOT / "notebooks" / "02-data-science.ipynb").read_text(encoding="utf-8"))["cells"]
    return next("".join(c["source"]) for c in cells if 'y="tokens_used"' in "".join(c["source"]))


CELLS = [
    "%load_ext silo_nb\nimport pandas as pd\nimport silo_nb\n"
    "sales = pd.DataFrame({'region': ['north', 'south'], 'units': [120, 95]})",
    "%silo connect demo",
    "refuse = demo.on_permission(lambda request: request.respond('reject-once'))",
    "%%prompt --attach sales\nplease edit notes.md",
    f"%%prompt\n/title {LONG_TITLE}",
    "%%prompt\nSummarise this table, then plan an analysis of price against units per region",
    "%silo frame demo",
    "turns = silo_nb.frame(demo)\n" + plot_cell(),
    "%silo agents",
]


def write_notebook(folder: Path) -> None:
    (folder / "notes.md").write_text("# Notes\n\n- 344 penguins measured\n- two bill lengths are missing\n")
    write_code_notebook(folder / NOTEBOOK, CELLS)


def test_readability_in_a_real_browser(tmp_path: Path) -> None:
    require_browser_stack()
    from playwright.sync_api import expect

    root = tmp_path / "work"
    root.mkdir()
    write_notebook(root)
    screens = Screens(tmp_path / "artifacts")
    with lab_in_chromium(
        root,
        tmp_path,
        screens,
        delay="0.01",
        viewport=(1100, 900),
        failure="readability-failure.png",
        scrollbars=True,
    ) as (server, page):
        cells = page.locator(".jp-Notebook .jp-Cell")

        def shoot(index: int, name: str) -> None:
            cells.nth(index).locator(".jp-Cell-outputArea").scroll_into_view_if_needed()
            cells.nth(index).locator(".jp-Cell-outputArea").screenshot(path=str(screens.folder / name))
            screens.taken.append(screens.folder / name)

        open_notebook(page, server)
        wait_kernel_idle(page)
        run_all(page)
        wait_done(cells.nth(len(CELLS) - 1))

        edit = cells.nth(3).locator(".jp-Cell-outputArea")
        icon = edit.locator(".silo-attachment svg.silo-attachment-icon")
        expect(icon).to_have_count(1)
        assert icon.bounding_box()["width"] > 8  # drawn, not a missing-glyph box
        context_line = edit.locator(".silo-diff-line", has_text="- 344 penguins measured").first
        expect(context_line.locator(".silo-diff-gutter")).to_have_text("")
        assert "rgba(0, 0, 0, 0)" in context_line.evaluate("e => getComputedStyle(e).backgroundColor")
        bar = edit.locator(".silo-permission").evaluate("e => getComputedStyle(e).borderLeftColor")
        assert bar == RED, bar
        shoot(3, "readability-1-attachment-diff-reject.png")

        frame = cells.nth(6).locator(".silo-frame")
        cut = frame.locator("td[title^='Summarise this table']")
        expect(cut).to_have_count(1)
        assert (cut.text_content() or "").endswith("…")
        heights = {round(box["height"]) for box in (td.bounding_box() for td in frame.locator("td").all())}
        assert max(heights) < 30, heights  # every cell one line high
        # wider than the output, the table scrolls inside its box; the box is never wider than the output
        box, output = frame.evaluate("e => [e.clientWidth, e.closest('.jp-OutputArea').clientWidth]")
        assert box <= output, (box, output)
        assert frame.evaluate("e => e.scrollWidth > e.clientWidth")
        shoot(6, "readability-2-frame-table.png")

        plot = cells.nth(7).locator(".jp-Cell-outputArea img")
        expect(plot).to_have_count(1)
        shoot(7, "readability-3-plot-integer-ticks.png")

        agents = cells.nth(8).locator(".jp-Cell-outputArea")
        title = agents.locator(f"b[title='{LONG_TITLE}']").first
        expect(title).to_be_visible()
        shown = title.text_content() or ""
        assert shown.endswith("…") and LONG_TITLE.startswith(shown[:-1]), shown
        assert title.evaluate("e => e.scrollWidth <= e.parentElement.clientWidth + 1")  # not clipped
        shoot(8, "readability-4-agents-title.png")
