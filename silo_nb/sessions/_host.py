"""What a session handle reports to, as protocols: this breaks the ``agents ↔ service ↔ handle`` loop.

- ``SessionRegistry`` is the status side (``AgentsService`` implements it): turns, permissions, titles.
- ``ConnectHost`` is what ``connect`` needs of the service: profiles, the workspace, the transport
  factory, and registering entries.
- ``JournalHost`` is the journal side (``AgentSessionsService`` implements it): a handle hands its
  writer back when it closes.
The handle imports these protocols only; nothing in ``handle.py`` imports the services.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from silo_nb.sessions.journal import JournalWriter
from silo_nb.sessions.models import AgentInfo
from silo_nb.sessions.profiles import AgentProfile, AgentProfilesService
from silo_nb.sessions.status import TurnOutcome

if TYPE_CHECKING:
    from silo_nb.acp import Transport

__all__ = ["ConnectHost", "JournalHost", "SessionRegistry", "TransportFactory"]

# ``(profile, cwd) -> transport``: how an ``AgentsService`` reaches its agents when it is not by spawning
# the profile's command (tests run agents in-process this way).
TransportFactory = Callable[[AgentProfile, str], Awaitable["Transport"]]


class SessionRegistry(Protocol):
    def get(self, session_id: str) -> AgentInfo | None: ...

    def _begin_turn(self, session_id: str) -> None: ...

    def _end_turn(self, session_id: str, outcome: TurnOutcome) -> None: ...

    def _blocked(self, session_id: str) -> None: ...

    def _unblocked(self, session_id: str) -> None: ...

    def _patch(self, entry_id: str, /, **fields: Any) -> None: ...

    def _unregister(self, session_id: str) -> None: ...


class JournalHost(Protocol):
    def _release_writer(self, writer: JournalWriter) -> None: ...


class ConnectHost(SessionRegistry, Protocol):
    profiles: AgentProfilesService
    workspace_id: str
    workspace_folder: Path
    transport_factory: TransportFactory | None

    def _register(self, info: AgentInfo, *, handle: Any = None) -> None: ...

    def _resumed_in_place(self, entry_id: str, session_id: str) -> None: ...
