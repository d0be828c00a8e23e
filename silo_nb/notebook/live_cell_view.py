"""A grid cell's turn in the notebook: ``silo_nb.attach_cell(run, cell)`` and ``%silo attach RUN [CELL]``.

- A running cell (``experiments/live_cells.py``: its channel, on this loop or on a Dask worker of this
  machine) is shown with the widgets a live prompt cell uses (``TurnView``: the transcript, permission
  buttons, question forms, Stop), fed from the cell's journal as it is written. A click answers the
  cell; Stop cancels its turn (its row then says ``cancelled by the user``).
- A finished cell shows its finished turn, from the journal in the run's folder (not an error).
- :meth:`CellView.detach` (or the viewer going away) leaves the cell running.
"""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Any

from silo_nb.experiments import STOPPED_BY_USER, AttachedCell, LocatedCell, locate_cell
from silo_nb.notebook.live_transcript import LiveTranscript
from silo_nb.notebook.widgets import TurnView
from silo_nb.sessions import parse_lines
from silo_nb.task_set import TaskSet
from silo_nb.updates import TurnStatus

__all__ = ["CellView", "attach_cell"]


def _ended_status(status: str, error: str | None) -> TurnStatus:
    if status == "failed" and error is not None and STOPPED_BY_USER in error:
        return "cancelled"
    return "finished" if status == "finished" else "failed"


class CellView:
    """One cell's turn: :attr:`view` (a ``TurnView``) live while the cell runs, then its ending."""

    def __init__(self, located: LocatedCell, link: AttachedCell | None = None) -> None:
        self.located = located
        self.link = link
        self.transcript = LiveTranscript()
        for update in parse_lines(located.lines):
            self.transcript.apply(update)
        self.view = TurnView(
            label=f"{located.run.name} · {located.cell}",
            transcript=self.transcript,
            on_stop=link.stop if link is not None else None,
        )
        self._detached = False
        self._pump = TaskSet()
        if link is None:
            record = located.record
            error = record.get("error") if isinstance(record.get("error"), str) else None
            self.transcript.set_status(_ended_status(str(record.get("status")), error), error=error)
            return
        link.on_update = self.transcript.apply
        link.on_permission = self.view.add_permission
        link.on_question = self.view.add_question
        link.on_end = self._ended
        self._pump.add(asyncio.ensure_future(link.pump()))

    @property
    def running(self) -> bool:
        return self.view.running

    def _ended(self, status: str, error: str | None) -> None:
        if status == "detached":
            if not self._detached:  # the channel closed with no end: the cell's process went away
                self.transcript.set_status("failed", error="the cell's channel closed before it ended")
            return
        self.transcript.set_status(_ended_status(status, error), error=error)
        self.view.flush()

    async def wait(self) -> None:
        """Until the cell ends (or this view is detached)."""
        await self._pump.wait()

    def detach(self) -> None:
        """Stop watching; the cell goes on."""
        self._detached = True
        if self.link is not None:
            self.link.close()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.view._repr_mimebundle_(**kwargs)


async def attach_cell(
    run: str | os.PathLike[str], cell: str | None = None, *, folder: str | os.PathLike[str] | None = None
) -> CellView:
    """The view of ``cell`` of ``run`` (a run's name under ``folder``, ``silo-runs`` by default, or its
    folder); without ``cell``, the first running one. ``LookupError`` (one line) for what is not there."""
    located = locate_cell(run, cell, folder=folder)
    if located.state == "running" and located.host not in ("", socket.gethostname()):
        raise LookupError(
            f"Cell {located.cell!r} of {located.run.name!r} runs on {located.host}: attach works on the "
            "machine that runs the cell (a cluster of several machines runs its cells unattended)."
        )
    if located.state == "running":
        try:
            return CellView(located, await AttachedCell.connect(located))
        except OSError:  # it ended meanwhile (then it has its record), or its process is gone
            located = locate_cell(run, located.cell, folder=folder)
            if located.state == "running":
                raise LookupError(
                    f"Cell {located.cell!r} of {located.run.name!r} has a link but its process is gone "
                    "(killed?) — run_grid again resumes it."
                ) from None
    return CellView(located)
