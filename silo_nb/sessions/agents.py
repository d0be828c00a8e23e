"""``AgentsService``: the status of every chat session (Silo's ``ctx.agents``), plus its two services.

- One entry per session, kept by :attr:`AgentsService.board` (``status_board.py``): ``get_state`` returns
  the cached snapshot; ``subscribe`` listeners get the whole list, only when some entry changed (compared
  by identity), never on subscribe. Sessions report turns and permissions to the board.
- "Witnessed" (Silo: the session's surface is the active tab) is a hook: ``is_witnessed(id)``. Scripts
  have no surface, so by default nothing is witnessed and a finished turn raises attention; the notebook
  front end sets the hook to "the turn's cell is the one running".
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from silo_nb.model import (
    AgentInfo,
)
from silo_nb.sessions.dormant_sessions import JournalSummaries
from silo_nb.sessions.journal import JournalFiles
from silo_nb.sessions.profiles import AgentProfilesService
from silo_nb.sessions.service import AgentSessionsService
from silo_nb.sessions.status_board import StateListener, StatusBoard
from silo_nb.sessions.storage import data_dir as default_data_dir
from silo_nb.sessions.storage import workspace_folder, workspace_id_for
from silo_nb.util import Disposable

if TYPE_CHECKING:
    from silo_nb.acp import Sandbox
    from silo_nb.sessions.host import TransportFactory

__all__ = ["AgentsService"]

log = logging.getLogger("silo_nb.agents")


class AgentsService:
    """Status of the chat sessions of one workspace (and, on request, of all)."""

    def __init__(
        self,
        *,
        workspace_dir: str | os.PathLike[str] | None = None,
        config_dirs: Iterable[str | os.PathLike[str]] | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        transport_factory: TransportFactory | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.workspace_folder = (
            Path(workspace_dir).expanduser().resolve() if workspace_dir else workspace_folder()
        )
        self.workspace_id = workspace_id_for(self.workspace_folder)
        self.data_dir = Path(data_dir).expanduser() if data_dir else default_data_dir()
        self.profiles = AgentProfilesService(config_dirs)
        # How agents are reached: None spawns each profile's command; tests pass in-process agents.
        self.transport_factory = transport_factory
        # Each spawned agent and its terminals run in it, seeing their session's folders (a grid cell's).
        self.sandbox = sandbox
        self.is_witnessed: Callable[[str], bool] = lambda _id: False
        # The hook is looked up at each call: the notebook replaces it after the service is made.
        self._board = StatusBoard(self.workspace_id, lambda entry_id: self.is_witnessed(entry_id))  # noqa: PLW0108
        self.sessions = AgentSessionsService(self, JournalFiles(self.data_dir))
        self.journal_summaries = JournalSummaries()  # what the agents list read of each journal

    @property
    def board(self) -> StatusBoard:
        """The sessions' status entries, as the sessions report to them (``status_board.py``)."""
        return self._board

    # -- reads ------------------------------------------------------------------------------------

    def get_state(self, *, all_workspaces: bool = False) -> list[AgentInfo]:
        """The sessions of this workspace (or of all), in registration order."""
        return self._board.get_state(all_workspaces=all_workspaces)

    def get(self, session_id: str) -> AgentInfo | None:
        return self._board.get(session_id)

    def subscribe(self, listener: StateListener, *, all_workspaces: bool = False) -> Disposable:
        """Call ``listener(state)`` whenever the list changes. No initial call."""
        return self._board.subscribe(listener, all_workspaces=all_workspaces)

    # -- controls ---------------------------------------------------------------------------------

    def acknowledge(self, session_id: str) -> None:
        """Clear ``needs_attention`` (activity and ``idle_since`` are untouched)."""
        self._board.acknowledge(session_id)

    def reveal(self, session_id: str) -> None:
        """Call the ``reveal`` callback the session was connected with, if any. Unknown ids: nothing."""
        self._board.reveal(session_id)

    async def resume(self, session_id: str) -> None:
        """In-place resume of a live session that can resume; failures are logged, state unchanged."""
        info, handle = self._board.get(session_id), self._board.handle(session_id)
        if info is None or handle is None or not info.can_resume:
            return
        try:
            await self.sessions.resume_in_place(handle)
        except Exception as exc:
            log.warning("could not resume %s: %s", session_id, exc)

    async def aclose(self) -> None:
        """Disconnect every live session of this service and let go of its journals' locks."""
        for info in self._board.get_state(all_workspaces=True):
            handle = self._board.handle(info.id)
            if handle is not None:
                await handle.aclose()
        self.sessions.journals.close()
