"""``%silo login``, ``%silo logout`` and ``%silo doctor``: signing in to an agent and out, and checking a
profile without a session.

- ``%silo logout NAME`` sends ACP ``logout`` to the agent (a fresh process, no session) where it offers it.
- ``%silo doctor PROFILE`` starts the agent, ``initialize``s it and prints what it is, what it offers
  and what is missing to sign in (``agents.sessions.doctor``); no session is created.
- ``%silo login NAME [METHOD]``: NAME is a connection (whose profile is used) or a profile id. The
  connect is made again with ``auth_method=METHOD`` (ACP ``authenticate`` before ``session/new``), under
  the same connection name. Without METHOD the agent's only agent-type method is used; with none or
  several the error lists them (env_var and terminal methods are not signed into from here: the advice
  says which variable to set or which command to run).
- :func:`sign_in_action` is what the session panel's "Sign in" button does for a connection.
- ``silo.py`` hands its ``connect`` in (:func:`auth_subcommands`), so this module never imports it.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from IPython.core.error import UsageError

from silo_nb.notebook.magics.args import argument, magic_arguments
from silo_nb.notebook.magics.connections import Connection, NotebookSession
from silo_nb.sessions.connecting.auth_methods import sign_in_advice

__all__ = ["auth_subcommands", "login", "sign_in_action"]

Connect = Callable[..., Awaitable[None]]
"""``silo.connect(session, name, profile_id, *, auth_method=...)``."""
Handler = Callable[[NotebookSession, argparse.Namespace], Awaitable[None]]


def _target(session: NotebookSession, name: str) -> tuple[str, str]:
    """(connection name, profile id) for NAME: a connection, else a profile id (its connection, if any)."""
    connection = session.connections.get(name)
    if connection is not None:
        return connection.name, connection.profile_id
    same = next((c for c in session.connections.values() if c.profile_id == name), None)
    return (same.name if same is not None else name.replace("-", "_")), name


async def login(
    session: NotebookSession,
    name: str,
    method: str | None,
    connect: Connect,
    show: Callable[[Any], None] | None = None,
) -> None:
    """Sign in to NAME's agent with ``method`` and connect again (see the module docstring); ``show``:
    where the new panel goes (the Sign in button: where the old one was), else the running cell."""
    connection_name, profile_id = _target(session, name)
    if method is None:
        check = await session.service.sessions.doctor(profile_id)
        if check.problem:
            raise UsageError(f"%silo login {name}: {check.problem}")
        agent_methods = [m for m in check.auth_methods if m.type == "agent" and not m.variables]
        if len(agent_methods) != 1:
            advice = sign_in_advice(check.auth_methods, profile_id)
            raise UsageError(f"%silo login {name}: name a METHOD — {advice}")
        method = agent_methods[0].id
    await connect(session, connection_name, profile_id, auth_method=method, show=show)


def auth_subcommands(connect: Connect) -> dict[str, Handler]:
    """The ``login``, ``logout`` and ``doctor`` subcommands, reconnecting through ``connect``."""

    @magic_arguments("silo login")
    @argument("name", metavar="NAME", help="a connection, or a profile id")
    @argument("method", nargs="?", metavar="METHOD", help="a sign-in method id (see %%silo doctor PROFILE)")
    async def _login(session: NotebookSession, args: argparse.Namespace) -> None:
        """Sign in with one of the agent's methods (ACP authenticate), then connect again under NAME."""
        await login(session, args.name, args.method, connect)

    @magic_arguments("silo doctor")
    @argument("profile", metavar="PROFILE", help="a profile id (see %%silo profiles)")
    async def _doctor(session: NotebookSession, args: argparse.Namespace) -> None:
        """Start PROFILE's agent and initialize it, without a session: its name, version, capabilities,
        sign-in methods and what is missing."""
        check = await session.service.sessions.doctor(args.profile)
        print("\n".join(check.lines()))

    @magic_arguments("silo logout")
    @argument("name", metavar="NAME", help="a connection, or a profile id")
    async def _logout(session: NotebookSession, args: argparse.Namespace) -> None:
        """Sign out of NAME's agent (ACP logout, where the agent offers it); its sessions stay."""
        _, profile_id = _target(session, args.name)
        await session.service.sessions.logout(profile_id)
        print(f"logged out of {profile_id}")

    return {"login": _login, "logout": _logout, "doctor": _doctor}


def sign_in_action(session: NotebookSession, connection: Connection, connect: Connect) -> Callable[[], None]:
    """The panel's "Sign in": ``%silo login`` for an agent method, else the advice under the panel."""

    def clicked() -> None:
        session.tasks.add(asyncio.get_running_loop().create_task(_sign_in(session, connection, connect)))

    return clicked


async def _sign_in(session: NotebookSession, connection: Connection, connect: Connect) -> None:
    def say(text: str) -> None:
        if connection.output is not None:
            connection.output.append_stdout(text + "\n")

    # A click has no cell of its own: the new panel replaces the old one wherever that was shown.
    places = session.shown.live_displays(connection.box) if connection.box is not None else []
    show = session.shown.in_displays(places) if places else None
    try:
        await login(session, connection.name, None, connect, show=show)
    except UsageError as exc:
        say(str(exc))
    except Exception as exc:  # a button has no cell to raise into
        say(f"%silo login {connection.name}: {exc}")
