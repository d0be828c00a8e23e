"""Silo's chat agent-session semantics on top of ``silo_nb.acp``. Never imports IPython or ipywidgets."""

from silo_nb.sessions.agents import AgentsService
from silo_nb.sessions.errors import AgentSessionError, AgentSessionInputError, AgentSignInError
from silo_nb.sessions.profiles import AgentProfilesService
from silo_nb.sessions.service import AgentSessionsService
from silo_nb.sessions.session.handle import AgentSessionHandle

__all__ = [
    "AgentProfilesService",
    "AgentSessionError",
    "AgentSessionHandle",
    "AgentSessionInputError",
    "AgentSessionsService",
    "AgentSignInError",
    "AgentsService",
]
