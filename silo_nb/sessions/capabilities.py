"""What ``initialize`` told us about an agent, read once (Silo's capability rules)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from silo_nb.model import (
    AgentPromptCapabilities,
    AuthMethod,
)
from silo_nb.sessions.connecting.auth_methods import parse_auth_methods

__all__ = ["AgentCapabilities", "capability_enabled", "parse_prompt_capabilities"]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def capability_enabled(value: Any) -> bool:
    """Silo's rule: ``True``, or a non-null, non-array object (``{}`` means supported)."""
    return value is True or isinstance(value, Mapping)


def parse_prompt_capabilities(init_result: Mapping[str, Any]) -> AgentPromptCapabilities:
    caps = _mapping(_mapping(init_result.get("agentCapabilities")).get("promptCapabilities"))
    if not caps:
        caps = _mapping(init_result.get("promptCapabilities"))
    return AgentPromptCapabilities(
        image=caps.get("image") is True,
        audio=caps.get("audio") is True,
        embedded_context=caps.get("embeddedContext") is True,
    )


@dataclass(frozen=True)
class AgentCapabilities:
    """What ``initialize`` told us, read once."""

    agent_name: str
    can_load: bool = False
    can_resume_call: bool = False
    can_close: bool = False
    can_list: bool = False
    prompt: AgentPromptCapabilities = field(default_factory=AgentPromptCapabilities)
    auth_methods: tuple[AuthMethod, ...] = ()
    can_logout: bool = False
    can_delete: bool = False
    additional_directories: bool = False  # takes ``additionalDirectories`` in session setup
    mcp_http: bool = False  # takes MCP servers over http / sse (stdio: every agent)
    mcp_sse: bool = False
    can_steer: bool = False  # takes ``_session/steering`` (initialize ``_meta.steering.supported``)
    # ACP v1.25 (unstable) session methods and the client's system prompt: sessionCapabilities.*
    system_prompt: bool = False  # takes ``systemPrompt`` in append mode on session/new, load, resume, fork
    system_prompt_override: bool = False  # and in override mode (``systemPrompt.mode.override``)
    can_fork: bool = False  # session/fork
    can_set_title: bool = False  # session/set_title (``title``)
    can_status: bool = False  # session/status
    auth_status: bool = False  # ``auth/status`` (agentCapabilities.auth.status)
    auth_status_push: bool = False  # pushes ``_auth/status_update`` (agentCapabilities._meta.authStatus)
    init_result: Mapping[str, Any] = field(default_factory=dict)

    @property
    def can_resume(self) -> bool:
        return self.can_resume_call or self.can_load

    @classmethod
    def parse(
        cls, init: Mapping[str, Any], *, fallback_name: str, agent_argv: Sequence[str] = ()
    ) -> AgentCapabilities:
        """``agent_argv`` (the agent's command line) completes terminal sign-in methods."""
        agent_caps = _mapping(init.get("agentCapabilities"))
        session_caps = _mapping(init.get("sessionCapabilities")) or _mapping(
            agent_caps.get("sessionCapabilities")
        )
        info = _mapping(init.get("agentInfo"))
        prompt_caps = session_caps.get("systemPrompt")
        prompt_modes = _mapping(_mapping(prompt_caps).get("mode"))
        auth_caps = _mapping(agent_caps.get("auth"))
        name = info.get("title") or info.get("name")
        return cls(
            agent_name=name if isinstance(name, str) and name else fallback_name,
            can_load=capability_enabled(agent_caps.get("loadSession")),
            can_resume_call=capability_enabled(session_caps.get("resume")),
            can_close=capability_enabled(session_caps.get("close")),
            can_list=capability_enabled(session_caps.get("list")),
            prompt=parse_prompt_capabilities(init),
            auth_methods=parse_auth_methods(init, agent_argv),
            can_logout=capability_enabled(auth_caps.get("logout")),
            can_delete=capability_enabled(session_caps.get("delete")),
            additional_directories=capability_enabled(session_caps.get("additionalDirectories")),
            mcp_http=_mapping(agent_caps.get("mcpCapabilities")).get("http") is True,
            mcp_sse=_mapping(agent_caps.get("mcpCapabilities")).get("sse") is True,
            can_steer=_mapping(_mapping(init.get("_meta")).get("steering")).get("supported") is True,
            system_prompt=capability_enabled(prompt_caps),
            system_prompt_override=capability_enabled(prompt_caps)
            and capability_enabled(prompt_modes.get("override")),
            can_fork=capability_enabled(session_caps.get("fork")),
            can_set_title=capability_enabled(session_caps.get("title")),
            can_status=capability_enabled(session_caps.get("status")),
            auth_status=capability_enabled(auth_caps.get("status")),
            auth_status_push=capability_enabled(_mapping(agent_caps.get("_meta")).get("authStatus")),
            init_result=init,
        )
