"""``agents.sessions.doctor(profile_id)``: start a profile's agent, ``initialize`` it, report; no session.

- What the agent says about itself (name, title, version, protocol version, capabilities), the sign-in
  methods it accepts, and what is missing for each: an ``env_var`` method's unset variables, a
  terminal method's command, an agent method's ``%silo login``. ``%silo doctor PROFILE`` shows it.
- Command lines and URLs are shown without what looks like a secret (``redact.py``): ``--token ***``.
- The agent is shut down in the background once ``initialize`` answered (or failed); a failure to start
  is reported in ``problem`` rather than raised, so the report always comes back.
- ``source``: the profiles file the profile is read from and the lower entries of its id it replaces (a
  site's, on a shared server: ``profile_sources.py``), so "which settings am I running?" has one answer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import anyio

from silo_nb.acp import STDERR_RING_LINES, AgentSpawnError
from silo_nb.model import (
    AgentSessionError,
    AuthMethod,
)
from silo_nb.sessions.capabilities import AgentCapabilities
from silo_nb.sessions.connecting.auth_methods import choose_method, sign_in_advice
from silo_nb.sessions.connecting.bare_agent import bare_agent
from silo_nb.sessions.host import TransportFactory
from silo_nb.sessions.mcp_servers import wire_servers
from silo_nb.sessions.profiles import AgentProfile
from silo_nb.sessions.redact import redact_args, redact_url

__all__ = ["AgentCheck", "check_agent"]


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


async def check_agent(profile: AgentProfile, cwd: str, factory: TransportFactory | None) -> AgentCheck:
    """Start ``profile``'s agent, ``initialize`` it within ``connect_timeout``, report, shut it down."""
    base = AgentCheck(profile.id, profile.display_label, (profile.command, *redact_args(profile.args)))
    started = anyio.current_time()
    try:
        async with bare_agent(profile, cwd, factory, "doctor done") as (connection, caps):
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
            },
            "mcp_servers": _server_lines(profile, caps),
            "auth_methods": caps.auth_methods,
            "missing": missing,
            "will_authenticate": method.id if method is not None else None,
            "seconds": anyio.current_time() - started,
            "stderr": stderr,
        }
    )
