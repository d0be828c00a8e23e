"""What a session reports to and what ``connect`` needs, as protocols: this breaks the
``agents ↔ service ↔ handle`` loop.

- :class:`SessionRegistry` is the status side (``status_board.StatusBoard`` implements it): turns,
  permissions, titles, and the entries themselves.
- :class:`ConnectHost` is what ``connect`` needs of the service: profiles, the workspace, the transport
  factory, and the status board.
The session's modules import these protocols only; nothing in ``session/`` imports the services.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from silo_nb.model import (
    AgentInfo,
)
from silo_nb.sessions.profiles import AgentProfile, AgentProfilesService
from silo_nb.sessions.status import TurnOutcome

if TYPE_CHECKING:
    from silo_nb.acp import Sandbox, Transport

__all__ = ["ConnectHost", "SessionRegistry", "TransportFactory"]

# ``(profile, cwd) -> transport``: how an ``AgentsService`` reaches its agents when it is not by spawning
# the profile's command (tests run agents in-process this way).
TransportFactory = Callable[[AgentProfile, str], Awaitable["Transport"]]


class SessionRegistry(Protocol):
    """The status entries of a service's sessions, as the sessions change them."""

    def get(self, entry_id: str) -> AgentInfo | None: ...

    def handle(self, entry_id: str) -> Any: ...

    def register(self, info: AgentInfo, *, handle: Any = None) -> None: ...

    def unregister(self, entry_id: str) -> None: ...

    def patch(self, entry_id: str, /, **fields: Any) -> None: ...

    def begin_turn(self, entry_id: str) -> None: ...

    def end_turn(self, entry_id: str, outcome: TurnOutcome) -> None: ...

    def blocked(self, entry_id: str) -> None: ...

    def unblocked(self, entry_id: str) -> None: ...

    def resumed_in_place(self, entry_id: str, session_id: str) -> None: ...


class ConnectHost(Protocol):
    """What ``connect`` needs of its ``AgentsService``."""

    profiles: AgentProfilesService
    workspace_id: str
    workspace_folder: Path
    transport_factory: TransportFactory | None
    sandbox: Sandbox | None

    @property
    def board(self) -> SessionRegistry: ...
