"""The first requests of a connection — ``initialize``, ``authenticate``, ``session/new`` — and the wording
of their failures. ``connector.py`` routes; this module talks and words.

- Every failure is an ``AgentSessionError`` with Silo's wording and the agent's own message. The stderr
  lines appended are those that state a cause (``acp.error_excerpt``): never the last backtrace frame or
  an unrelated warning. When the agent answered, only error-looking lines are added (its answer already
  says what happened); the whole ring stays in ``handle.stderr_tail()``.
- A sign-in failure (``sign_in.is_auth_error``) is an ``AgentSignInError`` whose one line lists every way
  the agent accepts (``sign_in.sign_in_advice``).
"""

from __future__ import annotations

from typing import Any

from silo_nb.acp import (
    PROTOCOL_VERSION,
    STDERR_RING_LINES,
    AcpConnectionClosed,
    AcpRpcError,
    AgentConnection,
    client_capabilities,
    client_info,
    error_excerpt,
)
from silo_nb.model import (
    AgentSessionError,
    AgentSignInError,
    AuthMethod,
)
from silo_nb.sessions.capabilities import AgentCapabilities
from silo_nb.sessions.connecting.auth_methods import choose_method, is_auth_error, sign_in_advice
from silo_nb.sessions.profiles import AgentProfile

__all__ = [
    "authenticate",
    "initialize",
    "new_session",
    "refused_error",
    "sign_in_error",
    "timed_out",
    "with_stderr",
]

INVALID_PARAMS = -32602


def with_stderr(message: str, connection: AgentConnection | None, *, answered: bool = False) -> str:
    """``message`` plus the stderr lines that explain it (``answered``: the agent replied, so only lines
    that look like errors are worth adding)."""
    ring = connection.stderr_tail(STDERR_RING_LINES) if connection is not None else []
    tail = error_excerpt(ring, fallback=not answered)
    if not tail or any(line in message for line in tail):
        return message
    return message + "\nAgent stderr (last lines):\n" + "\n".join(tail)


def timed_out(profile: AgentProfile, connection: AgentConnection | None, *, while_: str = "") -> str:
    during = f" while {while_}" if while_ else ""
    return with_stderr(
        f"Could not start {profile.display_label}: no answer within {profile.connect_timeout:g} s{during} "
        "(raise connect_timeout in the profile if the agent is just slow).",
        connection,
    )


def sign_in_error(
    head: str, exc: AcpRpcError, methods: tuple[AuthMethod, ...], profile_id: str
) -> AgentSignInError:
    """``head: <agent's words> — <every way to sign in>``, as one line."""
    advice = sign_in_advice(methods, profile_id)
    return AgentSignInError(
        f"{head}: {exc.agent_message()} — {advice}.", profile_id=profile_id, methods=methods
    )


async def initialize(connection: AgentConnection, profile: AgentProfile) -> AgentCapabilities:
    label = profile.display_label
    try:
        init = await connection.rpc.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": client_capabilities(
                    fs_read=profile.fs_read,
                    fs_write=profile.fs_write,
                    terminal=profile.terminal,
                    elicitation=True,
                ),
                "clientInfo": client_info(),
            },
        )
    except AcpRpcError as exc:
        raise AgentSessionError(
            with_stderr(f"Could not start {label}: {exc.agent_message()}", connection, answered=True)
        ) from exc
    except AcpConnectionClosed as exc:
        raise AgentSessionError(f"Could not start {label}: {exc}") from exc
    if not isinstance(init, dict):
        init = {}
    version = init.get("protocolVersion")
    if version != PROTOCOL_VERSION:
        raise AgentSessionError(
            f"Could not start {label}: it speaks ACP protocol version {version!r}; silo_nb speaks "
            f"version {PROTOCOL_VERSION} — update the agent or its ACP adapter."
        )
    process = connection.process
    argv = process.argv if process is not None else (profile.command, *profile.args)
    return AgentCapabilities.parse(init, fallback_name=label, agent_argv=argv)


async def authenticate(
    caps: AgentCapabilities, connection: AgentConnection, profile: AgentProfile, method_id: str | None
) -> AuthMethod | None:
    """``authenticate`` with ``method_id`` (``%silo login``), the profile's ``auth_method``, or an env_var
    or api-key method whose variables are set; nothing when none applies. Returns the method used."""
    label = profile.display_label
    methods = caps.auth_methods
    try:
        method = choose_method(methods, profile.spawn_env, method_id or profile.auth_method)
    except (LookupError, ValueError) as exc:
        raise AgentSignInError(
            f"{label} could not sign in: {exc}.", profile_id=profile.id, methods=methods
        ) from None
    if method is None:
        return None
    try:
        await connection.rpc.request("authenticate", {"methodId": method.id})
    except AcpRpcError as exc:
        raise sign_in_error(
            f"{label} could not sign in with {method.name} ({method.id})", exc, methods, profile.id
        ) from exc
    except AcpConnectionClosed as exc:
        raise AgentSessionError(f"{label} could not sign in: {exc}") from exc
    return method


def _about_system_prompt(exc: AcpRpcError) -> bool:
    """An error that may be the agent refusing the ``systemPrompt`` it was sent (ACP: invalid params)."""
    message = exc.agent_message().lower()
    return exc.code == INVALID_PARAMS or "systemprompt" in message or "system prompt" in message


def refused_error(head: str, exc: AcpRpcError, profile_id: str, *, system_prompt: bool) -> AgentSessionError:
    """``head: <the agent's words>`` in one line; where a ``systemPrompt`` was sent and the agent says
    invalid params, what to change in the profile."""
    said = " ".join(exc.agent_message().split())
    if system_prompt and _about_system_prompt(exc):
        return AgentSessionError(
            f"{head}: it refused the system prompt of profile {profile_id!r} ({said}) — change or remove "
            'system_prompt / system_prompt_mode in the profile (or pass system_prompt="") and connect again.'
        )
    return AgentSessionError(f"{head}: {said}")


async def new_session(
    connection: AgentConnection,
    params: dict[str, Any],
    label: str,
    caps: AgentCapabilities,
    profile_id: str,
    *,
    system_prompt: bool = False,
) -> tuple[str, dict[str, Any]]:
    """``session/new`` with ``params`` (``cwd``, ``mcpServers``…): the new session id and the whole result.
    ``system_prompt``: the params carry one, so an invalid-params refusal names it."""
    try:
        result = await connection.rpc.request("session/new", params)
    except AcpRpcError as exc:
        if system_prompt and _about_system_prompt(exc):
            head = f"{label} could not start a session"
            raise refused_error(head, exc, profile_id, system_prompt=True) from exc
        if is_auth_error(exc):  # Silo's own words first, then every way to sign in
            raise sign_in_error(
                f"{label} could not start a session (it may need you to sign in first)",
                exc,
                caps.auth_methods,
                profile_id,
            ) from exc
        raise AgentSessionError(
            with_stderr(
                f"{label} could not start a session (it may need you to sign in first): "
                f"{exc.agent_message()}",
                connection,
                answered=True,
            )
        ) from exc
    except AcpConnectionClosed as exc:
        raise AgentSessionError(f"{label} could not start a session: {exc}") from exc
    session_id = result.get("sessionId") if isinstance(result, dict) else None
    if not isinstance(session_id, str) or not session_id:
        raise AgentSessionError(f"{label} could not start a session: session/new returned no sessionId")
    assert isinstance(result, dict)
    return session_id, result
