"""The connection registry: the extension's state for one shell, and the named agent connections in it.

- A :class:`Connection` is one ``%silo connect ... --as NAME``: its profile, the handle once connected
  (or the one-line error), the connect's task (every connect runs as one), the session panel and the
  ``Output`` under it where the palette's turns are shown.
- NAME defaults to the profile id (see ``%silo connect``); commands given no NAME use the most recent
  connection (``last_name``). :meth:`NotebookSession.connection` looks a name up and says, in one
  ``UsageError`` line, what to run when there is none; :meth:`NotebookSession.handle` also waits for a
  connect still running (``--bg``, or the README's first cell, where the extension is loaded in the cell
  that connects), at most the profile's ``connect_timeout``; interrupted, it says "still connecting".
- :meth:`NotebookSession.drop` forgets a connection and disposes of its task, panel, handle and kernel
  tools server.
- Also here, because they live exactly as long as the shell's extension state: the (notebook, NAME) →
  (profile, session id) records a restarted kernel resumes from, the ``%%prompt`` run count, the digest of
  the cells run and the cells already sent (the restore-from-journal decision), the restore index of the
  journals (``journal_index``), the sessions whose own cell is blocking on them (a turn that ends there
  was witnessed; see ``AgentsService.is_witnessed``), the background turns ``silo_nb.wait()`` waits for,
  the widgets shown (whose saved snapshots are kept current) and other background tasks (a sign-in's
  reconnect).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from IPython.core.error import UsageError

from silo_nb.notebook.cell_records import ConnectionRecords, RunDigest, notebook_identity
from silo_nb.notebook.cell_turns import BackgroundTurns, Turn
from silo_nb.notebook.journal_index import JournalIndexes
from silo_nb.notebook.magics.args import did_you_mean, one_line
from silo_nb.notebook.widgets.snapshot import ShownWidgets
from silo_nb.notebook.widgets.undo_turn_row import UndoRows
from silo_nb.sessions import AgentProfile, default_agents
from silo_nb.task_set import TaskSet

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from silo_nb.kernel_tools import KernelToolServer
    from silo_nb.notebook.widgets import SessionPanel
    from silo_nb.sessions import AgentSessionHandle, AgentsService

__all__ = ["AnswerWatch", "Connection", "NotebookSession"]

# What a prompt waits for a connect of a profile no longer listed (its profile file changed meanwhile).
_FALLBACK_CONNECT_TIMEOUT: float = AgentProfile.model_fields["connect_timeout"].default


class AnswerWatch(Protocol):
    """A connection's watch on its answers (``stale_watch.StaleWatch``): a finished turn's badge, and its
    end with the connection."""

    def offer_badge(self, turn: Turn, text: str, attach: Sequence[str]) -> None: ...

    def close(self) -> None: ...


@dataclass
class Connection:
    name: str
    profile_id: str
    handle: AgentSessionHandle | None = None
    task: asyncio.Task[None] | None = None
    panel: SessionPanel | None = None
    box: Any = None
    output: Any = None
    error: str | None = None
    kernel_tools: KernelToolServer | None = None  # the "notebook" MCP server offered to its agent
    kernel_tools_wanted: bool | None = None  # --no-kernel-tools: False; None: as the profile says
    system_prompt: str | None = None  # --system-prompt: instead of the profile's (kept on a reconnect)
    notebook_guidance: bool = True  # --no-notebook-guidance: False (sent only with the kernel tools)
    stale: AnswerWatch | None = None  # what its turns read, and their stale badges (stale_watch.py)


class NotebookSession:
    """The extension's state for one shell: connections by name, and the cell ↔ turn bookkeeping."""

    def __init__(self, shell: InteractiveShell, service: AgentsService | None = None) -> None:
        self.shell = shell
        self.service: AgentsService = service or default_agents()
        self.connections: dict[str, Connection] = {}
        self.last_name: str | None = None
        self.prompt_runs = 0
        self.sent_cells: set[str] = set()
        self.run_digest = RunDigest()  # the cells run so far: a headless turn's key (cell_records)
        self.blocking_sessions: set[str] = set()
        self.background = BackgroundTurns()
        self.shown = ShownWidgets()
        self.undo_rows = UndoRows()  # each finished turn's Undo row, for %silo undo to mark
        self.journal_index = JournalIndexes()
        self.tasks = TaskSet()
        self.records = ConnectionRecords(
            self.service.data_dir, self.service.workspace_id, notebook_identity(self.service.workspace_folder)
        )
        # A turn is witnessed when its own cell is the one running (a blocking %%prompt).
        self.service.is_witnessed = lambda session_id: session_id in self.blocking_sessions

    def add(self, connection: Connection) -> str | None:
        """Register a new connection under its name; it becomes the default one. Returns the previous
        default, for :meth:`forget_failed`."""
        previous = self.last_name
        self.connections[connection.name] = connection
        self.last_name = connection.name
        return previous

    def forget_failed(self, connection: Connection, previous: str | None) -> None:
        """A connect that failed leaves nothing behind: not its name, not the default it took."""
        if self.connections.get(connection.name) is connection:
            del self.connections[connection.name]
        if self.last_name == connection.name and connection.name not in self.connections:
            self.last_name = previous if previous in self.connections else next(iter(self.connections), None)

    def connection(self, name: str | None) -> Connection:
        """The connection called ``name`` (default: the most recent one), or a one-line ``UsageError``."""
        key = name or self.last_name
        if key is None:
            raise UsageError("No connection yet — run %silo connect PROFILE first (try %silo profiles).")
        connection = self.connections.get(key)
        if connection is None:
            known = ", ".join(self.connections) or "none"
            hint = did_you_mean(key, self.connections)
            if hint:  # a typo of a live name: say which, not how to connect a new one
                raise UsageError(f'No connection named "{key}"{hint} (connected: {known}).')
            raise UsageError(
                f'No connection named "{key}" — run %silo connect PROFILE --as {key} (connected: {known}).'
            )
        return connection

    async def handle(self, name: str | None) -> tuple[Connection, AgentSessionHandle]:
        """The connection and its live handle, once a connect still running has ended: waited for at most
        the profile's ``connect_timeout``; a one-line ``UsageError`` says why there is none."""
        connection = self.connection(name)
        task = connection.task
        if task is not None and not task.done():
            await self._connect_ended(connection, task)
        if connection.handle is None:
            raise UsageError(f'"{connection.name}" is not connected: {_why_not(connection)}')
        return connection, connection.handle

    async def _connect_ended(self, connection: Connection, task: asyncio.Task[None]) -> None:
        # The connect may run in no cell at all: the README's first cell loads the extension and connects,
        # so its %silo line is the registered (background) magic, and "Run All" sends the next cell at once.
        profile = self.service.profiles.get(connection.profile_id)
        timeout = profile.connect_timeout if profile is not None else _FALLBACK_CONNECT_TIMEOUT
        pending = f'"{connection.name}" is still connecting'
        again = "nothing was sent — run this cell again once its panel shows."
        try:
            # asyncio.wait, not wait_for: neither the end of the wait nor its interruption touches the
            # connect, which goes on for the cell that started it.
            await asyncio.wait({task}, timeout=timeout)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise UsageError(f"{pending}: {again}") from None  # the stop button, while waiting
        if not task.done():
            raise UsageError(f"{pending} after {timeout:g} s (its profile's connect_timeout): {again}")

    def drop(self, connection: Connection) -> None:
        """Forget a connection and dispose of what it holds (the caller may still ``aclose`` the handle)."""
        if connection.task is not None and not connection.task.done():
            connection.task.cancel()
        if connection.panel is not None:
            with contextlib.suppress(Exception):
                connection.panel.close_all()
        if connection.handle is not None:
            connection.handle.dispose()
        if connection.kernel_tools is not None:
            connection.kernel_tools.close()
        if connection.stale is not None:
            connection.stale.close()
        self.connections.pop(connection.name, None)
        if self.last_name == connection.name:
            self.last_name = next(iter(self.connections), None)


def _why_not(connection: Connection) -> str:
    """Why a connection has no handle: the connect's own error, else how its task ended."""
    if connection.error:
        return connection.error
    task = connection.task
    if task is None or not task.done():
        return "it has no session"
    if task.cancelled():
        return "its connect was cancelled"
    error = task.exception()
    return one_line(error) if error is not None else "its connect ended without a session"
