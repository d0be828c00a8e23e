"""While a turn streams into a kernel, the kernel's own threads get the GIL every millisecond.

ipykernel (7.x) carries a cell's request and its reply through threads of its own (the shell channel
thread, the IOPub thread). While an agent floods the kernel's event loop with updates, that loop's thread
is always running Python, and a thread asking for the GIL gets it only after Python's switch interval
(5 ms by default); a request takes several such hand-overs, so a ``1+1`` waited 35–60 ms behind a
streaming turn. With 1 ms it waits about 20 ms (``benchmarks/kernel_latency.py``; figures in
``benchmarks/RESULTS.md``).

The interval is lowered only while at least one live turn runs, only when it is Python's default (a
value set by someone else is theirs to keep), and put back when the last turn ends. Not at all while the
``switch_interval`` switch is off (``silo_nb.tuning``): it is asked as each turn starts, so turning it
off leaves the next turns' interval alone; a turn that lowered it still puts it back.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from silo_nb.tuning import tuning

__all__ = ["STREAMING_SWITCH_INTERVAL", "responsive_threads"]

STREAMING_SWITCH_INTERVAL = 0.001
_PYTHON_DEFAULT = 0.005


class _Streaming:
    """How many live turns run, and whether they lowered the interval (so only they put it back)."""

    __slots__ = ("active", "lowered")

    def __init__(self) -> None:
        self.active = 0
        self.lowered = False

    def enter(self) -> None:
        self.active += 1
        if not self.lowered and tuning().switch_interval and sys.getswitchinterval() == _PYTHON_DEFAULT:
            sys.setswitchinterval(STREAMING_SWITCH_INTERVAL)
            self.lowered = True

    def exit(self) -> None:
        self.active -= 1
        if self.active == 0 and self.lowered:
            self.lowered = False
            if sys.getswitchinterval() == STREAMING_SWITCH_INTERVAL:  # nobody changed it meanwhile
                sys.setswitchinterval(_PYTHON_DEFAULT)


_STREAMING = _Streaming()  # one per process, as the interval is


@contextlib.contextmanager
def responsive_threads() -> Iterator[None]:
    _STREAMING.enter()
    try:
        yield
    finally:
        _STREAMING.exit()
