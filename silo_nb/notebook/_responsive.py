"""While a turn streams into a kernel, the kernel's own threads get the GIL every millisecond.

ipykernel (7.x) carries a cell's request and its reply through threads of its own (the shell channel
thread, the IOPub thread). While an agent floods the kernel's event loop with updates, that loop's thread
is always running Python, and a thread asking for the GIL gets it only after Python's switch interval
(5 ms by default); a request takes several such hand-overs, so a ``1+1`` waited 35–60 ms behind a
streaming turn. With 1 ms it waits about 20 ms (``benchmarks/kernel_latency.py``; figures in
``benchmarks/RESULTS.md``).

The interval is lowered only while at least one live turn runs, only when it is Python's default (a
value set by someone else is theirs to keep), and put back when the last turn ends.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

__all__ = ["STREAMING_SWITCH_INTERVAL", "responsive_threads"]

STREAMING_SWITCH_INTERVAL = 0.001
_PYTHON_DEFAULT = 0.005
_active = 0
_lowered = False


@contextlib.contextmanager
def responsive_threads() -> Iterator[None]:
    global _active, _lowered
    if _active == 0 and sys.getswitchinterval() == _PYTHON_DEFAULT:
        sys.setswitchinterval(STREAMING_SWITCH_INTERVAL)
        _lowered = True
    _active += 1
    try:
        yield
    finally:
        _active -= 1
        if _active == 0 and _lowered:
            _lowered = False
            if sys.getswitchinterval() == STREAMING_SWITCH_INTERVAL:  # nobody changed it meanwhile
                sys.setswitchinterval(_PYTHON_DEFAULT)
