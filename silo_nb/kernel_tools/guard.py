"""A time bound (and the toolbar's interrupt) for the user's code a kernel tool runs on the kernel's thread.

- The tools run synchronously on the kernel's event loop, in its main thread, where the user's namespace
  lives: a ``__repr__`` that sleeps, or ``run_code`` looping forever, would hold the kernel.
  :func:`bounded_call` arms ``SIGALRM`` (``setitimer``) for the call: when it fires, :class:`ToolTimeout`
  is raised in the code that is running, as ``KeyboardInterrupt`` is by Ctrl-C. Python code stops at its
  next bytecode; a long C call (one NumPy operation) stops when it returns.
- A bound that cannot be swallowed (issue 28): code that catches ``BaseException`` and carries on would
  outlive a single ``ToolTimeout``. So the alarm fires again every :data:`STOP_AGAIN_SECONDS` until the
  call ends. The first stop is an ordinary exception (a ``finally`` that returns promptly runs to its end);
  from the second on, the alarm also sets a trace function on every frame below the call, which raises
  ``ToolTimeout`` again at the first instruction run while a ``ToolTimeout`` is being handled: inside the
  ``except`` (or ``finally``) that caught it, where raising leaves that handler. Each level of swallowing
  costs one more alarm. The trace function is set as ``pdb`` sets its own; it is there only past the
  bound, and the previous one is put back.
- What it still cannot stop: a C call that never returns to the interpreter; C code that swallows the
  exception itself (a ``__del__`` or a weakref callback, whose exceptions Python only prints); code that
  takes ``SIGALRM`` or the trace function for its own.
- ``interruptible``: while the body runs, ``SIGINT`` (Jupyter's interrupt) raises ``KeyboardInterrupt`` in
  it instead of ipykernel's handler for a running async cell (which would cancel the whole ``%%prompt``
  turn): the tool call stops, and the turn goes on.
- Both are put back as they were afterwards. Signals can only be handled in the main thread: elsewhere (a
  test's thread, a subshell) the body runs unbounded.
- Timing is the kernel's, never asserted in tests: benchmarks measure it.
"""

from __future__ import annotations

import inspect
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

__all__ = ["STOP_AGAIN_SECONDS", "ToolTimeout", "bounded_call"]

STOP_AGAIN_SECONDS = 0.5  # seconds between the stops after the first, until the code has stopped

T = TypeVar("T")
TraceFunction = Callable[[FrameType, str, Any], Any]


class ToolTimeout(BaseException):
    """The time bound of a tool call ran out (a BaseException, so ``except Exception`` lets it through)."""


class _Watch:
    """One bounded call: its frame (nothing at or above it is ever stopped), and the frames it traced."""

    def __init__(self, boundary: FrameType) -> None:
        self.boundary = boundary
        self.armed = True
        self.in_alarm = False
        self.stops = 0
        self.traced: list[tuple[FrameType, Any, bool]] = []  # (frame, its f_trace, its f_trace_opcodes)
        self.previous_trace: Any = None
        self.tracing = False

    def below(self, frame: FrameType | None) -> list[FrameType] | None:
        """The frames from ``frame`` up to the call's (excluded), if ``frame`` runs under the call."""
        chain: list[FrameType] = []
        while frame is not None:
            if frame is self.boundary:
                return chain or None
            chain.append(frame)
            frame = frame.f_back
        return None

    def on_alarm(self, _signum: int, frame: FrameType | None) -> None:
        self.in_alarm = True  # the trace function leaves this handler and what it calls alone
        try:
            chain = self.below(frame) if self.armed else None
            if chain is None:
                return  # the call is ending (the alarm landed in its own frame): nothing to stop
            self.stops += 1
            if self.stops > 1:
                self.trace(chain)
        finally:
            self.in_alarm = False
        raise ToolTimeout

    def trace(self, chain: list[FrameType]) -> None:
        for frame in chain:
            if not any(frame is seen for seen, _, _ in self.traced):
                self.traced.append((frame, frame.f_trace, frame.f_trace_opcodes))
            frame.f_trace = self.local_trace
            frame.f_trace_opcodes = True
        if not self.tracing:
            self.previous_trace, self.tracing = sys.gettrace(), True
        sys.settrace(self.global_trace)

    def global_trace(self, frame: FrameType, event: str, _arg: Any) -> TraceFunction | None:
        if not self.armed or self.in_alarm or frame.f_code is _ON_ALARM or self.below(frame) is None:
            return None
        frame.f_trace_opcodes = True
        return self.local_trace

    def local_trace(self, frame: FrameType, event: str, _arg: Any) -> TraceFunction | None:
        if not self.armed:
            frame.f_trace_opcodes = False
            return None
        # Raising here while a ToolTimeout is being handled leaves the handler that caught it.
        if event in ("opcode", "line") and not self.in_alarm and type(sys.exc_info()[1]) is ToolTimeout:
            raise ToolTimeout
        return self.local_trace

    def untrace(self) -> None:
        self.armed = False
        if self.tracing:
            sys.settrace(self.previous_trace)
        for frame, f_trace, opcodes in self.traced:
            frame.f_trace, frame.f_trace_opcodes = f_trace, opcodes
        self.traced.clear()


_ON_ALARM = _Watch.on_alarm.__code__


def bounded_call(seconds: float, body: Callable[[], T], *, interruptible: bool = False) -> T:
    """``body()``, stopped by ``ToolTimeout`` after ``seconds`` however it catches it (see the module
    docstring); with ``interruptible``, SIGINT raises ``KeyboardInterrupt`` in it."""
    boundary = inspect.currentframe()
    if boundary is None or threading.current_thread() is not threading.main_thread():
        return body()
    watch = _Watch(boundary)
    previous_alarm = signal.signal(signal.SIGALRM, watch.on_alarm)
    previous_timer = signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001), STOP_AGAIN_SECONDS)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler) if interruptible else None
    try:
        return body()
    finally:
        watch.armed = False  # first: an alarm landing from here on finds nothing to stop
        signal.setitimer(signal.ITIMER_REAL, 0)
        watch.untrace()
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)
        signal.signal(signal.SIGALRM, previous_alarm)
        if previous_timer[0] > 0:  # someone else's timer was running: give it back what was left
            signal.setitimer(signal.ITIMER_REAL, *previous_timer)
