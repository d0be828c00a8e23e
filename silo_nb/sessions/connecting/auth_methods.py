"""Sign-in (ACP ``authMethods`` / ``authenticate``): which method to use, and advice when none worked.

- ``initialize`` lists the agent's methods. Today's agents say how to sign in in several shapes, and
  :func:`parse_auth_methods` reads them all, by shape (never by agent name):

  - ``type: "env_var"`` + ``vars``: the agent reads the named variables (it may still want
    ``authenticate`` with that method first).
  - ``type: "terminal"`` + ``args`` (+ ``env``): a login the user runs in a terminal — the agent's own
    configured command with ``args`` appended (ACP's ``AuthMethodTerminal``); offered because silo_nb
    advertises ``auth.terminal``, and by some agents even when a client does not.
  - ``_meta["terminal-auth"]`` = ``{command, args, label}`` on any method: that exact command.
  - ``_meta.type == "terminal"`` + ``_meta.args``: the same as the standard terminal shape.
  - a description "Run `COMMAND` in the terminal" on a method with no other hint: that command.
  - ``_meta["api-key"].provider`` on a typeless method: "set the provider's key, then ``authenticate``
    with this method" — the variable is the one that provider's own tools read (``OPENAI_API_KEY`` for
    ``openai``; the method names none).
  - anything else with no type is ``agent``: the agent signs in itself on ``authenticate``.
- :func:`choose_method`: a profile's ``auth_method`` (or ``%silo login``'s) wins; else the first
  ``env_var`` method whose variables are all set in the profile's ``env`` or the kernel's environment,
  or an ``api-key`` method whose variable is. Silo never authenticates (its rule: "a failing
  ``session/new`` is the real auth-required signal"), but agents such as codex-acp refuse every session
  until ``authenticate``, even with the key set; silo_nb calls it before ``session/new``.
- :func:`is_auth_error` recognises "sign in first" answers (-32000, or words such as "API key",
  "authentication"), at ``session/new`` and at ``session/prompt`` alike.
- :func:`sign_in_advice` is one line naming every way the agent accepts: the variables to set in the
  profile's ``env``, the terminal command (``%silo login`` runs it where the kernel has a terminal),
  ``%silo login PROFILE METHOD`` for agent methods.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from silo_nb.acp import AcpRpcError
from silo_nb.model import AuthMethod

__all__ = [
    "AUTH_REQUIRED_CODE",
    "choose_method",
    "is_auth_error",
    "parse_auth_methods",
    "sign_in_advice",
]

AUTH_REQUIRED_CODE = -32000
_AUTH_WORDS = re.compile(
    r"auth|sign[ -]?in|log[ -]?in|api[ _-]?key|credential|unauthori[sz]ed|not logged", re.IGNORECASE
)
# "Run `opencode auth login` in the terminal": a login command given only in the description.
_RUN_IN_TERMINAL = re.compile(r"\brun `([^`\n]+)` in (?:a|the|your) terminal", re.IGNORECASE)
# ``_meta["api-key"].provider`` names a provider, not a variable: the variables those providers' own
# tools read, so the advice can name one and a key set there signs in. Unknown providers: generic advice.
_PROVIDER_VARIABLES = {
    "google": "GEMINI_API_KEY",
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def parse_auth_methods(init: Mapping[str, Any], agent_argv: Sequence[str] = ()) -> tuple[AuthMethod, ...]:
    """``initialize``'s ``authMethods`` (any of the shapes in the module docstring); entries without an
    id are skipped. ``agent_argv`` (the agent's resolved command and args) completes a terminal method
    that gives only ``args``."""
    methods: list[AuthMethod] = []
    for item in _list(init.get("authMethods")):
        if not isinstance(item, Mapping) or not _text(item.get("id")):
            continue
        methods.append(_parse_one(item, agent_argv))
    return tuple(methods)


def _parse_one(item: Mapping[str, Any], agent_argv: Sequence[str]) -> AuthMethod:
    kind = _text(item.get("type")) or "agent"
    meta = _map(item.get("_meta"))
    description = _text(item.get("description"))
    variables: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    legacy = _map(meta.get("terminal-auth"))
    if kind == "env_var":
        entries = _list(item.get("vars"))
        variables = tuple(v["name"] for v in entries if isinstance(v, Mapping) and _text(v.get("name")))
    elif _text(legacy.get("command")):
        kind, command = "terminal", (legacy["command"], *(str(a) for a in _list(legacy.get("args"))))
    elif kind == "terminal" or meta.get("type") == "terminal":
        hint = item if kind == "terminal" else meta
        kind = "terminal"
        args = tuple(str(a) for a in _list(hint.get("args")))
        command = (*agent_argv, *args) if agent_argv else ()
        env = tuple((str(k), str(v)) for k, v in _map(hint.get("env")).items())
    elif kind == "agent" and not meta and description and (found := _RUN_IN_TERMINAL.search(description)):
        try:
            command = tuple(shlex.split(found.group(1)))
        except ValueError:
            command = ()
        kind = "terminal" if command else kind
    provider = _text(_map(meta.get("api-key")).get("provider"))
    if not variables and provider in _PROVIDER_VARIABLES:
        variables = (_PROVIDER_VARIABLES[provider],)
    return AuthMethod(
        id=item["id"],
        name=_text(item.get("name")) or item["id"],
        type=kind,
        description=description,
        variables=variables,
        command=command,
        env=env,
        provider=provider if kind == "agent" else None,
    )


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
                f'"{pinned}" is a terminal sign-in: run {_quoted(method) or "its login command"} '
                "in a terminal instead"
            )
        return method
    env = {**os.environ, **profile_env}
    for method in methods:
        keyed = method.type == "env_var" or (method.type == "agent" and method.provider is not None)
        if keyed and method.variables and all(env.get(v) for v in method.variables):
            return method
    return None


def is_auth_error(exc: BaseException) -> bool:
    if not isinstance(exc, AcpRpcError):
        return False
    return exc.code == AUTH_REQUIRED_CODE or bool(_AUTH_WORDS.search(exc.agent_message()))


def _quoted(method: AuthMethod) -> str:
    return f"`{method.shell}`" if method.command else ""


def sign_in_advice(methods: Sequence[AuthMethod], profile_id: str) -> str:
    """One line: every way to sign in, or what to try when the agent lists none."""
    variables = [(m, " and ".join(m.variables)) for m in methods if m.variables]
    ways: list[str] = []
    if variables:
        names = " or ".join(f"{names} ({m.id})" for m, names in variables)
        ways.append(f"set {names} in the profile's env")
    for method in methods:
        if method.type == "terminal":
            where = _quoted(method) or "the agent's login command"
            ways.append(f"run {where} in a terminal ({method.name})")
        elif not method.variables and method.type != "env_var":
            ways.append(f"run %silo login {profile_id} {method.id} ({method.name})")
    if not ways:
        return (
            "it lists no sign-in methods: sign in with the agent's own tool in a terminal, or put its API "
            "key in the profile's env"
        )
    return "sign in: " + "; or ".join(ways)
