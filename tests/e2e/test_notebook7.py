"""The quickstart in Notebook 7 (``notebook`` 7.6), in Debian's chromium, as a user runs it there: Run >
Run All Cells, a click on the demo agent's "Allow once" while its cell runs, the question form answered,
a turn stopped with its Stop button, then the notebook saved and opened again: every output reads as a
transcript or a snapshot (no "Loading widget…", no widget error, no widget repr), before any cell runs.

Notebook 7 is JupyterLab's components in a one-document page (the same cells, output areas and widget
manager), so what differs is the page around them: the notebook is at ``/notebooks/<path>``, there is no
status bar (the kernel's state is the toolbar's indicator), and a reopened notebook starts its kernel (it
runs nothing: the saved outputs are what shows). Helpers are the JupyterLab test's
(``tests/e2e/test_browser.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.browser import (
    NOTEBOOK,
    UNREADABLE,
    WAIT_MS,
    WIDGET_VIEW,
    QuickstartCells,
    Screens,
    lab_in_chromium,
    open_in_notebook7,
    run_all_cells_notebook7,
    shoot_cell,
    wait_done,
    wait_for_saved,
    write_notebook,
)
from tests.support.lab import require_browser_stack

pytestmark = pytest.mark.e2e


def test_quickstart_in_notebook_7(tmp_path: Path) -> None:
    require_browser_stack()
    from playwright.sync_api import expect

    root = tmp_path / "work"
    root.mkdir()
    notebook, sources = write_notebook(root)
    at = QuickstartCells.of(sources)
    connect_at, edit_at, risky_at, stop_at = at.connect, at.edit, at.risky, at.stop
    screens = Screens(tmp_path / "artifacts")
    with lab_in_chromium(
        root,
        tmp_path,
        screens,
        delay="0.02",
        viewport=(1280, 1100),
        failure="failure-nb7.png",
        app="notebook",
    ) as (server, page):
        cells = page.locator(".jp-Notebook .jp-Cell")
        open_in_notebook7(page, server, NOTEBOOK)
        run_all_cells_notebook7(page)

        edit = cells.nth(edit_at)
        allow = edit.get_by_role("button", name="Allow once", exact=True)
        allow.wait_for(state="visible", timeout=WAIT_MS)
        expect(edit.locator(".jp-InputPrompt")).to_have_text("[*]:")
        shoot_cell(page, screens, edit, "nb7-1-permission-while-running.png")
        allow.click()
        wait_done(edit)
        expect(edit.locator(".jp-Cell-outputArea")).to_contain_text("Edited notes.md.")
        assert (root / "notes.md").is_file()  # the allowed edit really happened

        risky = cells.nth(risky_at)
        submit = risky.get_by_role("button", name="Submit", exact=True)
        submit.wait_for(state="visible", timeout=WAIT_MS)
        form = risky.locator(".jp-Cell-outputArea")
        form.get_by_role("checkbox").first.check()
        form.get_by_role("textbox").first.fill("from Notebook 7")
        form.get_by_role("textbox").first.press("Tab")
        submit.click()
        wait_done(risky)
        expect(risky.locator(".jp-Cell-outputArea")).to_contain_text("You said yes (from Notebook 7)")

        stopped = cells.nth(stop_at)
        stopped.get_by_role("button", name="Allow once", exact=True).wait_for(state="visible")
        stopped.locator("button.widget-button", has_text=re.compile(r"^\s*Stop\s*$")).click()
        expect(stopped.locator(".jp-Cell-outputArea")).to_contain_text("cancelled", timeout=WAIT_MS)

        last = cells.nth(len(sources) - 1)
        wait_done(last)
        expect(last.locator(".jp-Cell-outputArea")).to_contain_text("disconnected demo")
        edit.scroll_into_view_if_needed()
        expect(edit.locator(".silo-transcript")).to_be_visible()
        page.wait_for_timeout(500)  # Notebook 7 paints the cells scrolled to a moment later (windowing)
        screens.shoot(page, "nb7-2-finished.png")

        page.keyboard.press("Escape")
        page.keyboard.press("Control+s")
        nb = wait_for_saved(notebook, len(sources) - 1, "disconnected demo")
        for index, cell in enumerate(nb["cells"]):
            for output in cell.get("outputs", []):
                assert WIDGET_VIEW not in output.get("data", {}), (index, cell["source"])
        for session in server.api("GET", "sessions"):
            server.api("DELETE", f"sessions/{session['id']}")

        # Opened again (Notebook 7 starts a kernel, which runs nothing): the saved outputs show.
        page.goto(server.url(f"notebooks/{NOTEBOOK}"), timeout=WAIT_MS)
        reopened = page.locator(".jp-Notebook .jp-Cell")
        reopened.first.wait_for(timeout=WAIT_MS)
        expect(reopened.nth(edit_at).locator(".silo-transcript")).to_contain_text("Edited notes.md.")
        expect(reopened.nth(connect_at).locator(".silo-panel")).to_contain_text("Silo demo agent")
        expect(reopened.nth(stop_at).locator(".silo-transcript")).to_contain_text("cancelled")
        for index, source in enumerate(sources):
            if source.startswith("%%prompt"):
                expect(reopened.nth(index).locator(".silo-transcript")).to_have_count(1)
        notebook_text = page.locator(".jp-Notebook").text_content() or ""
        for marker in UNREADABLE:
            assert marker not in notebook_text, marker
        reopened.nth(edit_at).scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        screens.shoot(page, "notebook7-quickstart.png")  # docs/screenshots/ holds a copy of one run's
