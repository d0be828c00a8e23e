"""``UndoCellsRow``: under a finished turn that changed cells of the open notebook, **Undo this turn's cell
edits** — the same as ``%silo undo-cells`` for that very turn.

- Shown by ``%%prompt`` once the turn's static transcript is in place, only when the turn applied a cell
  change; it holds the requests that take those changes back (each applied change's journal line
  carries one) and hands them to ``undo`` (``kernel_tools.undo_changes``) on a click or :meth:`undo`.
- After the undo it shows what was restored and what was not, and the button goes; a second click does
  nothing. Its snapshot (saved notebooks, nbconvert) says how to undo from a cell instead.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from silo_nb.notebook.render import styles
from silo_nb.notebook.widgets._common import ipw, log
from silo_nb.notebook.widgets.snapshot import SnapshotMixin

__all__ = ["UndoCellsRow"]

Undo = Callable[[Sequence[Mapping[str, Any]]], Awaitable[list[str]]]


class UndoCellsRow(SnapshotMixin, ipw.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    def __init__(self, undos: Sequence[Mapping[str, Any]], *, undo: Undo, name: str) -> None:
        self.undos, self._undo, self.name = list(undos), undo, name
        self.done: list[str] | None = None
        self._task: asyncio.Task[list[str]] | None = None
        count = len(self.undos)
        self.button: Any = ipw.Button(
            description=f"Undo this turn's cell edits ({count})",
            icon="undo",
            tooltip="Take back the cells this turn inserted, edited, moved or deleted (newest first)",
            layout=ipw.Layout(width="auto"),
        )
        self.button.on_click(lambda _button: self.click())
        self.said: Any = ipw.HTML(value="")
        super().__init__(children=[self.button, self.said], layout=ipw.Layout(align_items="flex-start"))

    def click(self) -> None:
        """The button: start :meth:`undo` on the kernel's loop (once)."""
        if self._task is None and self.done is None:
            self.button.disabled = True
            self._task = asyncio.get_running_loop().create_task(self.undo())
            self._task.add_done_callback(_log_failure)

    async def undo(self) -> list[str]:
        """Take the changes back and show what happened; the second time, what the first said."""
        if self.done is None:
            self.done = await self._undo(self.undos)
            lines = "".join(f"<div>{html.escape(line)}</div>" for line in self.done)
            self.said.value = f'<div style="{styles.SMALL}">Undone:{lines}</div>'
            self.button.layout.display = "none"
        return self.done

    def snapshot(self) -> tuple[str, str]:
        if self.done is not None:
            text = "Undone: " + "; ".join(self.done)
        else:
            text = (
                f"{len(self.undos)} cell edit(s) by this turn: %silo undo-cells {self.name} takes them back"
            )
        return f'<div style="{styles.SMALL};{styles.MUTED}">{html.escape(text)}</div>', text


def _log_failure(task: asyncio.Task[list[str]]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("the cell undo failed", exc_info=task.exception())
