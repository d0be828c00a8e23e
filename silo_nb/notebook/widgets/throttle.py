"""Loop timers that pace widget messages: ``Throttle`` (coalesce bursts) and ``Ticker`` (a slow clock).

- A fast agent streams many chunks per second; every trait change is one comm message to the browser.
  ``Throttle.poke()`` marks "something changed" and schedules one callback with the running asyncio
  loop's ``call_later``; pokes that arrive before it fires are absorbed. Runs are at least ``interval``
  seconds apart, so a burst of N chunks costs at most ``1 / interval`` renders per second, and the first
  poke after a quiet spell renders on the next loop iteration (no needless delay for a slow stream).
- ``flush()`` runs a pending callback now (the end of a turn, a test); ``cancel()`` drops it.
- ``Ticker`` calls back every ``interval`` seconds while started (elapsed-time badges). Both only use
  the kernel's own loop: no threads and no sleeping, so nothing ever blocks the loop.
- Without a running loop (plain scripts, synchronous tests) there is nothing to schedule on: ``poke()``
  calls back at once and ``Ticker.start()`` does nothing.
- Callback errors are logged to ``silo_nb.notebook`` and never propagate into the loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

__all__ = ["Throttle", "Ticker"]

log = logging.getLogger("silo_nb.notebook")


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _call(callback: Callable[[], None], what: str) -> None:
    try:
        callback()
    except Exception:
        log.exception("a %s callback raised", what)


class Throttle:
    """Run ``callback`` at most once per ``interval`` seconds, however often :meth:`poke` is called."""

    def __init__(self, interval: float, callback: Callable[[], None]) -> None:
        if interval < 0:
            raise ValueError(f"interval must be >= 0, got {interval}")
        self.interval = interval
        self._callback = callback
        self._handle: asyncio.Handle | None = None
        self._pending = False
        self._last_run: float | None = None

    @property
    def pending(self) -> bool:
        """True when a poke has not been followed by a run yet."""
        return self._pending

    def poke(self) -> None:
        """Something changed: run the callback soon, once for all pokes until then."""
        self._pending = True
        if self._handle is not None:
            return
        loop = _running_loop()
        if loop is None:
            self._run()
            return
        now = time.monotonic()
        delay = 0.0 if self._last_run is None else self._last_run + self.interval - now
        self._handle = loop.call_later(delay, self._fire) if delay > 0 else loop.call_soon(self._fire)

    def flush(self) -> None:
        """Run the callback now if a poke is pending (and drop the scheduled run)."""
        if self._pending:
            self._run()

    def cancel(self) -> None:
        """Forget any pending run."""
        self._pending = False
        self._drop_timer()

    def _fire(self) -> None:
        self._handle = None
        if self._pending:
            self._run()

    def _run(self) -> None:
        self._drop_timer()
        self._pending = False
        self._last_run = time.monotonic()
        _call(self._callback, "throttled")

    def _drop_timer(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class Ticker:
    """Call ``callback`` every ``interval`` seconds on the running loop, between start() and stop()."""

    def __init__(self, interval: float, callback: Callable[[], None]) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be > 0, got {interval}")
        self.interval = interval
        self._callback = callback
        self._handle: asyncio.TimerHandle | None = None

    @property
    def running(self) -> bool:
        return self._handle is not None

    def start(self) -> None:
        """Start ticking (idempotent). Does nothing without a running loop."""
        if self._handle is not None:
            return
        loop = _running_loop()
        if loop is not None:
            self._handle = loop.call_later(self.interval, self._tick)

    def stop(self) -> None:
        """Stop ticking (idempotent)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _tick(self) -> None:
        loop = _running_loop()
        self._handle = loop.call_later(self.interval, self._tick) if loop is not None else None
        _call(self._callback, "ticker")
