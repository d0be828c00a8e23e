"""Work counted, not timed (issue 21: tests never assert wall-clock figures): the Python and C calls a
function makes (``sys.setprofile``), the same on a loaded machine as on an idle one. Linearity is
checked by comparing the calls for an input and for four times that input (quadratic work would be
sixteen times as much); a bounded path by a fixed number of calls. The speed itself is measured in
``benchmarks/``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any


def calls(function: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """How many Python and C function calls ``function(*args, **kwargs)`` made."""
    count = 0

    def profile(_frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        function(*args, **kwargs)
    finally:
        sys.setprofile(previous)
    return count


def growth(function: Callable[[int], Any], size: int) -> float:
    """``calls`` at ``4 * size`` over ``calls`` at ``size`` (about 4 when the work is linear)."""
    return calls(function, 4 * size) / max(calls(function, size), 1)
