"""Sign-in (ACP ``authMethods`` / ``authenticate``): which method to use, and advice when none worked.

- ``initialize`` lists the agent's methods, keyed by ``type``: ``env_var`` (the agent reads the named
  variables; codex-acp still wants ``authenticate`` with that method first), ``terminal`` (a login
  command the user runs in a terminal; offered because silo_nb advertises ``auth.terminal`` and shows the
  command — it never runs it) and, with no type, ``agent`` (the agent signs in itself on ``authenticate``).
- :func:`choose_method`: a profile's ``auth_method`` (or ``%silo login``'s) wins; else the first
  ``env_var`` method whose variables are all set in the profile's ``env`` or the kernel's environment.
  Silo never authenticates (its rule: "a failing ``session/new`` is the real auth-required signal"), so a
  Codex profile with a key could not connect; silo_nb calls ``authenticate`` before ``session/new``.
- :func:`is_auth_error` recognises "sign in first" answers (-32000, or words such as "API key",
  "authentication"), at ``session/new`` and at ``session/prompt`` alike.
- :func:`sign_in_advice` is one line naming every way the agent accepts: the variables to set in the
  profile's ``env``, the terminal command, ``%silo login PROFILE METHOD`` for agent methods.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from silo_nb.acp import AcpRpcError

__all__ = [
    "AUTH_REQUIRED_CODE",
    "AuthMethod",
    "choose_method",
    "is_auth_error",
    "parse_auth_methods",
    "sign_in_advice",
]

AUTH_REQUIRED_CODE = -32000
_AUTH_WORDS = re.compile(
    r"auth|sign[ -]?in|log[ -]?in|api[ _-]?key|credential|unauthori[sz]ed|not logged", re.IGNORECASE
)
# ``_meta["api-key"].provider`` (gemini-cli) names a provider, not a variable: the variables those
# providers' own tools read, so the advice can name one. Unknown providers get generic advice.
_PROVIDER_VARIABLES = {
    "google": "GEMINI_API_KEY",
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}


@dataclass(frozen=True)
class AuthMethod:
    """One entry of ``authMethods``."""

    id: str
    name: str
    type: str = "agent"  # "agent" | "env_var" | "terminal" (or an unknown future type, kept as is)
    description: str | None = None
    variables: tuple[str, ...] = ()  # env_var: every variable it needs; agent with an api-key provider: one
    command: tuple[str, ...] = ()  # terminal: the login command to run in a terminal (empty: unknown)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "variables": list(self.variables),
            "command": list(self.command),
        }


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def parse_auth_methods(init: Mapping[str, Any], agent_argv: Sequence[str] = ()) -> tuple[AuthMethod, ...]:
    """``initialize``'s ``authMethods``; entries without an id are skipped. ``agent_argv`` (the agent's
    resolved command and args) completes a terminal method that gives only ``args``."""
    methods: list[AuthMethod] = []
    for item in _list(init.get("authMethods")):
        if not isinstance(item, Mapping) or not _text(item.get("id")):
            continue
        kind = _text(item.get("type")) or "agent"
        meta = _map(item.get("_meta"))
        variables: tuple[str, ...] = ()
        command: tuple[str, ...] = ()
        if kind == "env_var":
            entries = _list(item.get("vars"))
            variables = tuple(v["name"] for v in entries if isinstance(v, Mapping) and _text(v.get("name")))
        elif kind == "terminal":
            command = _terminal_command(item, meta, agent_argv)
        provider = _map(meta.get("api-key")).get("provider")
        if not variables and isinstance(provider, str) and provider in _PROVIDER_VARIABLES:
            variables = (_PROVIDER_VARIABLES[provider],)
        methods.append(
            AuthMethod(
                id=item["id"],
                name=_text(item.get("name")) or item["id"],
                type=kind,
                description=_text(item.get("description")),
                variables=variables,
                command=command,
            )
        )
    return tuple(methods)


def _terminal_command(
    item: Mapping[str, Any], meta: Mapping[str, Any], agent_argv: Sequence[str]
) -> tuple[str, ...]:
    legacy = meta.get("terminal-auth")
    if isinstance(legacy, Mapping) and _text(legacy.get("command")):
        return (legacy["command"], *(str(a) for a in _list(legacy.get("args"))))
    args = _list(item.get("args"))
    return (*agent_argv, *(str(a) for a in args)) if agent_argv else ()


def choose_method(
    methods: Sequence[AuthMethod], profile_env: Mapping[str, str | None], pinned: str | None
) -> AuthMethod | None:
    """The method to ``authenticate`` with before a session, or None (see the module docstring).

    Raises ``LookupError`` for a pinned id the agent does not offer, ``ValueError`` for a terminal one."""
    if pinned:
        method = next((m for m in methods if m.id == pinned), None)
        if method is None:
            offered = ", ".join(m.id for m in methods) or "none"
            raise LookupError(f'it offers no sign-in method "{pinned}" (it offers: {offered})')
        if method.type == "terminal":
            raise ValueError(
                f'"{pinned}" is a terminal sign-in: run {_shell(method.command) or "its login command"} '
                "in a terminal instead"
            )
        return method
    env = {**os.environ, **profile_env}
    for method in methods:
        if method.type == "env_var" and method.variables and all(env.get(v) for v in method.variables):
            return method
    return None


def is_auth_error(exc: BaseException) -> bool:
    if not isinstance(exc, AcpRpcError):
        return False
    return exc.code == AUTH_REQUIRED_CODE or bool(_AUTH_WORDS.search(exc.agent_message()))


def _shell(command: Sequence[str]) -> str:
    return shlex.join(command) if command else ""


def sign_in_advice(methods: Sequence[AuthMethod], profile_id: str) -> str:
    """One line: every way to sign in, or what to try when the agent lists none."""
    variables = [(m, " and ".join(m.variables)) for m in methods if m.variables]
    ways: list[str] = []
    if variables:
        names = " or ".join(f"{names} ({m.id})" for m, names in variables)
        ways.append(f"set {names} in the profile's env")
    for method in methods:
        if method.type == "terminal":
            where = f"`{_shell(method.command)}`" if method.command else "the agent's login command"
            ways.append(f"run {where} in a terminal ({method.name})")
        elif not method.variables and method.type != "env_var":
            ways.append(f"run %silo login {profile_id} {method.id} ({method.name})")
    if not ways:
        return (
            "it lists no sign-in methods: sign in with the agent's own tool in a terminal, or put its API "
            "key in the profile's env"
        )
    return "sign in: " + "; or ".join(ways)
