"""``UndoTurnRow``: under a finished turn, **Undo turn N** — ``handle.undo(turn=N)``: its files, cells and
kernel variables put back, the agent rewound where it can (issue 32); then what was restored and what was
not, one line each.

- A click (or :meth:`undo`, its Python twin) runs the undo once on the kernel's loop; a refusal (a turn is
  running, the turn is already undone) is shown beside the button in one line — the button comes back when
  trying again makes sense (a turn was running), else goes.
- ``%silo undo`` from another cell marks the row too (:meth:`mark_undone`), so the turn's own cell says it.
- The snapshot (saved notebooks, nbconvert) is the "undone" report once undone, else nothing: a saved turn
  is not cluttered with a button that needs a kernel.
"""

from __future__ import annotations

import asyncio
import html
import weakref
from collections.abc import Awaitable, Callable, Sequence

from silo_nb.model import AgentSessionError, UndoItem, UndoReport
from silo_nb.notebook.render import styles
from silo_nb.notebook.widgets._common import ipw, log
from silo_nb.notebook.widgets.snapshot import SnapshotMixin

__all__ = ["MAX_LINES", "UndoRows", "UndoTurnRow", "undone_html", "undone_text"]

MAX_LINES = 30  # items listed; the others counted

Undo = Callable[[int], Awaitable[UndoReport]]


def undone_text(turn: int, items: Sequence[UndoItem]) -> str:
    """The one-paragraph account of an undo of ``turn`` (its items: what was restored, what not)."""
    restored = sum(1 for item in items if item.restored)
    head = f"↶ Turn {turn} undone: {restored} restored, {len(items) - restored} not restored."
    lines = [head, *(item.text() for item in items[:MAX_LINES])]
    if len(items) > MAX_LINES:
        lines.append(f"… {len(items) - MAX_LINES} more")
    return "\n".join(lines)


def undone_html(turn: int, items: Sequence[UndoItem]) -> str:
    first, *rest = undone_text(turn, items).split("\n")
    rows = "".join(f"<div>{html.escape(line)}</div>" for line in rest)
    return f'<div class="silo-undone" style="{styles.SMALL}"><b>{html.escape(first)}</b>{rows}</div>'


class UndoTurnRow(SnapshotMixin, ipw.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    def __init__(self, turn: int, *, undo: Undo, name: str) -> None:
        self.turn, self._undo, self.name = turn, undo, name
        self.report: UndoReport | None = None
        self.items: list[UndoItem] | None = None  # what the undo of this turn did, once done
        self._task: asyncio.Task[UndoReport | None] | None = None
        self.button = ipw.Button(
            description=f"Undo turn {turn}",
            icon="undo",
            tooltip="Take this turn back: the files, cells and kernel variables it changed, and the agent's "
            "memory of it where the agent can rewind",
            layout=ipw.Layout(width="auto"),
        )
        self.button.add_class("silo-undo-turn")
        self.button.on_click(lambda _button: self.click())
        self.said = ipw.HTML(value="")
        super().__init__(children=[self.button, self.said], layout=ipw.Layout(align_items="flex-start"))

    def click(self) -> None:
        """The button: start :meth:`undo` on the kernel's loop (once at a time)."""
        if self._task is None or self._task.done():
            self.button.disabled = True
            self._task = asyncio.get_running_loop().create_task(self.undo())
            self._task.add_done_callback(_log_failure)

    async def undo(self) -> UndoReport | None:
        """Undo the turn and show what happened; None (and the reason shown) when it was refused."""
        if self.items is not None:
            return self.report
        try:
            report = await self._undo(self.turn)
        except AgentSessionError as exc:
            reason = str(exc).splitlines()[0]
            self.said.value = f'<div style="{styles.SMALL};{styles.MUTED}">{html.escape(reason)}</div>'
            self.button.disabled = False
            if "already undone" in reason:
                self.button.layout.display = "none"
            return None
        self.mark_undone(report)
        return report

    def mark_undone(self, report: UndoReport) -> None:
        """Show that this turn was undone (by this row or ``%silo undo``), with what that undo did."""
        self.report, self.items = report, list(report.items)
        self.said.value = undone_html(self.turn, self.items)
        self.button.layout.display = "none"

    def snapshot(self) -> tuple[str, str]:
        if self.items is None:
            return "", ""
        return undone_html(self.turn, self.items), undone_text(self.turn, self.items)


class UndoRows:
    """The Undo rows one shell shows, by (session id, turn) — weakly: a closed row is not kept."""

    def __init__(self) -> None:
        self._rows: weakref.WeakValueDictionary[tuple[str, int], UndoTurnRow] = weakref.WeakValueDictionary()

    def add(self, session_id: str, row: UndoTurnRow) -> None:
        self._rows[session_id, row.turn] = row

    def mark(self, session_id: str, report: UndoReport) -> None:
        """Each undone turn's row (if shown in this kernel) says so."""
        for turn in report.turns:
            row = self._rows.get((session_id, turn))
            if row is not None:
                row.mark_undone(report)


def _log_failure(task: asyncio.Task[UndoReport | None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("the undo failed", exc_info=task.exception())
