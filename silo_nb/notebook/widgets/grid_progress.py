"""``GridProgressBar``: ``run_grid``'s progress in a notebook — a live bar, then a static snapshot.

- While the run goes: an ``IntProgress`` (done of total; red once a cell failed) and a line with done /
  running / failed and the elapsed time. It is displayed with a ``text/html`` + ``text/plain`` fallback
  beside the widget view, so a notebook saved mid-run still reads well.
- When the run ends (also when it is stopped), the display is replaced by a static HTML line: a saved
  notebook never shows a widget repr or "Loading widget…" for it.
- :func:`kernel_progress` gives one only inside a Jupyter kernel (a terminal IPython or a script gets
  ``None``, and ``run_grid`` writes text instead).
"""

from __future__ import annotations

import uuid
from typing import Any

from silo_nb.experiments import GridCounts, format_counts
from silo_nb.notebook._display import display, update_display
from silo_nb.notebook.render import styles
from silo_nb.notebook.widgets._common import esc, ipw

__all__ = ["GridProgressBar", "kernel_progress"]


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


class GridProgressBar:
    """The notebook's :class:`~silo_nb.experiments.progress.GridProgress`."""

    def __init__(self) -> None:
        self.display_id = f"silo-grid-{uuid.uuid4().hex}"
        self.bar = ipw.IntProgress(value=0, min=0, max=1, bar_style="info")
        self.label = ipw.HTML()
        self.box = ipw.HBox([self.bar, self.label])
        self.final_text = ""

    def _bundle(self, counts: GridCounts) -> dict[str, Any]:
        bundle: dict[str, Any] = _snapshot(counts, final=False)
        view = self.box._repr_mimebundle_() or {}
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

    def finished(self, counts: GridCounts) -> None:
        self._show(counts)
        snapshot = _snapshot(counts, final=True)
        self.final_text = snapshot["text/plain"]
        update_display(snapshot, raw=True, display_id=self.display_id)
        self.box.close()
        self.bar.close()
        self.label.close()
