"""Progress of a run: counts (done / running / failed / skipped, elapsed) and the terminal's text bar.

- ``run_grid`` reports to a :class:`GridProgress` (``started``, ``changed``, ``finished``); the counts
  are a frozen :class:`GridCounts`. This module never imports IPython or ipywidgets: the notebook's
  widget (``notebook/widgets/grid_progress.py``) implements the same protocol, and ``silo_nb.run_grid``
  picks it inside a kernel.
- :class:`TextProgress` draws one line: in place (``\\r``) on a terminal, else one line per finished
  cell, so a log stays readable.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Protocol, TextIO

__all__ = ["GridCounts", "GridProgress", "TextProgress", "format_counts"]


@dataclass(frozen=True)
class GridCounts:
    name: str
    total: int
    done: int = 0  # finished or failed, this time or before (skipped)
    running: int = 0
    failed: int = 0
    skipped: int = 0  # done in an earlier attempt of the run
    elapsed: float = 0.0
    executor: str = ""  # the executor's label: where the cells of this attempt run
    not_run: int = 0  # kept from starting by the grid's budget (counted in done)
    running_cells: tuple[str, ...] = ()  # the ids of the cells running now (each can be attached to)
    folder: str = ""  # the run's folder


class GridProgress(Protocol):
    def started(self, counts: GridCounts) -> None: ...
    def changed(self, counts: GridCounts) -> None: ...
    def finished(self, counts: GridCounts) -> None: ...


def format_counts(counts: GridCounts) -> str:
    minutes, seconds = divmod(int(counts.elapsed), 60)
    parts = [f"{counts.done}/{counts.total} done", f"{counts.running} running", f"{counts.failed} failed"]
    if counts.skipped:
        parts.append(f"{counts.skipped} from before")
    if counts.not_run:
        parts.append(f"{counts.not_run} not run (budget spent)")
    where = f" on {counts.executor}" if counts.executor else ""
    return f"{counts.name}{where}: " + " · ".join(parts) + f" · {minutes}:{seconds:02d} elapsed"


class TextProgress:
    """A one-line text bar on ``stream`` (stderr by default)."""

    def __init__(self, stream: TextIO | None = None, width: int = 24) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self._last_done = -1

    def _bar(self, counts: GridCounts) -> str:
        filled = round(self.width * counts.done / counts.total) if counts.total else self.width
        return "[" + "#" * filled + "." * (self.width - filled) + "] " + format_counts(counts)

    def _write(self, counts: GridCounts, *, final: bool = False) -> None:
        tty = getattr(self.stream, "isatty", lambda: False)()
        if tty:
            self.stream.write("\r" + self._bar(counts) + ("\n" if final else ""))
        elif final or counts.done != self._last_done:
            self.stream.write(self._bar(counts) + "\n")
        self._last_done = counts.done
        self.stream.flush()

    def started(self, counts: GridCounts) -> None:
        self._write(counts)

    def changed(self, counts: GridCounts) -> None:
        self._write(counts)

    def finished(self, counts: GridCounts) -> None:
        self._write(counts, final=True)
