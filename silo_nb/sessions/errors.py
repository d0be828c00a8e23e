"""The errors silo_nb raises: one line that says what happened and what to do."""

from __future__ import annotations

__all__ = ["AgentSessionError", "AgentSessionInputError"]


class AgentSessionError(RuntimeError):
    """A session operation failed; the message carries the agent's own words (and its stderr tail)."""


class AgentSessionInputError(AgentSessionError, ValueError):
    """Bad input from the caller (an unknown option, a value that is not a choice). Also a ValueError."""
