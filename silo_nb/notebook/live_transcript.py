"""``LiveTranscript``: a transcript that grows while a turn runs — the reducer's builder plus watchers.

- A ``Turn`` (``cell_turns.py``) owns one and feeds it from ``handle.on_transcript``; views (``TurnView``)
  only watch it and display ``state``. Nothing else changes it, so what the view shows, what the static
  bundle saves and what a restore repaints all come from the same folds.
- ``apply`` folds one update in place (:class:`~silo_nb.updates.transcript.TranscriptBuilder`, O(1)
  amortised); ``state`` is a frozen snapshot built when a view asks (once per render tick), and
  :meth:`changes_since` says which entries changed, so a view re-renders only those.
- ``set_status`` ends (or re-marks) the turn. Watchers are called after every change, synchronously; a
  watcher that raises is logged and the rest still run.
"""

from __future__ import annotations

from collections.abc import Callable

from silo_nb.model import (
    AgentSessionUpdate,
)
from silo_nb.updates import (
    TranscriptBuilder,
    TranscriptState,
    TurnStatus,
)
from silo_nb.util import Disposable, ListenerSet

__all__ = ["LiveTranscript"]


class LiveTranscript:
    def __init__(self, state: TranscriptState | None = None) -> None:
        self._builder = TranscriptBuilder(state)
        self._watchers: ListenerSet[[]] = ListenerSet("transcript watcher")

    @property
    def state(self) -> TranscriptState:
        return self._builder.state

    @property
    def status(self) -> TurnStatus:
        """``state.status``, without building a snapshot (asked on every update)."""
        return self._builder.status

    @property
    def change_cursor(self) -> int:
        """A position in the change log, for :meth:`changes_since`."""
        return self._builder.change_cursor

    def changes_since(self, cursor: int) -> set[int] | None:
        """Indices of entries changed or added since ``cursor``; None: too long ago, compare them all."""
        return self._builder.changes_since(cursor)

    def watch(self, watcher: Callable[[], None]) -> Disposable:
        """Call ``watcher()`` after every change of :attr:`state`."""
        return self._watchers.add(watcher)

    def apply(self, update: AgentSessionUpdate) -> None:
        """Fold one update (an agent update or a synthesized line, as journaled)."""
        if self._builder.apply(update):
            self._watchers.emit()

    def set_status(
        self, status: TurnStatus, *, stop_reason: str | None = None, error: str | None = None
    ) -> None:
        self._builder.set_status(status, stop_reason=stop_reason, error=error)
        self._watchers.emit()
