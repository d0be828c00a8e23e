"""A profile's agent started and ``initialize``d without a session: what ``doctor``, ``forget`` (a
dormant session's ``session/delete``) and ``logout`` talk to.

- :func:`bare_agent` spawns the agent (or asks the service's transport factory), initializes it within
  the profile's ``connect_timeout`` and yields the connection with the agent's capabilities; on the way
  out the agent is shut down in the background (no process outlives it: ``acp/process.py``).
- :func:`agent_request` is one request, bounded by the profile's ``request_timeout``, whose agent-side
  error becomes ``AgentSessionError`` saying what was refused and the agent's own message.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio

from silo_nb.acp import (
    AcpConnectionClosed,
    AcpRpcError,
    AgentConnection,
    SubprocessTransport,
    Transport,
)
from silo_nb.model import (
    AgentSessionError,
    no_answer,
)
from silo_nb.sessions.agent_pins import AgentPinError, pinned_command
from silo_nb.sessions.capabilities import AgentCapabilities
from silo_nb.sessions.connecting.handshake import initialize
from silo_nb.sessions.host import TransportFactory
from silo_nb.sessions.profiles import AgentProfile

__all__ = ["agent_request", "bare_agent"]


@contextlib.asynccontextmanager
async def bare_agent(
    profile: AgentProfile,
    cwd: str,
    factory: TransportFactory | None,
    reason: str,
    *,
    notification_handlers: Mapping[str, Callable[[Any], None]] | None = None,
) -> AsyncIterator[tuple[AgentConnection, AgentCapabilities]]:
    """The initialized agent of ``profile`` (raises ``AgentSpawnError``, ``AgentSessionError`` or
    ``TimeoutError`` when it cannot be started or does not answer ``initialize`` in time);
    ``notification_handlers``: what to do with the agent's notifications meanwhile (``doctor``: its
    sign-in pushes)."""
    if profile.agent is not None:  # a pinned agent (issue 33): started from its installed entry
        try:
            command, args = await pinned_command(profile)
        except AgentPinError as exc:
            raise AgentSessionError(f"Could not start {profile.display_label}: {exc}.") from None
        profile = profile.model_copy(update={"command": command, "args": args})
    transport: Transport = (
        await SubprocessTransport.spawn(profile.command, profile.args, env=profile.spawn_env, cwd=cwd)
        if factory is None
        else await factory(profile, cwd)
    )
    connection = AgentConnection.open(transport, notification_handlers=notification_handlers)
    try:
        with anyio.fail_after(profile.connect_timeout):
            caps = await initialize(connection, profile)
        yield connection, caps
    finally:
        connection.close_in_background(reason)


async def agent_request(
    connection: AgentConnection, method: str, params: dict[str, Any], refused: str, profile: AgentProfile
) -> Any:
    """``method`` on ``connection``, within the profile's ``request_timeout``; an error is
    ``AgentSessionError("<refused>: <the agent's message>")``."""
    try:
        with anyio.fail_after(profile.request_timeout):
            return await connection.rpc.request(method, params)
    except TimeoutError:
        raise no_answer(profile.display_label, method, profile.request_timeout) from None
    except AcpRpcError as exc:
        raise AgentSessionError(f"{refused}: {exc.agent_message()}") from exc
    except AcpConnectionClosed as exc:
        raise AgentSessionError(f"{refused}: {exc}") from exc
