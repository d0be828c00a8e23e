"""``ConnectionBox``: what ``%silo connect`` shows — the session panel, and under it the palette's turns.

- Palette turns run from a widget click, not from a cell, so they have no cell output of their own: the
  live turn view goes into the ``Output`` under the panel, and when the turn ends its static transcript
  (the same bundle a ``%%prompt`` turn leaves) is appended to the box's snapshot (:meth:`add_turn`).
  The connect cell's saved output then holds the panel and every palette turn, like ``%%prompt`` cells.
"""

from __future__ import annotations

from typing import Any

from silo_nb.notebook.widgets._common import ipw
from silo_nb.notebook.widgets.session_panel import SessionPanel
from silo_nb.notebook.widgets.snapshot import SnapshotMixin

__all__ = ["ConnectionBox"]


class ConnectionBox(SnapshotMixin, ipw.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    def __init__(self, panel: SessionPanel) -> None:
        self.panel = panel
        self.output: Any = ipw.Output()
        self.turns: list[tuple[str, str]] = []  # (html, text) of each finished palette turn
        super().__init__(children=[panel, self.output])

    def add_turn(self, data: dict[str, str]) -> None:
        """A palette turn ended: keep its static transcript (shown under the panel, and saved)."""
        self.turns.append((data.get("text/html", ""), data.get("text/plain", "")))

    def snapshot(self) -> tuple[str, str]:
        html, text = self.panel.snapshot()
        for turn_html, turn_text in self.turns:
            html += turn_html
            text += "\n\n" + turn_text
        return html, text
