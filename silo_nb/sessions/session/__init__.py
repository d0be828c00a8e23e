"""One live chat session: its public handle and the parts it is composed of (``core.py`` lists them)."""

from silo_nb.sessions.session.handle import AgentSessionHandle

__all__ = ["AgentSessionHandle"]
