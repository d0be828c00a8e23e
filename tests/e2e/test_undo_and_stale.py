"""Issue 32 in JupyterLab, in headless Chromium: an answer that knows when its data changed, and an undo that
puts the kernel's variables back.

Run All on a small notebook: the demo agent looks into ``df`` (it inspects it, and runs a groupby allowed by a
policy); a second turn runs code that changes ``df`` and binds ``x``. The first turn's cell then shows the
**stale** badge ("df changed since this answer") with **Re-ask**; clicking **Undo turn 2** under the second
puts ``df`` back and removes ``x`` (a cell run afterwards shows it), and says what it restored; **Re-ask**
sends the first prompt again on a fork, whose answer shows in that cell. Screenshots: ``undo-*.png``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.browser import (
    NOTEBOOK,
    WAIT_MS,
    Screens,
    lab_in_chromium,
    open_notebook,
    run_all,
    shoot_cell,
    wait_done,
    wait_kernel_idle,
    write_code_notebook,
)
from tests.support.lab import require_browser_stack

pytestmark = pytest.mark.e2e

CELLS = [
    "%load_ext silo_nb\nimport pandas as pd\nimport silo_nb\n"
    "df = pd.DataFrame({'species': ['Adelie', 'Gentoo', 'Adelie'], 'mass': [3750, 4500, 3800]})",
    "%silo connect demo",
    "allow = demo.on_permission(silo_nb.PermissionPolicy('allow code'))",
    "%%prompt\nlook into df",
    "%%prompt\nrun in the kernel:\ndf.loc[0, 'mass'] = 1\nx = 42",
]
CHECK = "int(df.loc[0, 'mass']), 'x' in globals()"


def write_notebook(folder: Path) -> None:
    write_code_notebook(folder / NOTEBOOK, [*CELLS, CHECK])


def test_a_stale_answer_and_an_undo_in_a_real_browser(tmp_path: Path) -> None:
    require_browser_stack()
    from playwright.sync_api import expect

    root = tmp_path / "work"
    root.mkdir()
    write_notebook(root)
    screens = Screens(tmp_path / "artifacts")
    with lab_in_chromium(
        root, tmp_path, screens, delay="0.02", viewport=(1280, 1400), failure="undo-failure.png"
    ) as (server, page):
        open_notebook(page, server)
        wait_kernel_idle(page)
        run_all(page)
        cells = page.locator(".jp-Notebook .jp-Cell")
        looked, changed, check = cells.nth(3), cells.nth(4), cells.nth(5)
        for cell in (looked, changed, check):
            wait_done(cell)
        expect(check.locator(".jp-Cell-outputArea")).to_contain_text("(1, True)")

        # The first answer looked at df; the second turn changed it: the first says so.
        answer = looked.locator(".jp-Cell-outputArea")
        expect(answer).to_contain_text("df changed since this answer", timeout=WAIT_MS)
        reask = looked.get_by_role("button", name="Re-ask")
        expect(reask).to_be_visible()
        shoot_cell(page, screens, reask, "undo-1-stale-answer.png")

        # Undo turn 2: df back, x gone, and the row says what it restored.
        changed.locator("button.widget-button", has_text="Undo turn 2").click()
        output = changed.locator(".jp-Cell-outputArea")
        expect(output).to_contain_text("Turn 2 undone", timeout=WAIT_MS)
        expect(output).to_contain_text("variables · df: restored")
        expect(output).to_contain_text("variables · x: restored — made by turn 2: removed")
        shoot_cell(page, screens, changed, "undo-2-turn-undone.png")
        check.click()
        page.keyboard.press("Shift+Enter")
        expect(check.locator(".jp-Cell-outputArea")).to_contain_text("(3750, False)", timeout=WAIT_MS)

        # Re-ask: the first prompt again, on a fork, answered in its cell.
        reask.click()
        expect(answer).to_contain_text("fork", timeout=WAIT_MS)
        expect(answer.locator(".silo-transcript").last).to_contain_text("Let me look into", timeout=WAIT_MS)
        shoot_cell(page, screens, looked, "undo-3-reasked.png")
