"""The ``%silo`` subcommands: one handler each, its arguments declared on it with ``magic_arguments``.

- :func:`run_line` dispatches on the first word to :data:`SUBCOMMANDS`; ``%silo``, ``%silo help`` (and
  ``-h``/``--help``) print :func:`usage_text`, which is generated from the handlers' parsers.
- A handler gets the session state and the parsed arguments. Errors are one ``UsageError`` line: the
  parser's (naming the subcommand), ours, or the agent's own message (``AgentSessionError``, and
  ``ValueError``/``OSError`` from the service or the file system).
- ``connect`` shows a "connecting…" line at once (so the output lands in this cell), then replaces it
  with the session panel, or with the error. With ``--bg`` it returns at once and commands that need the
  handle wait for it. Without ``--new``/``--resume`` it resumes the session this notebook last used under
  NAME (the connection records), so "Run All" after a restart continues where it was; a run that samples
  (``sessions.sampling``) starts a new session instead.
"""

from __future__ import annotations

import argparse
import asyncio
import html
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from silo_nb.model import (
    AgentSessionError,
)
from silo_nb.notebook import cell_turns as turns
from silo_nb.notebook._display import display
from silo_nb.notebook.attachments import discard_attachments
from silo_nb.notebook.magics.args import (
    argument,
    did_you_mean,
    magic_arguments,
    one_line,
    parse,
    split,
    summary,
    usage,
)
from silo_nb.notebook.magics.attach import attach_command
from silo_nb.notebook.magics.authoring import authoring_subcommands
from silo_nb.notebook.magics.connecting import connect, fork
from silo_nb.notebook.magics.connections import Connection, NotebookSession
from silo_nb.notebook.magics.dormant_list import dormant_sessions, resume_target
from silo_nb.notebook.magics.export import export_command
from silo_nb.notebook.magics.frame import frame_command
from silo_nb.notebook.magics.profile_warnings import held_profile_warnings, let_through
from silo_nb.notebook.magics.promoting import promote_command
from silo_nb.notebook.magics.prompt import run_prompt
from silo_nb.notebook.magics.replaying import replay_profile_id
from silo_nb.notebook.magics.results import diff_command, runs_command
from silo_nb.notebook.magics.sign_in import auth_subcommands
from silo_nb.notebook.magics.undo_cells import undo_cells_command
from silo_nb.notebook.magics.undo_turn import undo_command
from silo_nb.sessions import (
    DormantSession,
    sampling_asked,
)

if TYPE_CHECKING:
    pass

__all__ = ["SUBCOMMANDS", "connect", "help_text", "run_line", "usage_text"]

Handler = Callable[[NotebookSession, argparse.Namespace], Awaitable[None]]


async def run_line(session: NotebookSession, line: str) -> None:
    """One ``%silo`` line."""
    argv = split(line, "%silo")
    if not argv or argv[0] in ("help", "-h", "--help"):
        print(usage_text())
        return
    command, rest = argv[0], argv[1:]
    handler = SUBCOMMANDS.get(command)
    if handler is None:
        hint = did_you_mean(command, SUBCOMMANDS)
        raise UsageError(f"%silo: unknown subcommand {command!r}{hint or ' — try %silo help'}")
    args = parse(handler, rest)
    try:
        await handler(session, args)
    except (AgentSessionError, ValueError, OSError) as exc:
        raise UsageError(one_line(exc)) from None


@magic_arguments("silo profiles")
async def _profiles(session: NotebookSession, args: argparse.Namespace) -> None:
    """The agent profiles you can connect to (yours, plus the built-in demo)."""
    profiles = session.service.profiles.list()
    rows = "".join(
        f"<tr><td><code>{html.escape(p.id)}</code></td><td>{html.escape(p.label)}</td>"
        f"<td>{p.interface}</td><td>{'✓' if p.is_default else ''}</td></tr>"
        for p in profiles
    )
    text = "\n".join(
        f"{p.id:<16} {p.label:<24} {p.interface}{'  (default)' if p.is_default else ''}" for p in profiles
    )
    problems = session.service.profiles.problems
    note = "".join(f"<div style='opacity:.7'>skipped: {html.escape(p)}</div>" for p in problems)
    display(
        {
            "text/html": "<table><tr><th>id</th><th>label</th><th>interface</th><th>default</th></tr>"
            f"{rows}</table>{note}",
            "text/plain": text + "".join(f"\nskipped: {p}" for p in problems),
        },
        raw=True,
    )


@magic_arguments("silo connect")
@argument("profile", nargs="?", metavar="PROFILE", help="a profile id (see %%silo profiles)")
@argument("--as", dest="name", metavar="NAME", help="the variable the handle is bound to (default: PROFILE)")
@argument(
    "--replay", metavar="SESSION_ID", help="play a recorded session (or a journal file) back as the agent"
)
@argument("--speed", type=float, default=1.0, help="with --replay: times faster than recorded (0: no pauses)")
@argument("--cwd", metavar="DIR", help="the agent's working directory")
@argument("--new", action="store_true", help="start a new session instead of resuming the last one")
@argument("--resume", dest="resume_id", metavar="SESSION_ID", help="resume this session")
@argument(
    "--fresh",
    action="store_true",
    help="continue in a new agent session, carrying the transcript (its %%%%prompt cells ask again)",
)
@argument("--discard", action="store_true", help="continue in a new agent session, dropping the transcript")
@argument("--bg", action="store_true", help="return at once; the connection is made in the background")
@argument(
    "--no-kernel-tools",
    dest="no_kernel_tools",
    action="store_true",
    help="offer the agent no tools on this kernel (its variables, run_code)",
)
@argument(
    "--system-prompt",
    dest="system_prompt",
    metavar="TEXT",
    help="instructions sent as the session's system prompt (instead of the profile's), where taken",
)
@argument(
    "--no-notebook-guidance",
    dest="no_notebook_guidance",
    action="store_true",
    help="do not add silo_nb's guidance on the notebook tools to the system prompt",
)
async def _connect(session: NotebookSession, args: argparse.Namespace) -> None:
    """Connect to an agent and show the session panel; the handle is bound to NAME in your namespace.

    Without --new or --resume it resumes the session this notebook last used under NAME, if there is one
    — unless the run samples (silo_sample = True, e.g. papermill -p silo_sample True, or SILO_NB_SAMPLE=1):
    then a new session, whose %%prompt cells all ask the agent.
    """
    if args.replay is not None:
        args.profile = replay_profile_id(session, args.replay, args.speed)
    elif args.profile is None:
        raise UsageError("%silo connect: name a PROFILE (see %silo profiles), or --replay SESSION_ID.")
    name = args.name or args.profile.replace("-", "_")  # profile ids may hold "-"; variables may not
    if not name.isidentifier():
        raise UsageError(f"%silo connect: --as {name!r} must be a Python identifier (it becomes a variable).")
    with held_profile_warnings() as warnings:
        known = [profile.id for profile in session.service.profiles.list()]
    if args.profile not in known:
        # The service would say so too, but only we can point at the close one and list the rest.
        hint = did_you_mean(args.profile, known) or "."
        problem = session.service.profiles.problems.about(args.profile)
        skipped = f" Skipped: {problem}" if problem else ""
        message = (
            f'No agent profile with id "{args.profile}"{hint} Profiles: {", ".join(known) or "none"} '
            f"(see %silo profiles).{skipped}"
        )
        let_through(warnings, cited=message)  # the problem this error cites is said once, here
        raise UsageError(message)
    let_through(warnings)
    try:
        sample = sampling_asked(session.shell.user_ns)
    except ValueError as exc:
        raise UsageError(f"%silo connect: {exc}") from None
    # Each sample in a session of its own: one this kernel opened (a connect run again re-shows it).
    existing = session.connections.get(name)
    held = existing.handle if existing is not None and existing.profile_id == args.profile else None
    own = sample and args.resume_id is None and not (held is not None and held.is_live)
    await connect(
        session,
        name,
        args.profile,
        cwd=args.cwd,
        new=args.new or own,
        resume_id=args.resume_id,
        fresh=args.fresh,
        discard=args.discard,
        background=args.bg,
        kernel_tools=False if args.no_kernel_tools else None,
        system_prompt=args.system_prompt,
        notebook_guidance=False if args.no_notebook_guidance else None,
    )


@magic_arguments("silo fork")
@argument("parent", nargs="?", metavar="NAME", help="the connection to fork (default: the most recent one)")
@argument(
    "--as", dest="name", metavar="NEW", required=True, help="the variable the fork's handle is bound to"
)
@argument(
    "--new", action="store_true", help="fork again instead of resuming the fork this notebook made as NEW"
)
async def _fork(session: NotebookSession, args: argparse.Namespace) -> None:
    """Fork a connection's session (session/fork, where the agent offers it) into a new connection NEW:
    its own handle, kernel tools and journal, the journal starting with the parent's turns. Run again
    (Run All after a restart) it resumes the fork it made as NEW.
    """
    if not args.name.isidentifier():
        raise UsageError(
            f"%silo fork: --as {args.name!r} must be a Python identifier (it becomes a variable)."
        )
    await fork(session, args.parent, args.name, new=args.new)


def _let_go(session: NotebookSession, connection: Connection) -> None:
    """The connection's panel frozen as it stands, the connection dropped (its handle disposed)."""
    if connection.box is not None:
        # Its life ends here: leave the snapshot alone in its outputs (nothing left for a widget to load).
        if connection.panel is not None:
            connection.panel.disconnected = True
        session.shown.freeze(connection.box)
    session.drop(connection)
    if not session.connections:
        session.shown.freeze_all()  # the agents lists too: nothing is left for them to follow


@magic_arguments("silo disconnect")
@argument("name", metavar="NAME", help="the connection")
async def _disconnect(session: NotebookSession, args: argparse.Namespace) -> None:
    """Disconnect and dispose of the session (its journal stays; its attachment files go)."""
    connection = session.connection(args.name)
    handle = connection.handle
    _let_go(session, connection)
    if handle is not None:
        await handle.aclose()
        # Only here: a reconnect resumes the same session, whose earlier prompts may point at these files.
        discard_attachments(session.service.workspace_folder, handle.session_id)
    print(f"disconnected {args.name}")


@magic_arguments("silo forget")
@argument("session_id", metavar="SESSION_ID", help="a session id of this workspace (see %%silo agents)")
@argument("--journal", action="store_true", help="remove its journal too (it is kept otherwise)")
@argument("--profile", metavar="PROFILE", help="its agent's profile, when no journal names it")
async def _forget(session: NotebookSession, args: argparse.Namespace) -> None:
    """Forget a session: its agent deletes it (ACP session/delete, where the agent can), a connection of
    this notebook on it is disconnected; its journal stays unless --journal."""
    sessions = session.service.sessions
    deleted = await sessions.forget(args.session_id, profile_id=args.profile, journal=args.journal)
    for connection in list(session.connections.values()):
        if connection.handle is not None and connection.handle.session_id == args.session_id:
            _let_go(session, connection)
    discard_attachments(session.service.workspace_folder, args.session_id)
    said = "the agent deleted it" if deleted else "the agent cannot delete sessions: only silo_nb let it go"
    kept = "its journal is removed" if args.journal else "its journal is kept (--journal removes it)"
    print(f"forgot {args.session_id}: {said}; {kept}")


@magic_arguments("silo cancel")
@argument("name", nargs="?", metavar="NAME", help="the connection (default: the most recent one)")
async def _cancel(session: NotebookSession, args: argparse.Namespace) -> None:
    """Cancel the running turn."""
    _, handle = await session.handle(args.name)
    handle.cancel()


@magic_arguments("silo set")
@argument("name", metavar="NAME", help="the connection")
@argument("option", metavar="OPTION", help="a config option id (see the session panel)")
@argument("value", metavar="VALUE", help="one of its values, or true/false")
async def _set(session: NotebookSession, args: argparse.Namespace) -> None:
    """Set one of the session's config options."""
    _, handle = await session.handle(args.name)
    options = handle.config_options
    option = next((o for o in options if o.id == args.option), None)
    if option is None:
        ids = [o.id for o in options]
        hint = did_you_mean(args.option, ids)
        raise UsageError(
            f'%silo set: {handle.agent_name} has no option "{args.option}"{hint} '
            f"(options: {', '.join(ids) or 'none'})."
        )
    value: Any = args.value
    if option.type == "boolean":
        lowered = args.value.lower()
        if lowered not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
            raise UsageError(f'%silo set: "{args.value}" is not true or false for "{option.name}".')
        value = lowered in ("true", "1", "yes", "on")
    elif option.type == "select" and option.options:
        values = [str(choice.value) for choice in option.options]
        if args.value not in values:
            hint = did_you_mean(args.value, values)
            raise UsageError(
                f'%silo set: "{args.value}" is not a choice for "{option.name}"{hint} '
                f"(choices: {', '.join(values)})."
            )
    await handle.set_config_option(args.option, value)
    current = {o.id: o.current_value for o in handle.config_options}
    print(f"{args.name}: {args.option} = {current.get(args.option)}")


COMMANDS_GRACE_STEPS = 20  # 20 x 0.05 s: one second at most


@magic_arguments("silo commands")
@argument("name", nargs="?", metavar="NAME", help="the connection (default: the most recent one)")
async def _commands(session: NotebookSession, args: argparse.Namespace) -> None:
    """List the commands the agent announced (a %%prompt cell starting with /name runs one)."""
    _, handle = await session.handle(args.name)
    # Agents announce their commands in a notification just after session/new: under Run All this cell
    # can run before it is read (seen on ipykernel 6), so give it a moment before saying there are none.
    for _ in range(COMMANDS_GRACE_STEPS):
        if handle.commands:
            break
        await asyncio.sleep(0.05)
    if not handle.commands:
        print(f"{handle.agent_name} has not announced any commands (yet).")
        return
    for command in handle.commands:
        hint = f" <{command.input.hint}>" if command.input and command.input.hint else ""
        print(f"/{command.name}{hint}  {command.description or ''}".rstrip())


@magic_arguments("silo agents")
@argument("--installed", action="store_true", help="list the pinned agents installed in the cache instead")
async def _agents(session: NotebookSession, args: argparse.Namespace) -> None:
    """A live list of the sessions (activity, needs-attention, acknowledge), then this workspace's
    sessions from earlier kernels, each with a Resume button that reconnects it under a name.
    ``--installed``: the pinned agents' cache instead (``installed_list.py``)."""
    from silo_nb.notebook.widgets import AgentsList

    if args.installed:
        from silo_nb.notebook.magics.installed_list import installed_lines

        print("\n".join(await installed_lines()))
        return

    async def resume(dormant: DormantSession, show: Callable[[Any], None]) -> None:
        name, profile = resume_target(session, dormant)
        # One that can neither resume nor load continues in a new session carrying its transcript.
        await connect(session, name, profile, resume_id=dormant.session_id, fresh=dormant.stale, show=show)

    dormant = await dormant_sessions(session)  # the loop keeps turning over a large workspace
    session.shown.show(AgentsList(session.service, dormant=dormant, on_resume=resume))


@magic_arguments("silo journal")
@argument("session_id", metavar="SESSION_ID", help="a session id of this workspace")
async def _journal(session: NotebookSession, args: argparse.Namespace) -> None:
    """Show a session's journal as a transcript, without connecting."""
    updates = await session.service.sessions.read_journal(args.session_id)
    if not updates:
        raise UsageError(f"%silo journal: no journal for session {args.session_id!r} in this workspace.")
    turns.display_restored(
        updates, metadata={"session_id": args.session_id}, meta=f"journal of {args.session_id}"
    )


SUBCOMMANDS: dict[str, Handler] = {
    "profiles": _profiles,
    "connect": _connect,
    "fork": _fork,
    "cancel": _cancel,
    "set": _set,
    "commands": _commands,
    "agents": _agents,
    "journal": _journal,
    "frame": frame_command,
    "attach": attach_command,
    "undo-cells": undo_cells_command,
    "undo": undo_command,
    "runs": runs_command,
    "diff": diff_command,
    "promote": promote_command,
    "export": export_command,
    "disconnect": _disconnect,
    "forget": _forget,
    **auth_subcommands(connect),
    **authoring_subcommands(),
}


def usage_text() -> str:
    """What ``%silo help`` prints: each command's usage line (from its parser) and what it does."""
    lines: list[str] = []
    handlers: list[Callable[..., Any]] = [*SUBCOMMANDS.values(), run_prompt]
    for handler in handlers:
        lines += [usage(handler), f"    {summary(handler)}"]
    lines.append("%silo? and %%prompt? show every option.")
    return "\n".join(lines)


def help_text() -> str:
    """The docstring of ``%silo`` (what ``%silo?`` shows): the usage, then each subcommand's help."""
    sections = [handler.__doc__ or "" for handler in SUBCOMMANDS.values()]
    intro = "Silo's agents in this notebook: %silo SUBCOMMAND ..."
    return f"{intro}\n\n{usage_text()}\n\n" + "\n".join(sections)
