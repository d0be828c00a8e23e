"""``notebooks/06-acp-today.ipynb`` in JupyterLab 4 (Debian's chromium, Playwright), Run All as a user does:
what ACP v1.25 brings, looked at in a real page (issue 31).

The notebook's permission listener is left out, so the subagent's own permission row shows in the running
turn — naming the child that asks — and is clicked; the slow turn's text box under the running turn is
typed into and sent (the demo agent says it at its next step); the notice's banner, the compaction's
marker (its summary opened by a click), the nested child, the mid-turn input, the fork and the frame's new
columns are checked in the DOM and screenshotted (``SILO_NB_KEEP_SCREENSHOTS=1`` keeps them in
``tests/e2e/artifacts/``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from tests.support.browser import (
    ROOT,
    UNREADABLE,
    WAIT_MS,
    Screens,
    lab_in_chromium,
    run_all,
    shoot_cell,
    wait_done,
    wait_kernel_idle,
)
from tests.support.lab import require_browser_stack

pytestmark = pytest.mark.e2e

NOTEBOOK = "acp-today.ipynb"


def write_notebook(folder: Path) -> list[str]:
    """notebooks/06-acp-today.ipynb without its outputs and its permission listener (the browser clicks)."""
    nb = nbformat.read(ROOT / "notebooks" / "06-acp-today.ipynb", as_version=4)
    nb.cells = [
        cell
        for cell in nb.cells
        if not (
            cell.cell_type == "code" and ("on_permission(" in cell.source or "allow.dispose()" in cell.source)
        )
    ]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, folder / NOTEBOOK)
    return [cell.source for cell in nb.cells]


def test_the_protocol_of_today_in_a_real_browser(tmp_path: Path) -> None:
    require_browser_stack()
    from playwright.sync_api import expect

    root = tmp_path / "work"
    root.mkdir()
    sources = write_notebook(root)

    def at(start: str) -> int:
        return next(i for i, source in enumerate(sources) if source.startswith(start))

    compact_at, child_at, slow_at = (
        at("%%prompt\n/compact"),
        at("%%prompt\nUse a subagent"),
        at("%%prompt --bg"),
    )
    side_at, frame_at = at("%%prompt side"), at("columns = ")
    screens = Screens(tmp_path / "artifacts")
    with lab_in_chromium(
        root,
        tmp_path,
        screens,
        delay="0.05",
        viewport=(1280, 1100),
        failure="failure-acp-today.png",
        extra_env={"SILO_NB_DEMO_SLOW_PAUSE": "0.4"},  # 16 s of counting: time to type into the box
    ) as (server, page):
        cells = page.locator(".jp-Notebook .jp-Cell")
        page.goto(server.url(f"lab/tree/{NOTEBOOK}"), timeout=WAIT_MS)
        cells.first.wait_for(timeout=WAIT_MS)
        wait_kernel_idle(page)
        run_all(page)

        # A notice and a compaction: a banner, and a marker whose summary opens on a click.
        compact = cells.nth(compact_at)
        wait_done(compact)
        out = compact.locator(".jp-Cell-outputArea")
        expect(out.locator(".silo-notice[data-severity='info']")).to_contain_text(
            "Compacting the conversation"
        )
        marker = out.locator(".silo-compaction[data-status='completed']")
        expect(marker).to_contain_text("context compacted")
        marker.locator("summary").click()
        expect(marker).to_contain_text("Which mode are you in?")  # the summary names the earlier prompt
        shoot_cell(page, screens, compact, "acp-1-notice-and-compaction.png")

        # A subagent: nested in the running turn; its own permission row says which child asks.
        child = cells.nth(child_at)
        allow = child.get_by_role("button", name="Allow once", exact=True)
        allow.wait_for(state="visible", timeout=WAIT_MS)
        child_out = child.locator(".jp-Cell-outputArea")
        expect(child_out).to_contain_text("Explorer")
        expect(child.locator(".jp-InputPrompt")).to_have_text("[*]:")
        shoot_cell(page, screens, child, "acp-2-subagent-asking.png")
        allow.click()
        wait_done(child)
        expect(child_out.locator("details.silo-subagent")).to_have_count(1)
        expect(child_out.locator(".silo-session-message").first).to_be_visible()
        shoot_cell(page, screens, child, "acp-3-subagent-done.png")

        # Input while the agent works: the box under the running turn, then Send.
        slow = cells.nth(slow_at)
        box = slow.locator(".jp-Cell-outputArea input[placeholder^='Tell the agent']")
        box.wait_for(state="visible", timeout=WAIT_MS)
        box.fill("Mention the Gentoo penguins")
        box.press("Tab")  # the text widget syncs its value
        slow.locator("button.widget-button", has_text="Send").click()
        steered = slow.locator(".silo-steer[data-outcome='injected']", has_text="Mention the Gentoo penguins")
        expect(steered).to_have_count(1, timeout=WAIT_MS)
        shoot_cell(page, screens, slow, "acp-4-steer-while-running.png")
        expect(slow.locator(".jp-Cell-outputArea")).to_contain_text(
            "Noted mid-turn: Mention the Gentoo penguins"
        )
        expect(slow.locator(".jp-Cell-outputArea")).to_contain_text("40.", timeout=WAIT_MS)

        # The fork starts from the parent's conversation; the frame counts what the turns held.
        side = cells.nth(side_at)
        wait_done(side)
        expect(side.locator(".jp-Cell-outputArea")).to_contain_text("slow: count to forty")
        frame = cells.nth(frame_at)
        wait_done(frame)
        expect(frame.locator(".jp-Cell-outputArea table")).to_contain_text("compactions")
        shoot_cell(page, screens, side, "acp-5-fork.png")
        notebook_text = page.locator(".jp-Notebook").text_content() or ""
        for word in UNREADABLE:
            assert word not in notebook_text, word
    shutil.rmtree(root / ".silo", ignore_errors=True)
