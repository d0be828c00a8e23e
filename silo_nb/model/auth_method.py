"""One way an agent accepts a sign-in (an entry of ``initialize``'s ``authMethods``), as read by
``silo_nb.sessions``' sign-in reader; the errors carry them."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

__all__ = ["AuthMethod"]


@dataclass(frozen=True)
class AuthMethod:
    """One entry of ``authMethods``."""

    id: str
    name: str
    type: str = "agent"  # "agent" | "env_var" | "terminal" (or an unknown future type, kept as is)
    description: str | None = None
    variables: tuple[str, ...] = ()  # env_var: every variable it needs; an api-key provider's: one
    command: tuple[str, ...] = ()  # terminal: the login command to run in a terminal (empty: unknown)
    env: tuple[tuple[str, str], ...] = ()  # terminal: variables set on that command
    provider: str | None = None  # ``_meta["api-key"].provider``: a key, then ``authenticate``

    @property
    def shell(self) -> str:
        """The terminal command as one shell line (``NAME=value command args``), or ``""``."""
        if not self.command:
            return ""
        prefix = [f"{name}={shlex.quote(value)}" for name, value in self.env]
        return " ".join([*prefix, shlex.join(self.command)])

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "variables": list(self.variables),
            "command": list(self.command),
            "env": dict(self.env),
            "provider": self.provider,
        }
