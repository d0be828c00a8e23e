"""JupyterLab (or Notebook 7) in headless Chromium: open the quickstart, run it, wait on cells, shoot them."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.support.lab import CHROMIUM, CHROMIUM_FLAGS, LabServer, lab_server

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "e2e" / "artifacts"
QUICKSTARTS = (ROOT / "notebooks" / "01-quickstart.ipynb",)
NOTEBOOK = "quickstart.ipynb"


def write_code_notebook(path: Path, sources: list[str]) -> None:
    """A notebook of code cells for the Python 3 kernel, at ``path``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nb, path)


STOP_PROMPT = "%%prompt\nNow edit notes.md once more"  # waits for a permission: Stop it there
EXTRA_CELLS = [STOP_PROMPT, "%silo disconnect demo"]
WAIT_MS = 60_000  # the bound on every single wait
DONE = re.compile(r"^\[\d+\]:$")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
UNREADABLE = ("Loading widget", "Error displaying widget", "VBox(children", "children=(", "model not found")
KERNEL_IDLE = re.compile(r"^Python 3 \(ipykernel\) \| Idle$")


def write_notebook(folder: Path) -> tuple[Path, list[str]]:
    """The quickstart without its auto-answering listener, plus a turn to stop and a disconnect."""
    source = next(path for path in QUICKSTARTS if path.is_file())
    nb = nbformat.read(source, as_version=4)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.cells = [
        cell
        for cell in nb.cells
        if not (
            cell.cell_type == "code"
            and any(
                mark in cell.source
                for mark in (
                    "on_permission(",
                    "auto_allow",
                    "allow.dispose()",
                    "on_elicitation(",
                    "answer.dispose()",
                )
            )
        )
    ]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.cells += [nbformat.v4.new_code_cell(source) for source in EXTRA_CELLS]
    path = folder / NOTEBOOK
    nbformat.write(nb, path)
    return path, [cell.source for cell in nb.cells]


def code_index(sources: list[str], predicate: Any) -> int:
    return next(i for i, source in enumerate(sources) if predicate(source))


@dataclass(frozen=True)
class QuickstartCells:
    """Where the quickstart's cells are (their indices in the notebook :func:`write_notebook` wrote)."""

    connect: int
    edit: int
    risky: int
    tests: int
    figure: int
    stop: int

    @classmethod
    def of(cls, sources: list[str]) -> QuickstartCells:
        def prompt(words: str) -> int:
            return code_index(sources, lambda s: s.startswith("%%prompt") and words in s.lower())

        return cls(
            connect=code_index(sources, lambda s: s.startswith("%silo connect")),
            edit=prompt("edit notes.md"),
            risky=prompt("risky"),
            tests=prompt("run the tests"),
            figure=code_index(sources, lambda s: s.startswith("%%prompt --attach fig")),
            stop=sources.index(STOP_PROMPT),
        )


def saved(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def wait_for_saved(path: Path, index: int, text: str, timeout: float = 30) -> dict[str, Any]:
    """The browser saves asynchronously: poll the file until cell ``index`` holds ``text``."""
    deadline = time.monotonic() + timeout
    while True:
        nb = saved(path)
        cells = nb.get("cells", [])
        if len(cells) > index and text in json.dumps(cells[index].get("outputs", [])):
            return nb
        if time.monotonic() > deadline:
            pytest.fail(f"the saved notebook never held {text!r} in cell {index}")
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


@contextlib.contextmanager
def lab_in_chromium(
    root: Path,
    tmp_path: Path,
    screens: Screens,
    *,
    delay: str,
    viewport: tuple[int, int],
    failure: str,
    kernel_python: Path | None = None,
    app: str = "lab",
    scrollbars: bool = False,
    collaboration: bool = False,
    extra_env: dict[str, str] | None = None,
) -> Iterator[tuple[LabServer, Any]]:
    """JupyterLab on ``root`` (the demo agent paced by ``delay``; its kernels run ``kernel_python`` if
    given) and a headless chromium page on it; a screenshot named ``failure`` if the body raises; the
    screenshots kept (see :class:`Screens`)."""
    from playwright.sync_api import sync_playwright

    env = {
        "SILO_NB_DATA_DIR": str(tmp_path / "silo-data"),
        "SILO_NB_DEMO_STATE_DIR": str(tmp_path / "demo-state"),
        "SILO_NB_DEMO_DELAY": delay,
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        **(extra_env or {}),
    }
    with (
        lab_server(
            root, tmp_path / "lab", env, kernel_python=kernel_python, app=app, collaboration=collaboration
        ) as server,
        sync_playwright() as pw,
    ):
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            # headless chromium hides scrollbars: shown, a screenshot tells a table that scrolls
            ignore_default_args=["--hide-scrollbars"] if scrollbars else None,
            viewport={"width": viewport[0], "height": viewport[1]},
        )
        context.set_default_timeout(WAIT_MS)
        page = context.pages[0] if context.pages else context.new_page()
        try:
            yield server, page
        except BaseException:
            with contextlib.suppress(Exception):  # what the page looked like when it failed
                screens.shoot(page, failure)
            raise
        finally:
            context.close()
            screens.keep()


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


def run_all(page: Any) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()


def shoot_cell(page: Any, screens: Screens, cell: Any, name: str) -> None:
    cell.scroll_into_view_if_needed()
    screens.shoot(page, name)


def kernels_now(server: LabServer) -> list[dict[str, Any]]:
    """The server's kernels; none while it answers 500 (seen once under load: the list asked for while
    the page's kernel was still starting)."""
    try:
        kernels: list[dict[str, Any]] = server.api("GET", "kernels")
    except urllib.error.HTTPError as exc:
        if exc.code < 500:
            raise
        return []
    return kernels


def open_in_notebook7(page: Any, server: LabServer, notebook: str) -> None:
    """Open ``notebook`` in Notebook 7's page and wait for its kernel (asked of the server)."""
    page.goto(server.url(f"notebooks/{notebook}"), timeout=WAIT_MS)
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=WAIT_MS)
    # No status bar here, and the toolbar's indicator says idle before a kernel exists: ask the server.
    deadline = time.monotonic() + WAIT_MS / 1000
    while not any(k.get("execution_state") == "idle" for k in kernels_now(server)):
        assert time.monotonic() < deadline, "Notebook 7 started no kernel"
        time.sleep(0.2)
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=WAIT_MS)


def run_all_cells_notebook7(page: Any) -> None:
    """Run > Run All Cells, again while the page has not yet taken its kernel (on a loaded machine the
    first one can come before it: then nothing runs and the last cell is selected)."""
    from playwright.sync_api import expect

    first_code = page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt").first
    for _ in range(5):
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()
        try:
            expect(first_code).not_to_have_text("[ ]:", timeout=10_000)
            return
        except AssertionError:
            continue
    raise AssertionError("Run All Cells ran nothing in Notebook 7")
