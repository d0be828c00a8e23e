"""Static snapshots of the live widgets, so a saved notebook reads well without a kernel.

- A widget output saves as its model id and a ``text/plain`` repr (``VBox(children=(…``): nbconvert and
  GitHub show the repr, Markdown exports print it. :class:`SnapshotMixin` makes a widget's own display
  bundle carry a readable ``text/html`` + ``text/plain`` snapshot beside the widget view: nbconvert drops
  a widget view that has no saved state and renders the snapshot instead; frontends without widget
  support (and untrusted notebooks in JupyterLab) show it too.
- Kept current: every display is recorded by ``display_id`` in the shell's :class:`ShownWidgets` (owned
  by its ``NotebookSession``: :meth:`~ShownWidgets.show`, :meth:`~ShownWidgets.track`), and
  :meth:`~ShownWidgets.refresh_all` — called at each turn's end — re-sends each bundle under its
  ``display_id``, so the notebook saves the state after the latest turn. ``update_display`` is routed by
  ``display_id``, so it reaches the original cell from any cell (and headless runners update it too).
- JupyterLab prefers the widget renderer over any other type in a trusted output, and with no kernel
  that renderer says "Loading widget…" forever (it has no fallback, see research/jupyter-facts.md §3).
  So when a widget's life ends (``%silo disconnect``; the agents lists too once no session is left)
  :meth:`~ShownWidgets.freeze` replaces its outputs with the snapshot alone, as a turn's output is
  replaced when the turn ends; a notebook saved after that shows the snapshot everywhere.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from silo_nb.notebook._display import display, update_display
from silo_nb.notebook.widgets._common import log

__all__ = ["WIDGET_VIEW", "ShownWidgets", "SnapshotMixin"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class SnapshotMixin:
    """Put first in the bases of a widget class; the class defines :meth:`snapshot`."""

    def snapshot(self) -> tuple[str, str]:
        """``(html, text)``: what the widget shows now, without widgets."""
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        data: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if data is None:  # a closed widget has no view: the snapshot is all there is
            data = {}
        try:
            html, text = self.snapshot()
        except Exception:  # a snapshot must never break the live display
            log.exception("could not render the snapshot of %s", type(self).__name__)
            return data
        return {**data, "text/html": html, "text/plain": text}


class ShownWidgets:
    """The widgets one shell shows, by ``display_id`` (weakly: a closed, forgotten widget is not kept)."""

    def __init__(self) -> None:
        self._shown: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        self._counter = 0

    def _new_id(self) -> str:
        self._counter += 1
        return f"silo-widget-{id(self):x}-{self._counter}"

    def track(self, widget: Any, display_id: str) -> None:
        """Remember that ``widget`` is shown under ``display_id`` (it was displayed or updated there)."""
        self._shown[display_id] = widget

    def show(self, widget: Any) -> str:
        """Display ``widget`` (with its snapshot) in the running cell; returns its ``display_id``."""
        display_id = self._new_id()
        display(widget, display_id=display_id)
        self.track(widget, display_id)
        return display_id

    def in_displays(self, display_ids: Sequence[str]) -> Callable[[Any], None]:
        """A ``show`` that puts what it is given under each of ``display_ids``, replacing what was there
        (a widget is tracked there, so its snapshot is kept current)."""
        places = list(display_ids)

        def show(shown: Any) -> None:
            for display_id in places:
                update_display(shown, raw=isinstance(shown, dict), display_id=display_id)
                if not isinstance(shown, dict):
                    self.track(shown, display_id)

        return show

    def live_displays(self, widget: Any) -> list[str]:
        return [display_id for display_id, shown in list(self._shown.items()) if shown is widget]

    def widgets(self) -> list[Any]:
        """The widgets shown now, each once."""
        return list({id(w): w for w in list(self._shown.values())}.values())

    def refresh(self, widget: Any) -> None:
        """Re-send ``widget``'s bundle wherever it is shown (its snapshot changed between turns)."""
        for display_id in self.live_displays(widget):
            try:
                update_display(widget, display_id=display_id)
            except Exception:
                log.exception("could not refresh the output %s", display_id)

    def refresh_all(self) -> None:
        """Re-send every live widget's bundle, so each saved output holds its current snapshot."""
        for display_id, widget in list(self._shown.items()):
            if getattr(widget, "comm", None) is None:  # closed: nothing live to refresh
                self._shown.pop(display_id, None)
                continue
            try:
                update_display(widget, display_id=display_id)
            except Exception:
                log.exception("could not refresh the output %s", display_id)

    def freeze(self, widget: Any) -> None:
        """Replace every output of ``widget`` by its snapshot alone (no widget view left to load)."""
        for display_id in self.live_displays(widget):
            self._shown.pop(display_id, None)
            try:
                html, text = widget.snapshot()
                update_display({"text/html": html, "text/plain": text}, raw=True, display_id=display_id)
            except Exception:
                log.exception("could not freeze the output %s", display_id)

    def freeze_all(self) -> None:
        """Freeze every live display (the last session of this kernel ended: nothing is left to watch)."""
        for widget in self.widgets():
            self.freeze(widget)

    def __len__(self) -> int:
        return len(self._shown)
