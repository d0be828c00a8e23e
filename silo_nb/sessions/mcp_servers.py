"""MCP servers a session offers its agent (ACP ``mcpServers`` in ``session/new``, ``load`` and ``resume``).

- A profile declares them (``mcp_servers``: stdio ``name``/``command``/``args``/``env``, or ``type =
  "http"``/``"sse"`` with ``url``/``headers``); the notebook front end adds its own (the kernel tools).
- Every agent must take stdio servers; http and sse only go to an agent whose ``mcpCapabilities`` say so.
  A server the agent cannot take is left out with one warning naming it (:func:`wire_servers` returns it).
- Its ``repr`` (and rich's) shows env and header values, URL credentials and secret-looking args as
  ``***`` (``redact.py``); ``wire()``, ``str()`` and ``model_dump`` keep the real values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from silo_nb.sessions.redact import masked_values, redact_args, redact_url

__all__ = ["McpServerConfig", "wire_servers"]


class McpServerConfig(BaseModel):
    """One MCP server as a profile declares it."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str = Field(min_length=1)
    type: Literal["stdio", "http", "sse"] = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _complete(self) -> McpServerConfig:
        if self.type == "stdio" and not self.command:
            raise ValueError(f'MCP server "{self.name}": a stdio server needs a command')
        if self.type != "stdio" and not self.url:
            raise ValueError(f'MCP server "{self.name}": an {self.type} server needs a url')
        return self

    def shown_fields(self) -> Iterator[tuple[str, Any]]:
        """The fields as they may be shown: the values that may be secrets as ``***``."""
        masks: dict[str, Callable[[Any], Any]] = {
            "env": masked_values,
            "headers": masked_values,
            "args": redact_args,
            "url": redact_url,
        }
        for name, value in self:
            yield name, masks[name](value) if name in masks and value is not None else value

    def __repr_args__(self) -> Any:
        # pydantic's repr, str and rich repr all read this: each shows the secrets masked.
        return list(self.shown_fields())

    def wire(self) -> dict[str, Any]:
        """ACP's ``McpServer`` shape (env and headers as ``{name, value}`` lists)."""
        if self.type == "stdio":
            env = [{"name": key, "value": value} for key, value in self.env.items()]
            return {"name": self.name, "command": self.command, "args": list(self.args), "env": env}
        headers = [{"name": key, "value": value} for key, value in self.headers.items()]
        return {"type": self.type, "name": self.name, "url": self.url, "headers": headers}


def wire_servers(
    servers: Iterable[McpServerConfig], *, http: bool, sse: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    """(the servers the agent can take, in ACP's shape; a one-line warning for each it cannot)."""
    taken: list[dict[str, Any]] = []
    skipped: list[str] = []
    accepted = {"stdio": True, "http": http, "sse": sse}
    for server in servers:
        if accepted[server.type]:
            taken.append(server.wire())
        else:
            skipped.append(
                f'MCP server "{server.name}" left out: the agent does not take {server.type} servers '
                "(its mcpCapabilities) — declare it as a stdio server, or use an agent that does."
            )
    return taken, skipped
