"""Blocking cells: the input transformer that turns magics into top-level awaits, and the waker.

- On ipykernel ≥ 7.4 and 6.29–6.x (:func:`can_block`) :func:`transform` rewrites a ``%%prompt`` cell,
  and each top-level ``%silo`` line, into ``await <silo_nb.notebook.magics>.prompt_cell(...)`` /
  ``silo_line(...)``, so the cell runs until the work ends: "Run All" keeps order, widget clicks still
  arrive (7.4 dispatches comm messages while an async cell awaits; on 6.x ``comm_pump`` hands them to the
  cell) and the stop button cancels the turn.
- The emitted code imports the package by name (``__import__``), so it works whatever the user imported.
- ``%%prompt --bg`` cells, indented lines and other cell magics are left to IPython (the registered,
  non-blocking magics).
- While a cell blocks, :func:`waker` ticks every 0.2 s, or the interrupt is not delivered (ipykernel #881).
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from typing import Any

from silo_nb.notebook.magics.comm_pump import kernel_mode

__all__ = ["WAKER_INTERVAL_SECONDS", "can_block", "transform", "waker"]

WAKER_INTERVAL_SECONDS = 0.2
_MODULE = "__import__('silo_nb.notebook.magics', fromlist=['_'])"


def can_block(shell: Any) -> bool:
    """A cell can await silo_nb's work and still get clicks: on ipykernel ≥ 7.4 by itself, on 6.29–6.x with
    ``comm_pump``; a plain IPython shell can always await."""
    if getattr(shell, "kernel", None) is None:
        return True
    return kernel_mode(shell) != "background" and bool(getattr(shell, "autoawait", False))


def _follows(text: str, word: str) -> bool:
    """``text`` starts with the magic ``word`` as a whole word (``%silo?`` is help, not the magic)."""
    return text.startswith(word) and text[len(word) :][:1] in ("", " ", "\t", "\n")


def transform(lines: list[str]) -> list[str]:
    """Rewrite ``%%prompt`` cells and top-level ``%silo`` lines into awaits (see the module docstring)."""
    if not lines:
        return lines
    first = lines[0]
    if _follows(first, "%%prompt"):
        argline = first[len("%%prompt") :].strip()
        with contextlib.suppress(ValueError):
            if "--bg" in shlex.split(argline):
                return lines
        body = "".join(lines[1:])
        return [f"await {_MODULE}.prompt_cell({argline!r}, {body!r})\n"]
    if first.startswith("%%"):
        return lines
    out: list[str] = []
    for line in lines:
        if _follows(line, "%silo"):
            out.append(f"await {_MODULE}.silo_line({line[len('%silo') :].strip()!r})\n")
        else:
            out.append(line)
    return out


async def waker() -> None:
    """Keep the loop turning so a SIGINT (the stop button) is noticed promptly (ipykernel #881)."""
    while True:  # noqa: ASYNC110 - the wake-ups are the point; there is nothing to wait for
        await asyncio.sleep(WAKER_INTERVAL_SECONDS)
