"""Opening a connection for ``%silo connect`` (and ``%silo login``): the "connecting…" line, the handshake,
then the session panel in the same output, or the error in its place.

- A connection is registered before the handshake, its connect a task (commands for the name meanwhile wait
  for it) and forgotten again if the handshake fails: a failed connect leaves no name, no variable and no
  new default.
- Without ``new``/``resume_id`` it resumes the session this notebook last used under the name (the
  connection records), so "Run All" after a restart continues where it was.
- The agent is offered the kernel tools (``kernel_tool_setup.py``) unless ``kernel_tools`` is False or
  the profile turns them off; a reconnect of a name keeps what it had. With them, the session is a kernel
  session: silo_nb's notebook guidance goes with its system prompt (where the agent takes one), unless
  ``notebook_guidance`` is False or the profile's ``notebook_guidance`` is false.
- A new session of an agent that offers ``session/set_title`` is named after its notebook and cell
  (``analysis · cell 3``) when Jupyter names the notebook; where not offered, nothing is done.
- :func:`fork` (``%silo fork NAME --as NEW``) opens the fork of a connection's session as a connection of
  its own, with kernel tools of its own; run again (Run All after a restart) it resumes that fork.
"""

from __future__ import annotations

import asyncio
import html
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import anyio
from IPython.core.error import UsageError

from silo_nb.model import (
    AgentSessionError,
)
from silo_nb.notebook._display import display
from silo_nb.notebook.magics.args import one_line
from silo_nb.notebook.magics.connections import Connection, NotebookSession
from silo_nb.notebook.magics.kernel_tool_setup import start_kernel_tools
from silo_nb.notebook.magics.prompt import palette_run
from silo_nb.notebook.magics.sign_in import sign_in_action
from silo_nb.notebook.magics.stale_watch import StaleWatch
from silo_nb.notebook.render import styles

if TYPE_CHECKING:
    from silo_nb.sessions import AgentSessionHandle

__all__ = ["connect", "default_title", "fork", "open_fork"]

log = logging.getLogger("silo_nb.notebook")

TITLE_WAIT_SECONDS = 2.0  # the default title's session/set_title: never holds a connect up longer

# Opens the session for ``_open``: (the kernel tools' MCP servers, whether it is a kernel session).
Opener = Callable[[list[Any], bool], Awaitable["AgentSessionHandle"]]


async def connect(
    session: NotebookSession,
    name: str,
    profile_id: str,
    *,
    cwd: str | None = None,
    new: bool = False,
    resume_id: str | None = None,
    fresh: bool = False,
    discard: bool = False,
    background: bool = False,
    auth_method: str | None = None,
    show: Callable[[Any], None] | None = None,
    kernel_tools: bool | None = None,
    system_prompt: str | None = None,
    notebook_guidance: bool | None = None,
) -> None:
    """Open (or re-show) the connection ``name`` to ``profile_id`` and display its panel (``auth_method``:
    sign in with it first, for ``%silo login``); with ``show`` (the agents list's Resume), the
    "connecting…" bundle, then the panel or the error go there instead of this cell's output.
    ``kernel_tools`` False: no kernel tools for this connection (None: as the profile, or as the
    connection of that name had it). ``system_prompt`` replaces the profile's; ``notebook_guidance``
    False: no notebook guidance (None: as the connection of that name had it)."""
    existing = session.connections.get(name)
    if kernel_tools is None and existing is not None:
        kernel_tools = existing.kernel_tools_wanted
    same_prompt = existing is None or _same_prompt(existing, system_prompt, notebook_guidance)
    if existing is not None:
        system_prompt = existing.system_prompt if system_prompt is None else system_prompt
        notebook_guidance = existing.notebook_guidance if notebook_guidance is None else notebook_guidance
    # A sign-in reconnects; so does a changed system prompt (it is sent when the session is set up).
    plain = not (new or resume_id or fresh or discard or cwd or auth_method) and same_prompt
    if (
        existing is not None
        and plain
        and existing.profile_id == profile_id
        and existing.handle is not None
        and existing.handle.is_live
    ):
        (show or session.shown.show)(existing.box)
        session.last_name = name
        return
    if existing is not None:
        # Let the old agent go before the same session is resumed in a new one.
        session.drop(existing)
        if existing.handle is not None:
            await existing.handle.aclose()
    resume: dict[str, Any] | None = None
    session_id = resume_id
    if session_id is None and not new:
        record = session.records.get(name)
        if record is not None and record.get("profile") == profile_id:
            session_id = record["session_id"]
    if session_id is not None:
        resume = {
            "session_id": session_id,
            "start_fresh": fresh or discard,
            "transcript": "discard" if discard else "carry",
        }
    connection = Connection(
        name=name,
        profile_id=profile_id,
        kernel_tools_wanted=kernel_tools,
        system_prompt=system_prompt,
        notebook_guidance=notebook_guidance is not False,
    )
    previous = session.add(connection)
    connecting = {
        "text/plain": f"connecting to {profile_id}…",
        "text/html": f"<i>connecting to {html.escape(profile_id)}…</i>",
    }
    # A connect this cell waits for fails with its UsageError, said once: the "connecting…" line then goes
    # (not replaced by the same error). In the background, or shown elsewhere, the error takes its place.
    raises = show is None and not background
    if show is None:
        status_id = f"silo-connect-{id(connection)}"
        display(connecting, raw=True, display_id=status_id)
        show = session.shown.in_displays([status_id])  # the connect cell's output
    else:
        show(connecting)

    def open_session(servers: list[Any], kernel_session: bool) -> Awaitable[AgentSessionHandle]:
        return session.service.sessions.connect(
            profile_id,
            cwd=cwd,
            resume=resume,
            auth_method=auth_method,
            mcp_servers=servers,
            system_prompt=connection.system_prompt,
            notebook_guidance=kernel_session and connection.notebook_guidance,
        )

    coroutine = _open(session, connection, show, previous, open_session, raises=raises)
    # Always a task, so a command for this name waits for it (NotebookSession.handle) however the connect
    # runs: --bg, in its cell, or as the registered magic of a cell that loaded the extension itself.
    connection.task = asyncio.get_running_loop().create_task(coroutine)
    if background:
        return
    await connection.task  # an interrupt of this cell cancels the connect with it
    if connection.handle is None:
        raise UsageError(connection.error or "connect failed")


async def _open(
    session: NotebookSession,
    connection: Connection,
    show: Callable[[Any], None],
    previous: str | None,
    open_session: Opener,
    *,
    raises: bool = False,
    forked: bool = False,
) -> None:
    try:
        tools = await start_kernel_tools(session, connection.profile_id, connection.kernel_tools_wanted)
        connection.kernel_tools = tools
        handle = await open_session([tools.server_config] if tools is not None else [], tools is not None)
    except BaseException as exc:
        if connection.kernel_tools is not None:
            connection.kernel_tools.close()
        session.forget_failed(connection, previous)
        if not isinstance(exc, (AgentSessionError, ValueError)):
            raise
        connection.error = one_line(exc)
        if raises:
            show({"text/plain": ""})  # the caller raises the error: one line, not two
            return
        show(
            {
                "text/plain": f"error: {connection.error}",
                "text/html": f"<span style='{styles.ERROR_TEXT}'>✗ {html.escape(connection.error)}</span>",
            }
        )
        return
    connection.handle = handle
    if connection.kernel_tools is not None:
        connection.kernel_tools.bind(handle)

    async def fork_quietly(name: str) -> Connection:  # a Re-ask's fork: its panel is not shown
        return await open_fork(session, connection, handle, name, lambda _shown: None)

    connection.stale = StaleWatch(session, connection, handle, fork=fork_quietly)
    session.shell.user_ns[connection.name] = handle
    if handle.session_id:
        session.records.put(
            connection.name,
            profile_id=connection.profile_id,
            session_id=handle.session_id,
            can_resume=handle.can_resume,  # the agents list marks a dormant session that cannot come back
            agent=handle.agent_name,
        )
    if handle.resume_outcome == "new" and not forked:
        await _default_title(session, handle)
    connection.box = _panel(session, connection, handle)
    show(connection.box)
    if handle.resume_outcome == "journal-only":
        print(
            f"{handle.label} can neither resume nor load session {handle.session_id}: "
            "its transcript comes from the journal only. "
            f"Continue with %silo connect {connection.profile_id} --as {connection.name} --fresh"
        )


def _same_prompt(existing: Connection, system_prompt: str | None, notebook_guidance: bool | None) -> bool:
    """A connect that asks for the system prompt the connection already has (None: as it has)."""
    same_text = system_prompt is None or system_prompt == existing.system_prompt
    return same_text and (notebook_guidance is None or notebook_guidance == existing.notebook_guidance)


def default_title(shell: Any) -> str | None:
    """``<notebook name> · cell <n>`` where Jupyter names the notebook (``JPY_SESSION_NAME``), else None."""
    path = os.environ.get("JPY_SESSION_NAME")
    if not path:
        return None
    count = getattr(shell, "execution_count", None)
    cell = f" · cell {count}" if isinstance(count, int) and count > 0 else ""
    return f"{PurePath(path).stem or path}{cell}"


async def _default_title(session: NotebookSession, handle: AgentSessionHandle) -> None:
    """Name a new session after its notebook and cell, where the agent takes a title (quietly otherwise;
    bounded by :data:`TITLE_WAIT_SECONDS`)."""
    title = default_title(session.shell)
    if title is None or not handle.can_set_title:
        return
    try:
        with anyio.fail_after(TITLE_WAIT_SECONDS):
            await handle.set_title(title)
    except (AgentSessionError, TimeoutError) as exc:
        log.info("%s: the session keeps the agent's title (%s)", handle.label, one_line(exc))


async def fork(session: NotebookSession, parent_name: str | None, name: str, *, new: bool = False) -> None:
    """``%silo fork``: the session of connection ``parent_name`` forked into a new connection ``name``
    (its own handle, journal and kernel tools), its panel shown in this cell. Where this notebook forked
    into ``name`` before (its records), that fork is resumed instead, unless ``new``."""
    parent_connection, parent = await session.handle(parent_name)
    profile_id = parent_connection.profile_id
    if name == parent_connection.name:
        raise UsageError(f"%silo fork: --as {name!r} is the connection being forked — choose another name.")
    existing = session.connections.get(name)
    record = session.records.get(name)
    if not new and record is not None and record.get("profile") == profile_id:
        await connect(
            session,
            name,
            profile_id,
            kernel_tools=parent_connection.kernel_tools_wanted,
            system_prompt=parent_connection.system_prompt,
            notebook_guidance=parent_connection.notebook_guidance,
        )
        return
    if existing is not None and existing.handle is not None and existing.handle.is_live:
        raise UsageError(
            f'%silo fork: "{name}" is connected — %silo disconnect {name} first, or choose another --as.'
        )
    if not parent.can_fork:
        raise UsageError(
            f"%silo fork: {parent.label} does not offer session/fork (its sessionCapabilities.fork) — "
            f"connect a new session instead (%silo connect {profile_id} --as {name} --new)."
        )
    if existing is not None:
        session.drop(existing)
    status_id = f"silo-connect-{name}-{id(parent)}"
    forking = f"forking {parent_connection.name}…"
    display(
        {"text/plain": forking, "text/html": f"<i>{html.escape(forking)}</i>"}, raw=True, display_id=status_id
    )
    await open_fork(session, parent_connection, parent, name, session.shown.in_displays([status_id]))


async def open_fork(
    session: NotebookSession,
    parent_connection: Connection,
    parent: AgentSessionHandle,
    name: str,
    show: Callable[[Any], None],
) -> Connection:
    """``parent``'s session forked into a new connection ``name`` (its own handle, journal and kernel
    tools), its panel handed to ``show``; a one-line ``UsageError`` when the fork fails."""
    connection = Connection(
        name=name,
        profile_id=parent_connection.profile_id,
        kernel_tools_wanted=parent_connection.kernel_tools_wanted,
        system_prompt=parent_connection.system_prompt,
        notebook_guidance=parent_connection.notebook_guidance,
    )
    previous = session.add(connection)

    def open_session(servers: list[Any], kernel_session: bool) -> Awaitable[AgentSessionHandle]:
        guidance = kernel_session and connection.notebook_guidance
        return parent.fork(mcp_servers=servers, notebook_guidance=guidance)

    connection.task = asyncio.get_running_loop().create_task(
        _open(session, connection, show, previous, open_session, raises=True, forked=True)
    )
    await connection.task
    if connection.handle is None:
        raise UsageError(connection.error or "fork failed")
    return connection


def _panel(session: NotebookSession, connection: Connection, handle: AgentSessionHandle) -> Any:
    from silo_nb.notebook.widgets import SessionPanel
    from silo_nb.notebook.widgets.connection_box import ConnectionBox

    panel = SessionPanel(
        handle,
        session.service,
        on_run=lambda text: palette_run(session, connection, text),
        on_sign_in=sign_in_action(session, connection, connect),
    )
    box = ConnectionBox(panel)
    connection.panel = panel
    connection.output = box.output
    return box
