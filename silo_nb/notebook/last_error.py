"""The last error of this kernel as text, for ``%%prompt --error`` ("fix this").

IPython keeps the exception it last showed in ``sys.last_type`` / ``last_value`` / ``last_traceback``
(``InteractiveShell.showtraceback``). It is formatted as Python formats a traceback, without colours and
without IPython's and ipykernel's own frames above the cell (the agent needs the cell's code, not the
kernel's), a cell named as IPython names it (``Cell In[5]``) rather than by its temporary file.
"""

from __future__ import annotations

import sys
import traceback

__all__ = ["last_traceback"]

_KERNEL_FRAMES = ("/IPython/", "/ipykernel/", "/asyncio/")


def _named(frame: traceback.FrameSummary) -> traceback.FrameSummary:
    """A cell's frame named as IPython names it (``Cell In[5]``), not by its temporary file."""
    from IPython import get_ipython

    shell = get_ipython()
    name = shell.compile.format_code_name(frame.filename) if shell is not None else None
    if not name:
        return frame
    return traceback.FrameSummary(" ".join(name), frame.lineno, frame.name, line=frame.line)


def last_traceback() -> str | None:
    """The last traceback the kernel showed, as text; None when there was none."""
    value = getattr(sys, "last_value", None)
    if not isinstance(value, BaseException):
        return None
    frames = list(traceback.extract_tb(value.__traceback__))
    while frames and any(part in frames[0].filename for part in _KERNEL_FRAMES):
        frames = frames[1:]
    frames = [_named(frame) for frame in frames]
    lines = ["Traceback (most recent call last):\n", *traceback.StackSummary.from_list(frames).format()]
    lines = lines if frames else []
    lines += traceback.format_exception_only(type(value), value)
    return "".join(lines).rstrip("\n")
