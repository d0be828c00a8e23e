"""``%silo login``, ``%silo logout`` and ``%silo doctor``: signing in to an agent and out, and checking a
profile without a session.

- ``%silo logout NAME`` sends ACP ``logout`` to the agent (a fresh process, no session) where it offers it.
- ``%silo doctor PROFILE`` starts the agent, ``initialize``s it and prints what it is, what it offers
  and what is missing to sign in (``agents.sessions.doctor``), and which profiles file it comes from; no
  session is created. ``%silo doctor`` alone starts nothing: it prints how the profiles files merged
  (site under user, per id: ``sessions/profile_sources.py``), each profile's file, and what was skipped.
- ``%silo login NAME [METHOD]``: NAME is a connection (whose profile is used) or a profile id. An
  agent-type METHOD: the connect is made again with ``auth_method=METHOD`` (ACP ``authenticate`` before
  ``session/new``), under the same connection name. A terminal METHOD (a login the user runs in a
  terminal: claude, pi, qwen, copilot, opencode): where the kernel has a terminal (``/dev/tty``, e.g.
  IPython in a terminal) the command runs there with the profile's environment, and on success the
  connection is made again; a Jupyter kernel has none, so the error gives the exact command to run in a
  JupyterLab terminal. Without METHOD the agent's only such method is used; with none or several the
  error lists every way (env_var and api-key methods: the advice says which variable to set).
- :func:`sign_in_action` is what the session panel's "Sign in" button does for a connection.
- ``silo.py`` hands its ``connect`` in (:func:`auth_subcommands`), so this module never imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
from collections.abc import Awaitable, Callable
from typing import Any

from IPython.core.error import UsageError

from silo_nb.model import AuthMethod
from silo_nb.notebook.magics.args import argument, magic_arguments
from silo_nb.notebook.magics.connections import Connection, NotebookSession
from silo_nb.notebook.magics.profile_warnings import held_profile_warnings
from silo_nb.sessions import sign_in_advice

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
    check = await session.service.sessions.doctor(profile_id)
    if check.problem:
        raise UsageError(f"%silo login {name}: {check.problem}")
    if method is None:
        ways = [m for m in check.auth_methods if _signs_in_here(m)]
        if len(ways) != 1:
            advice = sign_in_advice(check.auth_methods, profile_id)
            raise UsageError(f"%silo login {name}: name a METHOD — {advice}")
        method = ways[0].id
    chosen = next((m for m in check.auth_methods if m.id == method), None)
    if chosen is not None and chosen.type == "terminal":
        await _terminal_login(session, name, profile_id, chosen)
        existing = session.connections.get(connection_name)
        if existing is not None and existing.handle is not None and existing.handle.is_live:
            await existing.handle.aclose()  # signed in now: the next connect starts the agent afresh
        await connect(session, connection_name, profile_id, show=show)
        return
    await connect(session, connection_name, profile_id, auth_method=method, show=show)


def _signs_in_here(method: AuthMethod) -> bool:
    """A way ``%silo login`` takes without a METHOD: an agent-type method, or a terminal command."""
    if method.type == "terminal":
        return bool(method.command)
    return method.type == "agent" and not method.variables


def controlling_terminal() -> int | None:
    """A file descriptor on the kernel's terminal, or None (a Jupyter kernel has none)."""
    try:
        return os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None


async def _terminal_login(session: NotebookSession, name: str, profile_id: str, method: AuthMethod) -> None:
    """Run a terminal sign-in's command on the kernel's terminal, or say where to run it."""
    where = f"`{method.shell}`" if method.command else "the agent's login command"
    terminal = controlling_terminal() if method.command else None
    if terminal is None:
        raise UsageError(
            f"%silo login {name}: {method.name} is a terminal sign-in — run {where} in a terminal "
            f"(JupyterLab: File ▸ New ▸ Terminal), then %silo connect {name} again."
        )
    profile = session.service.profiles.get(profile_id)
    env = dict(os.environ)
    for key, value in {**(profile.spawn_env if profile is not None else {}), **dict(method.env)}.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    program = shutil.which(method.command[0], path=env.get("PATH")) or method.command[0]
    try:
        process = await asyncio.create_subprocess_exec(
            program, *method.command[1:], stdin=terminal, stdout=terminal, stderr=terminal, env=env
        )
        try:
            code = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
    except OSError as exc:
        raise UsageError(f"%silo login {name}: could not run {where}: {exc}") from None
    finally:
        os.close(terminal)
    if code != 0:
        raise UsageError(f"%silo login {name}: {where} exited with status {code} — run it in a terminal.")


def auth_subcommands(connect: Connect) -> dict[str, Handler]:
    """The ``login``, ``logout`` and ``doctor`` subcommands, reconnecting through ``connect``."""

    @magic_arguments("silo login")
    @argument("name", metavar="NAME", help="a connection, or a profile id")
    @argument("method", nargs="?", metavar="METHOD", help="a sign-in method id (see %%silo doctor PROFILE)")
    async def _login(session: NotebookSession, args: argparse.Namespace) -> None:
        """Sign in with one of the agent's methods (ACP authenticate), then connect again under NAME."""
        await login(session, args.name, args.method, connect)

    @magic_arguments("silo doctor")
    @argument("profile", nargs="?", metavar="PROFILE", help="a profile id (see %%silo profiles)")
    async def _doctor(session: NotebookSession, args: argparse.Namespace) -> None:
        """Start PROFILE's agent and initialize it, without a session: its name, version, capabilities,
        sign-in methods, what is missing and its profiles file. Without PROFILE: how the profiles files
        merged (the site's under yours) and where each profile comes from."""
        if args.profile is None:
            with held_profile_warnings():  # the report's "skipped:" lines say each once
                report = session.service.profiles.merge_report()
            print("\n".join(report))
            return
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
