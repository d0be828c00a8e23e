"""A time bound (and the toolbar's interrupt) for the user's code a kernel tool runs on the kernel's thread.

- The tools run synchronously on the kernel's event loop, in its main thread, where the user's namespace
  lives: a ``__repr__`` that sleeps, or ``run_code`` looping forever, would hold the kernel. :func:`bounded`
  arms ``SIGALRM`` (``setitimer``) for the call: when it fires, :class:`ToolTimeout` is raised in the code
  that is running, as ``KeyboardInterrupt`` is by Ctrl-C. Python code stops at its next bytecode; a long C
  call (one NumPy operation) stops when it returns.
- ``interruptible``: while the body runs, ``SIGINT`` (Jupyter's interrupt) raises ``KeyboardInterrupt`` in
  it instead of ipykernel's handler for a running async cell (which would cancel the whole ``%%prompt``
  turn): the tool call stops, and the turn goes on.
- Both are put back as they were afterwards. Signals can only be handled in the main thread: elsewhere (a
  test's thread, a subshell) the body runs unbounded, which :func:`bounded` reports as False.
- Timing is the kernel's, never asserted in tests: benchmarks measure it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["ToolTimeout", "bounded"]


class ToolTimeout(BaseException):
    """The time bound of a tool call ran out (a BaseException, so ``except Exception`` lets it through)."""


def _raise_timeout(_signum: int, _frame: FrameType | None) -> None:
    raise ToolTimeout


@contextmanager
def bounded(seconds: float, *, interruptible: bool = False) -> Iterator[bool]:
    """Run the body at most ``seconds`` (``ToolTimeout``), and with ``interruptible`` let SIGINT raise
    ``KeyboardInterrupt`` in it. Yields whether the bound is armed (only in the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    previous_alarm = signal.signal(signal.SIGALRM, _raise_timeout)
    previous_timer = signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler) if interruptible else None
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)
        signal.signal(signal.SIGALRM, previous_alarm)
        if previous_timer[0] > 0:  # someone else's timer was running: give it back what was left
            signal.setitimer(signal.ITIMER_REAL, *previous_timer)
