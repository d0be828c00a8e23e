"""The errors silo_nb raises: one line that says what happened and what to do."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from silo_nb.model.auth_method import AuthMethod

__all__ = ["AgentSessionError", "AgentSessionInputError", "AgentSignInError", "no_answer"]


class AgentSessionError(RuntimeError):
    """A session operation failed; the message carries the agent's own words (and its stderr tail)."""


class AgentSessionInputError(AgentSessionError, ValueError):
    """Bad input from the caller (an unknown option, a value that is not a choice). Also a ValueError."""


class AgentSignInError(AgentSessionError):
    """The agent wants a sign-in first. The message says how; ``methods`` are what it accepts."""

    def __init__(self, message: str, *, profile_id: str, methods: tuple[AuthMethod, ...] = ()) -> None:
        super().__init__(message)
        self.profile_id = profile_id
        self.methods = methods


def no_answer(label: str, method: str, seconds: float) -> AgentSessionError:
    """A request the agent left unanswered past the profile's ``request_timeout``."""
    return AgentSessionError(
        f"{label} did not answer {method} within {seconds:g} s (raise request_timeout in the profile if "
        "the agent is just slow)."
    )
