"""What ``connect`` hands a session: its agent connection, what ``initialize`` said, the session id it
adopted and how it was restored — set by the connector (and swapped by an in-place resume), read by the
rest of the session.

One small typed object instead of a handle whose private attributes the connector writes: every change
is a method call here, so where the session's wiring changes is greppable.
"""

from __future__ import annotations

from silo_nb.acp import AgentConnection
from silo_nb.model import (
    ResumeOutcome,
)
from silo_nb.sessions.auth_status import AgentAuthStatus, parse_auth_status
from silo_nb.sessions.capabilities import AgentCapabilities

__all__ = ["SessionWiring"]


class SessionWiring:
    """The connection side of one session."""

    def __init__(self, agent_name: str) -> None:
        self.connection: AgentConnection | None = None
        self.caps = AgentCapabilities(agent_name=agent_name)
        self.session_id: str | None = None
        self.resume_outcome: ResumeOutcome = "new"
        self.auth_status: AgentAuthStatus | None = None  # what the agent last pushed of its sign-in

    def auth_status_pushed(self, params: object) -> None:
        """``_auth/status_update`` / ``auth/status_update``: kept (a malformed one is ignored)."""
        status = parse_auth_status(params)
        if status is not None:
            self.auth_status = status

    def connected(self, connection: AgentConnection) -> None:
        """The agent's transport is open (before ``initialize``)."""
        self.connection = connection

    def initialized(self, caps: AgentCapabilities) -> None:
        self.caps = caps

    def adopt(self, session_id: str, outcome: ResumeOutcome) -> None:
        """The session id the agent uses now, and how the session was opened."""
        self.session_id = session_id
        self.resume_outcome = outcome

    def swap(self, connection: AgentConnection | None) -> AgentConnection | None:
        """Put ``connection`` in place (an in-place resume, or putting the old one back); the one it
        replaced is returned."""
        old, self.connection = self.connection, connection
        return old

    @property
    def is_open(self) -> bool:
        return self.connection is not None and self.connection.is_open
