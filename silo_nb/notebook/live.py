"""``LiveTranscript``: a transcript that grows while a turn runs — the reducer's state plus watchers.

- A ``Turn`` (``turns.py``) owns one and feeds it from ``handle.on_transcript``; views (``TurnView``)
  only watch it and display ``state``. Nothing else changes it, so what the view shows, what the static
  bundle saves and what a restore repaints all come from the same folds.
- ``apply`` folds one update; ``set_status`` ends (or re-marks) the turn. Watchers are called after
  every change, synchronously; a watcher that raises is logged and the rest still run.
"""

from __future__ import annotations

from collections.abc import Callable

from silo_nb.notebook.transcript import TranscriptState, TurnStatus, fold, with_status
from silo_nb.sessions.models import AgentSessionUpdate
from silo_nb.util import Disposable, ListenerSet

__all__ = ["LiveTranscript"]


class LiveTranscript:
    def __init__(self, state: TranscriptState | None = None) -> None:
        self._state = state or TranscriptState()
        self._watchers: ListenerSet[[]] = ListenerSet("transcript watcher")

    @property
    def state(self) -> TranscriptState:
        return self._state

    def watch(self, watcher: Callable[[], None]) -> Disposable:
        """Call ``watcher()`` after every change of :attr:`state`."""
        return self._watchers.add(watcher)

    def apply(self, update: AgentSessionUpdate) -> None:
        """Fold one update (an agent update or a synthesized line, as journaled)."""
        new = fold(self._state, update)
        if new is not self._state:
            self._state = new
            self._watchers.emit()

    def set_status(
        self, status: TurnStatus, *, stop_reason: str | None = None, error: str | None = None
    ) -> None:
        self._state = with_status(self._state, status, stop_reason=stop_reason, error=error)
        self._watchers.emit()
