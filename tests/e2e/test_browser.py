"""One real-browser smoke test: JupyterLab 4 in Debian's chromium, driven by Playwright (sync API).

It runs a notebook cell by cell the way a user does: ``%silo connect demo`` shows the session panel,
a blocking ``%%prompt`` shows the demo agent's permission row while the cell is still ``[*]``, a click
on "Allow once" lets the turn finish, the live turn view is swapped for the static transcript, the next
cell runs after it, and the transcript survives a save, a kernel shutdown and a reload.

Needs ``bash .ci/setup`` (the ``browser`` extra and ``/usr/bin/chromium``); it fails, never skips, when
they are missing. Screenshots go to pytest's ``tmp_path``; with ``SILO_NB_KEEP_SCREENSHOTS=1`` they are
also copied to ``tests/e2e/artifacts/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.e2e.lab import CHROMIUM, CHROMIUM_FLAGS, LabServer, lab_server, require_browser_stack

pytestmark = pytest.mark.e2e

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
NOTEBOOK = "smoke.ipynb"
CELLS = ["%load_ext silo_nb", "%silo connect demo", "%%prompt\nplease edit the notes", 'print("after")']
PROMPT_CELL = 2
WAIT_MS = 60_000  # the bound on every single wait
DONE = re.compile(r"^\[\d+\]:$")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_ERROR = "Error displaying widget"
KERNEL_IDLE = re.compile(r"^Python 3 \(ipykernel\) \| Idle$")


def write_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    path = folder / NOTEBOOK
    nbformat.write(nb, path)
    return path


def saved_prompt_outputs(path: Path) -> list[dict[str, Any]]:
    try:
        nb = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return list(nb["cells"][PROMPT_CELL].get("outputs", []))


def wait_for_saved_transcript(path: Path, timeout: float = 30) -> list[dict[str, Any]]:
    """The browser saves asynchronously: poll the file until the prompt cell's transcript is on disk."""
    deadline = time.monotonic() + timeout
    while True:
        outputs = saved_prompt_outputs(path)
        if any("Edited notes.md." in "".join(o.get("data", {}).get("text/html", "")) for o in outputs):
            return outputs
        if time.monotonic() > deadline:
            pytest.fail(f"the saved notebook never held the transcript; prompt cell outputs: {outputs}")
        time.sleep(0.2)


class Screens:
    """Screenshots into ``tmp_path``, copied to ``tests/e2e/artifacts/`` on SILO_NB_KEEP_SCREENSHOTS=1."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.taken: list[Path] = []

    def shoot(self, page: Any, name: str) -> None:
        path = self.folder / name
        page.screenshot(path=str(path))
        self.taken.append(path)

    def keep(self) -> None:
        if os.environ.get("SILO_NB_KEEP_SCREENSHOTS") != "1":
            return
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for path in self.taken:
            shutil.copy2(path, ARTIFACTS / path.name)


def run_cell(page: Any, index: int) -> Any:
    """Select the cell by its input prompt, leave edit mode, Shift+Enter; returns the cell locator."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("Shift+Enter")
    return cell


def wait_done(cell: Any) -> None:
    from playwright.sync_api import expect

    expect(cell.locator(".jp-InputPrompt")).to_have_text(DONE, timeout=WAIT_MS)


def open_notebook(page: Any, server: LabServer) -> None:
    page.goto(server.url(f"lab/tree/{NOTEBOOK}"), timeout=WAIT_MS)
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=WAIT_MS)


def reopen_without_kernel(page: Any, server: LabServer) -> None:
    """Reload Lab on a reset workspace (so the tab is not restored with a kernel) and open the notebook
    through the file browser's "Open With > Notebook (no kernel)", which starts no kernel."""
    page.goto(server.url("lab?reset"), timeout=WAIT_MS)
    page.locator(".jp-DirListing-item", has_text=NOTEBOOK).click(button="right", timeout=WAIT_MS)
    page.locator(".lm-Menu-item", has_text="Open With").click()  # a submenu: no menuitem role
    page.get_by_role("menuitem", name="Notebook (no kernel)").click()
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=WAIT_MS)


def kernel_status(page: Any) -> Any:
    """The status bar's "<kernel> | <status>" item ("No Kernel | Initializing" before a kernel exists)."""
    return page.locator(".jp-StatusBar-TextItem", has_text=" | ")


def wait_kernel_idle(page: Any) -> None:
    """The toolbar indicator already says idle while there is no kernel yet: wait for a real one."""
    from playwright.sync_api import expect

    expect(kernel_status(page)).to_have_text(KERNEL_IDLE, timeout=WAIT_MS)
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=WAIT_MS)


def test_notebook_turn_in_a_real_browser(tmp_path: Path) -> None:
    require_browser_stack()
    from playwright.sync_api import expect, sync_playwright

    root = tmp_path / "work"
    root.mkdir()
    notebook = write_notebook(root)
    env = {
        "SILO_NB_DATA_DIR": str(tmp_path / "silo-data"),
        "SILO_NB_DEMO_STATE_DIR": str(tmp_path / "demo-state"),
        "SILO_NB_DEMO_DELAY": "0.02",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    screens = Screens(tmp_path / "artifacts")
    with lab_server(root, tmp_path / "lab", env) as server, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 1200},
        )
        context.set_default_timeout(WAIT_MS)
        page = context.pages[0] if context.pages else context.new_page()
        try:
            open_notebook(page, server)
            wait_kernel_idle(page)

            wait_done(run_cell(page, 0))

            connect = run_cell(page, 1)
            wait_done(connect)
            expect(connect.locator(".jp-Cell-outputArea")).to_contain_text("Silo demo agent", timeout=WAIT_MS)
            expect(connect.get_by_label("Mode", exact=True)).to_be_visible(timeout=WAIT_MS)  # a <select>

            turn = run_cell(page, PROMPT_CELL)
            allow = turn.get_by_role("button", name="Allow once", exact=True)
            allow.wait_for(state="visible", timeout=WAIT_MS)
            expect(turn.locator(".jp-InputPrompt")).to_have_text("[*]:")  # still running
            expect(turn.get_by_role("button", name=re.compile(r"^Always allow"))).to_be_visible()
            expect(turn.get_by_role("button", name="Reject", exact=True)).to_be_visible()
            allow.scroll_into_view_if_needed()
            screens.shoot(page, "1-permission-while-running.png")
            allow.click()

            wait_done(turn)
            turn_output = turn.locator(".jp-Cell-outputArea")
            expect(turn_output).to_contain_text("Edited notes.md.", timeout=WAIT_MS)
            expect(turn_output).not_to_contain_text(WIDGET_ERROR)
            expect(turn_output.locator(".jupyter-widgets")).to_have_count(0)  # swapped for static HTML
            expect(page.locator(".jp-Notebook")).not_to_contain_text(WIDGET_ERROR)

            after = run_cell(page, 3)
            wait_done(after)
            expect(after.locator(".jp-Cell-outputArea")).to_have_text("after", timeout=WAIT_MS)
            turn_count = int(turn.locator(".jp-InputPrompt").inner_text().strip("[]: "))
            after_count = int(after.locator(".jp-InputPrompt").inner_text().strip("[]: "))
            assert after_count == turn_count + 1, (turn_count, after_count)
            turn.scroll_into_view_if_needed()
            screens.shoot(page, "2-after-turn.png")

            page.keyboard.press("Escape")
            page.keyboard.press("Control+s")
            outputs = wait_for_saved_transcript(notebook)
            assert all(WIDGET_VIEW not in output.get("data", {}) for output in outputs), outputs

            for session in server.api("GET", "sessions"):
                if session["path"] == NOTEBOOK:
                    server.api("DELETE", f"sessions/{session['id']}")
            assert server.api("GET", "kernels") == []

            reopen_without_kernel(page, server)
            expect(kernel_status(page)).to_have_text(re.compile(r"^No Kernel \| "), timeout=WAIT_MS)
            reopened = page.locator(".jp-Notebook .jp-Cell").nth(PROMPT_CELL).locator(".jp-Cell-outputArea")
            expect(reopened).to_contain_text("Edited notes.md.", timeout=WAIT_MS)
            expect(reopened).not_to_contain_text(WIDGET_ERROR)
            reopened.scroll_into_view_if_needed()
            screens.shoot(page, "3-reopened-without-kernel.png")
            assert server.api("GET", "kernels") == []
        except BaseException:
            with contextlib.suppress(Exception):  # what the page looked like when it failed
                screens.shoot(page, "failure.png")
            raise
        finally:
            context.close()
            screens.keep()
