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

from typing import Any

from silo_nb.experiments import forked_cell, mark_promoted
from silo_nb.notebook.magics.connecting import connect
from silo_nb.notebook.magics.connections import Connection, NotebookSession
from silo_nb.sessions import AgentSessionHandle

__all__ = ["promote_cell"]


async def promote_cell(
    session: NotebookSession, run: Any, cell: str, *, name: str | None = None
) -> AgentSessionHandle:
    """Reconnect the connection of ``run``'s parent session (or ``name``) to ``cell``'s fork; its handle."""
    fork = forked_cell(run, cell)
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
