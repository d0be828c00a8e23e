"""Opening a connection for ``%silo connect`` (and ``%silo login``): the "connecting…" line, the handshake,
then the session panel in the same output, or the error in its place.

- A connection is registered before the handshake, its connect a task (commands for the name meanwhile wait
  for it) and forgotten again if the handshake fails: a failed connect leaves no name, no variable and no
  new default.
- Without ``new``/``resume_id`` it resumes the session this notebook last used under the name (the
  connection records), so "Run All" after a restart continues where it was.
- The agent is offered the kernel tools (``kernel_tool_setup.py``) unless ``kernel_tools`` is False or
  the profile turns them off; a reconnect of a name keeps what it had.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
from silo_nb.notebook.render import styles

if TYPE_CHECKING:
    from silo_nb.sessions import AgentSessionHandle

__all__ = ["connect"]


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
) -> None:
    """Open (or re-show) the connection ``name`` to ``profile_id`` and display its panel (``auth_method``:
    sign in with it first, for ``%silo login``); with ``show`` (the agents list's Resume), the
    "connecting…" bundle, then the panel or the error go there instead of this cell's output.
    ``kernel_tools`` False: no kernel tools for this connection (None: as the profile, or as the
    connection of that name had it)."""
    existing = session.connections.get(name)
    if kernel_tools is None and existing is not None:
        kernel_tools = existing.kernel_tools_wanted
    plain = not (new or resume_id or fresh or discard or cwd or auth_method)  # a sign-in reconnects
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
    connection = Connection(name=name, profile_id=profile_id, kernel_tools_wanted=kernel_tools)
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
    coroutine = _open(
        session, connection, show, previous, cwd=cwd, resume=resume, auth_method=auth_method, raises=raises
    )
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
    *,
    cwd: str | None,
    resume: dict[str, Any] | None,
    auth_method: str | None = None,
    raises: bool = False,
) -> None:
    try:
        tools = await start_kernel_tools(session, connection.profile_id, connection.kernel_tools_wanted)
        connection.kernel_tools = tools
        handle = await session.service.sessions.connect(
            connection.profile_id,
            cwd=cwd,
            resume=resume,
            auth_method=auth_method,
            mcp_servers=[tools.server_config] if tools is not None else [],
        )
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
    session.shell.user_ns[connection.name] = handle
    if handle.session_id:
        session.records.put(
            connection.name,
            profile_id=connection.profile_id,
            session_id=handle.session_id,
            can_resume=handle.can_resume,  # the agents list marks a dormant session that cannot come back
            agent=handle.agent_name,
        )
    connection.box = _panel(session, connection, handle)
    show(connection.box)
    if handle.resume_outcome == "journal-only":
        print(
            f"{handle.label} can neither resume nor load session {handle.session_id}: "
            "its transcript comes from the journal only. "
            f"Continue with %silo connect {connection.profile_id} --as {connection.name} --fresh"
        )


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
