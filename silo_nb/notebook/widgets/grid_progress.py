"""``GridProgressBar``: ``run_grid``'s progress in a notebook — a live bar, then a static snapshot.

- While the run goes: an ``IntProgress`` (done of total; red once a cell failed) and a line with done /
  running / failed and the elapsed time. It is displayed with a ``text/html`` + ``text/plain`` fallback
  beside the widget view, so a notebook saved mid-run still reads well.
- When the run ends (also when it is stopped), the display is replaced by a static HTML line: a saved
  notebook never shows a widget repr or "Loading widget…" for it.
- Each running cell has an "Attach" button under the bar (up to :data:`MAX_ATTACH_BUTTONS`; ``%silo
  attach`` reaches the others): a click shows that cell's turn below it, live and answerable
  (``live_cell_view.py``). The attached view stays when the run ends; the buttons go.
- :func:`kernel_progress` gives one only inside a Jupyter kernel (a terminal IPython or a script gets
  ``None``, and ``run_grid`` writes text instead).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import anyio

from silo_nb.experiments import GridCounts, format_counts, locate_cell
from silo_nb.notebook._display import display, update_display
from silo_nb.notebook.render import styles
from silo_nb.notebook.widgets._common import esc, ipw, log
from silo_nb.task_set import TaskSet

__all__ = ["MAX_ATTACH_BUTTONS", "GridProgressBar", "kernel_progress"]

MAX_ATTACH_BUTTONS = 16
ATTACH_LOOKS = 300  # a click looks for a starting cell's channel for up to 30 s


def kernel_progress() -> GridProgressBar | None:
    """A progress bar when this runs in a Jupyter kernel, else None."""
    from IPython import get_ipython

    shell = get_ipython()
    return GridProgressBar() if shell is not None and getattr(shell, "kernel", None) is not None else None


def _snapshot(counts: GridCounts, *, final: bool) -> dict[str, str]:
    text = format_counts(counts)
    colour = styles.WARNING_TEXT if counts.failed else ""
    mark = "✓ " if final and not counts.failed else ("⚠ " if counts.failed else "")
    return {
        "text/plain": mark + text,
        "text/html": f'<div class="silo-grid-progress" style="{colour}">{esc(mark + text)}</div>',
    }


def _found(folder: str, cell: str) -> bool:
    try:
        locate_cell(folder, cell)
    except LookupError:
        return False
    return True


class GridProgressBar:
    """The notebook's :class:`~silo_nb.experiments.progress.GridProgress`."""

    def __init__(self) -> None:
        self.display_id = f"silo-grid-{uuid.uuid4().hex}"
        self.bar = ipw.IntProgress(value=0, min=0, max=1, bar_style="info")
        self.label = ipw.HTML()
        self.box = ipw.HBox([self.bar, self.label])
        self.attach_buttons: dict[str, Any] = {}  # by running cell
        self.attach_row = ipw.HBox(children=[], layout=ipw.Layout(flex_flow="row wrap"))
        self.attach_note = ipw.HTML()
        self.attached: Any = ipw.VBox(children=[])  # the views of the cells attached to
        self.views: list[Any] = []
        self._attaching = TaskSet()
        self._folder = ""
        self.outer = ipw.VBox([self.box, self.attach_row, self.attach_note, self.attached])
        self.final_text = ""

    def _bundle(self, counts: GridCounts) -> dict[str, Any]:
        bundle: dict[str, Any] = _snapshot(counts, final=False)
        view = self.outer._repr_mimebundle_() or {}
        bundle.update(view)
        return bundle

    def started(self, counts: GridCounts) -> None:
        self.bar.max = max(counts.total, 1)
        self._show(counts)
        display(self._bundle(counts), raw=True, display_id=self.display_id)

    def changed(self, counts: GridCounts) -> None:
        self._show(counts)

    def _show(self, counts: GridCounts) -> None:
        self.bar.value = counts.done
        self.bar.bar_style = (
            "danger" if counts.failed else ("success" if counts.done == counts.total else "info")
        )
        self.label.value = esc(format_counts(counts))
        self._folder = counts.folder
        shown = list(counts.running_cells[:MAX_ATTACH_BUTTONS]) if counts.folder else []
        if list(self.attach_buttons) != shown:
            for cell in set(self.attach_buttons) - set(shown):
                self.attach_buttons.pop(cell).close()
            for cell in shown:
                if cell not in self.attach_buttons:
                    button = ipw.Button(
                        description=f"Attach {cell}",
                        icon="eye",
                        tooltip="Show this cell's turn here: watch it, answer it, stop it",
                        layout=ipw.Layout(width="auto"),
                    )
                    button.on_click(lambda _button, cell=cell: self.attach(cell))
                    self.attach_buttons[cell] = button
            self.attach_row.children = [self.attach_buttons[cell] for cell in shown]

    def attach(self, cell: str) -> asyncio.Task[None]:
        """The Attach button's twin: show ``cell``'s turn under the bar (in a task: the click returns)."""
        return self._attaching.add(asyncio.ensure_future(self._attach(self._folder, cell)))

    async def _attach(self, folder: str, cell: str) -> None:
        from silo_nb.notebook.live_cell_view import attach_cell  # the view's module imports the widgets

        try:
            # A cell that has just started publishes its channel once its agent is connected: wait for it
            # a little (bounded), rather than send the user away.
            for _ in range(ATTACH_LOOKS):  # a file in the run's folder, perhaps written on a Dask worker
                if _found(folder, cell):
                    break
                await anyio.sleep(0.1)
            view = await attach_cell(folder, cell)
        except (LookupError, ValueError, OSError) as exc:
            self.attach_note.value = esc(str(exc))
            return
        except Exception:
            log.exception("attaching to a grid cell failed")
            return
        self.attach_note.value = ""
        self.views.append(view)
        self.attached.children = (*self.attached.children, view.view)

    def finished(self, counts: GridCounts) -> None:
        self._show(counts)
        snapshot = _snapshot(counts, final=True)
        self.final_text = snapshot["text/plain"]
        update_display(snapshot, raw=True, display_id=self.display_id)
        self.box.close()
        self.bar.close()
        self.label.close()
        self.attach_row.close()
        self.attach_note.close()
        self.outer.close()
        for button in self.attach_buttons.values():
            button.close()
        self.attach_buttons.clear()
        if self.views:  # the attached views stay, below the final line, as the turns they show
            display(self.attached)
