"""``StaleBadge``: under a finished turn that read variables or cells, hidden until one of them changes;
then a **stale** badge ("df changed since this answer") and **Re-ask**.

- Shown (hidden) by ``%%prompt`` once the turn's static transcript is in place, only when the turn read
  something the kernel watches (``kernel_tools.StaleAnswers``); :meth:`mark_stale` (the check after each
  user cell) shows it, saying what changed.
- **Re-ask** (:meth:`reask`, its Python twin) hands the badge to ``reask``: the same prompt, sent on a fork
  of the session where the agent forks (else in the same session, and it says so), its transcript shown in
  the badge's :attr:`output`. Once: a second click does nothing; the button goes when it is done.
- Its snapshot (saved notebooks, nbconvert): nothing while the answer is fresh; the badge's words once
  stale, and what the re-ask said.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from silo_nb.notebook.render import styles
from silo_nb.notebook.widgets._common import ipw, log
from silo_nb.notebook.widgets.snapshot import SnapshotMixin

__all__ = ["StaleBadge"]

# Re-ask this badge's turn: says in one line where it went (the turn's transcript goes to badge.output).
Reask = Callable[["StaleBadge"], Awaitable[str]]

_BADGE = styles.pill_style(styles.AMBER)


class StaleBadge(SnapshotMixin, ipw.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    def __init__(self, turn: int, *, reask: Reask, forks: bool) -> None:
        self.turn, self.forks, self._reask = turn, forks, reask
        self.changed: tuple[str, ...] = ()
        self.reasked: str | None = None  # what the re-ask said, once it ran
        self._task: asyncio.Task[str] | None = None
        where = "on a fork of this session" if forks else "in this session (this agent does not fork)"
        self.badge: Any = ipw.HTML(value="")
        self.button: Any = ipw.Button(
            description="Re-ask",
            icon="refresh",
            tooltip=f"Send the same prompt again {where}, to answer from what the kernel holds now",
            layout=ipw.Layout(width="auto"),
        )
        self.button.on_click(lambda _button: self.click())
        self.said: Any = ipw.HTML(value="")
        self.output: Any = ipw.Output()
        row = ipw.HBox(children=[self.badge, self.button], layout=ipw.Layout(align_items="center"))
        super().__init__(
            children=[row, self.said, self.output],
            layout=ipw.Layout(align_items="flex-start", display="none"),
        )

    @property
    def text(self) -> str:
        """``df changed since this answer`` ("" while fresh)."""
        return f"{', '.join(self.changed)} since this answer" if self.changed else ""

    def mark_stale(self, changed: Sequence[str]) -> None:
        """What the turn read changed: show the badge, saying what."""
        self.changed = tuple(changed)
        self.badge.value = (
            f'<span style="{_BADGE}">stale</span> '
            f'<span style="{styles.SMALL};{styles.WARNING_TEXT}">{html.escape(self.text)}</span>'
        )
        self.layout.display = "flex"

    def click(self) -> None:
        """The button: start :meth:`reask` on the kernel's loop (once)."""
        if self._task is None and self.reasked is None:
            self.button.disabled = True
            self._task = asyncio.get_running_loop().create_task(self.reask())
            self._task.add_done_callback(_log_failure)

    async def reask(self) -> str:
        """Send the same prompt again (see the module docstring); the second time, what the first said."""
        if self.reasked is None:
            self.button.disabled = True
            try:
                said = await self._reask(self)
            except Exception as exc:
                said = f"Re-ask failed: {exc}"
            self.reasked = said
            self.said.value = f'<div style="{styles.SMALL};{styles.FAINT_TEXT}">{html.escape(said)}</div>'
            self.button.layout.display = "none"
        return self.reasked

    def snapshot(self) -> tuple[str, str]:
        if not self.changed:
            return "", ""
        text = f"stale: {self.text}" + (f" — {self.reasked}" if self.reasked else "")
        markup = f'<span style="{_BADGE}">stale</span> {html.escape(self.text)}'
        if self.reasked:
            markup += f'<div style="{styles.SMALL};{styles.MUTED}">{html.escape(self.reasked)}</div>'
        return f'<div style="{styles.SMALL}">{markup}</div>', text


def _log_failure(task: asyncio.Task[str]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("the re-ask failed", exc_info=task.exception())
