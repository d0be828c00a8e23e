"""``agents.sessions.doctor(profile_id)``: start a profile's agent, ``initialize`` it, report; no session.

- What the agent says about itself (name, title, version, protocol version, capabilities), the sign-in
  methods it accepts, and what is missing for each: an ``env_var`` method's unset variables, a
  terminal method's command, an agent method's ``%silo login``. ``%silo doctor PROFILE`` shows it.
- Command lines and URLs are shown without what looks like a secret (``redact.py``): ``--token ***``.
- The agent is shut down in the background once ``initialize`` answered (or failed); a failure to start
  is reported in ``problem`` rather than raised, so the report always comes back.
- Whether the agent is signed in, without a prompt (``auth_status.py``): ``auth/status`` where the agent
  offers ``agentCapabilities.auth.status``, else the ``_auth/status_update`` it pushes after
  ``initialize`` (Claude, Codex: ``_meta.authStatus``), waited for up to :data:`AUTH_PUSH_WAIT_SECONDS`.
- Whether the profile's system prompt is sent (``system_prompt.py``), and why not.
- ``source``: the profiles file the profile is read from and the lower entries of its id it replaces (a
  site's, on a shared server: ``profile_sources.py``), so "which settings am I running?" has one answer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import anyio

from silo_nb.acp import STDERR_RING_LINES, AcpConnectionClosed, AcpRpcError, AgentConnection, AgentSpawnError
from silo_nb.model import (
    AgentSessionError,
    AuthMethod,
)
from silo_nb.sessions.auth_status import AgentAuthStatus, parse_auth_status
from silo_nb.sessions.capabilities import AgentCapabilities
from silo_nb.sessions.connecting.auth_methods import choose_method, sign_in_advice
from silo_nb.sessions.connecting.bare_agent import bare_agent
from silo_nb.sessions.host import TransportFactory
from silo_nb.sessions.mcp_servers import wire_servers
from silo_nb.sessions.profiles import AgentProfile
from silo_nb.sessions.redact import redact_args, redact_url
from silo_nb.sessions.system_prompt import SystemPrompt

__all__ = ["AUTH_PUSH_WAIT_SECONDS", "AgentCheck", "check_agent"]

AUTH_PUSH_WAIT_SECONDS = 3.0  # how long doctor waits for an agent's first _auth/status_update


@dataclass(frozen=True)
class AgentCheck:
    """What ``initialize`` showed of a profile's agent, and what a user still has to provide."""

    profile_id: str
    label: str
    command: tuple[str, ...]
    agent_name: str | None = None
    agent_title: str | None = None
    version: str | None = None
    capabilities: dict[str, Any] = field(default_factory=dict)
    auth_methods: tuple[AuthMethod, ...] = ()
    missing: dict[str, str] = field(default_factory=dict)  # method id → what is missing for it
    will_authenticate: str | None = None  # the method connect would authenticate with, if any
    problem: str | None = None  # why the agent could not be started or initialized
    seconds: float = 0.0
    stderr: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()  # one line per profile MCP server: sent, or why it is left out
    source: str | None = None  # "user ~/.jupyter/silo/profiles.toml — replaces site /etc/…"
    signed_in: str | None = None  # "signed in: yes (Claude Max, …)", or why it is not known
    system_prompt: str | None = None  # "system prompt: sent (append…)", or why it is not sent

    def lines(self) -> list[str]:
        """The report as text, one fact per line."""
        out = [f"{self.label} ({self.profile_id}): {' '.join(self.command)}"]
        if self.source:
            out.append(f"  from: {self.source}")
        if self.problem:
            return [*out, f"  problem: {self.problem}"]
        name = self.agent_title or self.agent_name or "(no agentInfo)"
        out.append(
            f"  agent: {name} {self.version or ''}".rstrip() + f" — initialize in {self.seconds:.2f} s"
        )
        caps = ", ".join(f"{key}={value}" for key, value in self.capabilities.items())
        out.append(f"  capabilities: {caps}")
        out.extend(f"  {line}" for line in (self.signed_in, self.system_prompt) if line)
        if not self.auth_methods:
            out.append("  sign-in methods: none listed")
        for method in self.auth_methods:
            state = self.missing.get(method.id, "ready")
            kind = f"api-key {method.provider}" if method.provider else method.type
            out.append(f"  sign-in {method.id} ({kind}, {method.name}): {state}")
        if "auth_method" in self.missing:
            out.append(f"  problem: {self.missing['auth_method']}")
        if self.capabilities:
            accepts = [kind for kind in ("http", "sse") if self.capabilities.get(f"mcp_{kind}")]
            out.append(f"  MCP servers it takes: stdio{''.join(', ' + kind for kind in accepts)}")
        out.extend(f"  {line}" for line in self.mcp_servers)
        if self.will_authenticate:
            out.append(f"  connect will sign in with {self.will_authenticate}")
        elif self.auth_methods:
            out.append(f"  {sign_in_advice(self.auth_methods, self.profile_id)}")
        return out


def _missing(method: AuthMethod, profile: AgentProfile) -> str | None:
    env = {**os.environ, **profile.spawn_env}
    if method.variables:
        unset = [v for v in method.variables if not env.get(v)]
        return f"set {', '.join(unset)} in the profile's env" if unset else None
    if method.type == "terminal":
        return f"run `{method.shell}` in a terminal" if method.command else "a terminal login"
    if method.type == "env_var":
        return "the agent names no variable"
    return f"%silo login {profile.id} {method.id}"


def _server_lines(profile: AgentProfile, caps: AgentCapabilities) -> tuple[str, ...]:
    """What ``connect`` would do with each of the profile's MCP servers."""
    lines = []
    for server in profile.mcp_servers:
        _, skipped = wire_servers([server], http=caps.mcp_http, sse=caps.mcp_sse)
        # Shown in a notebook: the args and URL without what looks like a secret (redact.py).
        where = (
            redact_url(server.url or "")
            if server.type != "stdio"
            else " ".join([server.command or "", *redact_args(server.args)])
        )
        lines.append(skipped[0] if skipped else f'MCP server "{server.name}" ({server.type}, {where}): sent')
    return tuple(lines)


async def _signed_in(
    connection: AgentConnection,
    caps: AgentCapabilities,
    profile: AgentProfile,
    pushed: list[AgentAuthStatus],
    arrived: anyio.Event,
) -> str:
    """``signed in: …`` from ``auth/status``, or the agent's first push, or why it is not known."""
    if caps.auth_status:
        try:
            with anyio.fail_after(min(profile.request_timeout, AUTH_PUSH_WAIT_SECONDS * 2)):
                answer = await connection.rpc.request("auth/status", {})
        except TimeoutError:
            return "signed in: not known (no answer to auth/status)"
        except (AcpRpcError, AcpConnectionClosed) as exc:
            return f"signed in: not known (auth/status failed: {exc})".splitlines()[0]
        status = parse_auth_status(answer)
        return status.line() if status is not None else "signed in: not known (auth/status said no state)"
    if caps.auth_status_push:
        with anyio.move_on_after(AUTH_PUSH_WAIT_SECONDS):
            await arrived.wait()
        if pushed:
            return pushed[-1].line()
        wait = f"{AUTH_PUSH_WAIT_SECONDS:g} s"
        return f"signed in: not reported within {wait} (the agent pushes _auth/status_update)"
    if pushed:
        return pushed[-1].line()
    return "signed in: not reported (the agent offers neither auth/status nor _auth/status_update)"


def _system_prompt_line(profile: AgentProfile, caps: AgentCapabilities) -> str:
    line = SystemPrompt(profile.system_prompt, profile.system_prompt_mode).doctor_line(caps)
    if caps.system_prompt:
        guidance = "on" if profile.notebook_guidance else "off (notebook_guidance = false)"
        line += f"; notebook guidance for kernel sessions: {guidance}"
    return line


async def check_agent(profile: AgentProfile, cwd: str, factory: TransportFactory | None) -> AgentCheck:
    """Start ``profile``'s agent, ``initialize`` it within ``connect_timeout``, report, shut it down."""
    base = AgentCheck(profile.id, profile.display_label, (profile.command, *redact_args(profile.args)))
    started = anyio.current_time()
    pushed: list[AgentAuthStatus] = []
    arrived = anyio.Event()

    def auth_pushed(params: Any) -> None:
        status = parse_auth_status(params)
        if status is not None:
            pushed.append(status)
            arrived.set()

    pushes = {"_auth/status_update": auth_pushed, "auth/status_update": auth_pushed}
    try:
        async with bare_agent(profile, cwd, factory, "doctor done", notification_handlers=pushes) as (
            connection,
            caps,
        ):
            seconds = anyio.current_time() - started
            signed_in = await _signed_in(connection, caps, profile, pushed, arrived)
            stderr = tuple(connection.stderr_tail(STDERR_RING_LINES))
    except AgentSpawnError as exc:
        return AgentCheck(**{**base.__dict__, "problem": f"{exc}"})
    except (AgentSessionError, TimeoutError) as exc:
        problem = str(exc) or f"no answer to initialize within {profile.connect_timeout:g} s"
        return AgentCheck(**{**base.__dict__, "problem": problem.splitlines()[0]})
    info = caps.init_result.get("agentInfo")
    info = info if isinstance(info, dict) else {}
    missing = {m.id: text for m in caps.auth_methods if (text := _missing(m, profile)) is not None}
    try:
        method = choose_method(caps.auth_methods, profile.spawn_env, profile.auth_method)
    except (LookupError, ValueError) as exc:
        method = None
        missing["auth_method"] = f"the profile's auth_method: {exc}"
    return AgentCheck(
        **{
            **base.__dict__,
            "agent_name": info.get("name") if isinstance(info.get("name"), str) else None,
            "agent_title": info.get("title") if isinstance(info.get("title"), str) else None,
            "version": info.get("version") if isinstance(info.get("version"), str) else None,
            "capabilities": {
                "loadSession": caps.can_load,
                "resume": caps.can_resume_call,
                "list": caps.can_list,
                "close": caps.can_close,
                "logout": caps.can_logout,
                "delete": caps.can_delete,
                "image": caps.prompt.image,
                "audio": caps.prompt.audio,
                "embeddedContext": caps.prompt.embedded_context,
                "mcp_http": caps.mcp_http,
                "mcp_sse": caps.mcp_sse,
                "fork": caps.can_fork,
                "title": caps.can_set_title,
                "status": caps.can_status,
            },
            "mcp_servers": _server_lines(profile, caps),
            "auth_methods": caps.auth_methods,
            "missing": missing,
            "will_authenticate": method.id if method is not None else None,
            "seconds": seconds,
            "stderr": stderr,
            "signed_in": signed_in,
            "system_prompt": _system_prompt_line(profile, caps),
        }
    )
