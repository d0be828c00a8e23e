"""``silo_nb.promote(run, cell)``: a ``fork_grid`` cell's fork becomes the notebook's session.

- The connection that drives the run's parent session (or the one named) is reconnected to the fork:
  ``%silo connect NAME --resume FORK`` in effect. The old agent is let go, the fork is resumed in a new one,
  and the connection's record (notebook, NAME) → fork is what ``%silo connect NAME`` resumes after a
  restart.
- The journal is not copied: the fork's own journal, already in this kernel's data folder, is the
  session's from now on. It began as a copy of the parent's journal (``handle.fork``) and holds the
  cell's turns, so a restore shows the parent's turns and then the fork's — and there is one file to
  keep, not two that could disagree. (The run's folder keeps its own copy, which the run's report reads.)
- Refused in one line: a cell that did not finish, a run that is not a fork grid, a connection with a
  turn running, a second promote of the same run (another cell would silently drop the promoted
  conversation), and a run whose parent no connection of this notebook drives (name one with ``name=``).
"""

from __future__ import annotations

import argparse
from typing import Any

from IPython.core.error import UsageError

from silo_nb.experiments import DEFAULT_RUNS_FOLDER, find_run, forked_cell, mark_promoted
from silo_nb.notebook.magics.args import argument, magic_arguments
from silo_nb.notebook.magics.connecting import connect
from silo_nb.notebook.magics.connections import Connection, NotebookSession
from silo_nb.sessions import AgentSessionHandle

__all__ = ["promote_cell", "promote_command"]


@magic_arguments("silo promote")
@argument("run", metavar="RUN", help="a fork_grid run's name in the folder, or its folder")
@argument("cell", metavar="CELL", help="the cell whose fork becomes the session, e.g. p0-demo-c1-r0")
@argument("--as", dest="name", metavar="NAME", help="the connection to reconnect (default: the forked one's)")
@argument("--folder", default=DEFAULT_RUNS_FOLDER, metavar="DIR", help="where the runs are (silo-runs)")
async def promote_command(session: NotebookSession, args: argparse.Namespace) -> None:
    """Make a fork_grid cell's fork this notebook's session: the connection of the forked session goes on
    from the fork's turns, and %silo connect resumes it after a restart.
    """
    try:
        await promote_cell(session, find_run(args.run, args.folder), args.cell, name=args.name)
    except ValueError as exc:
        raise UsageError(f"%silo promote: {exc}") from None


async def promote_cell(
    session: NotebookSession, run: Any, cell: str, *, name: str | None = None
) -> AgentSessionHandle:
    """Reconnect the connection of ``run``'s parent session (or ``name``) to ``cell``'s fork; its handle."""
    fork = forked_cell(run, cell)
    if fork.promoted == cell:
        # Run All again (after a restart, ``%silo connect`` resumed the promoted fork): nothing to do.
        for connection in session.connections.values():
            handle = connection.handle if name in (None, connection.name) else None
            if handle is not None and handle.session_id == fork.session_id:
                return handle
    if fork.promoted is not None:
        raise ValueError(
            f"The run {fork.run.name!r} was promoted already (cell {fork.promoted!r}) — run fork_grid again "
            "from the promoted session to compare further."
        )
    connection = _connection(session, name, fork.parent_session_id)
    handle = connection.handle
    if handle is not None and handle.turn_running:
        raise ValueError(f"{handle.label} has a turn running — await it (or cancel it), then promote.")
    await connect(session, connection.name, fork.profile, resume_id=fork.session_id)
    promoted = session.connections[connection.name].handle
    assert promoted is not None  # connect raised otherwise
    mark_promoted(fork)
    return promoted


def _connection(session: NotebookSession, name: str | None, parent: str) -> Connection:
    if name is not None:
        if name not in session.connections:
            raise ValueError(f'No connection named "{name}" — %silo connect it first, then promote.')
        return session.connections[name]
    for connection in session.connections.values():
        if connection.handle is not None and connection.handle.session_id == parent:
            return connection
    raise ValueError(
        f"No connection of this notebook drives session {parent} (the run's parent) — connect it, or name "
        "the connection: promote(run, cell, name=...)."
    )
