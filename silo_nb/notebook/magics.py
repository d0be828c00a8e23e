"""The IPython extension: ``%silo`` and ``%%prompt``.

- On ipykernel ≥ 7.4 an input transformer turns a ``%%prompt`` cell (and each top-level ``%silo`` line)
  into a top-level ``await``, so the cell runs until the turn ends: "Run All" keeps order, widget clicks
  still arrive (7.4 dispatches comm messages while an async cell awaits), and the stop button cancels the
  turn. A waker task ticks every 0.2 s meanwhile, or the interrupt is not delivered (ipykernel #881).
- ``--bg``, and older kernels, use the registered magics instead: the cell returns at once and the turn
  streams in the background; ``await silo_nb.wait()`` waits for such turns.
- Errors are one ``UsageError`` line (with the agent's own words), never a traceback of ours.
- After a kernel restart, ``%silo connect NAME`` resumes the session this notebook last used under NAME,
  and a ``%%prompt`` cell whose turn is already in the journal (same cell, same text) is repainted from
  the journal with no agent call; ``--rerun`` sends it again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import logging
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from silo_nb.notebook import turns
from silo_nb.notebook._display import display, html_object, update_display
from silo_nb.notebook.attachments import attachment_blocks, file_blocks, interpolate
from silo_nb.notebook.cells import ConnectionRecords, execute_cell_id, fallback_cell_key, notebook_identity
from silo_nb.notebook.render import transcript_html, transcript_markdown
from silo_nb.notebook.transcript import fold_all, split_turns, with_status
from silo_nb.sessions.errors import AgentSessionError

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from silo_nb.notebook.widgets import SessionPanel
    from silo_nb.sessions.agents import AgentsService
    from silo_nb.sessions.handle import AgentSessionHandle
    from silo_nb.sessions.models import AgentSessionUpdate

__all__ = ["SiloMagics", "load_ipython_extension", "prompt_cell", "silo_line", "unload_ipython_extension"]

log = logging.getLogger("silo_nb.notebook")

WAKER_INTERVAL_SECONDS = 0.2
_MODULE = "__import__('silo_nb.notebook.magics', fromlist=['_'])"

USAGE = """\
%silo profiles                                  the agent profiles you can connect to
%silo connect PROFILE [--as NAME] [--cwd DIR] [--new] [--resume SESSION_ID] [--fresh] [--discard]
%silo cancel [NAME] · %silo set NAME OPTION VALUE · %silo commands [NAME]
%silo agents · %silo journal SESSION_ID · %silo export NAME PATH(.md|.html) · %silo disconnect NAME
%%prompt [NAME] [--bg] [--rerun] [--attach VAR ...] [--file PATH ...]   (the cell body is the prompt)"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _parser(prog: str) -> _Parser:
    return _Parser(prog=prog, add_help=False)


def _one_line(exc: BaseException) -> str:
    """The first line of an error, plus the last line of the agent's stderr when there is one."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    head = lines[0]
    tail = [line for line in lines[1:] if not line.startswith("Agent stderr")]
    return f"{head} (agent stderr: {tail[-1].strip()})" if tail else head


@dataclass
class Connection:
    name: str
    profile_id: str
    handle: AgentSessionHandle | None = None
    task: asyncio.Task[None] | None = None
    panel: SessionPanel | None = None
    box: Any = None
    output: Any = None
    error: str | None = None


def _can_block(shell: Any) -> bool:
    """Clicks reach an awaiting cell only on ipykernel ≥ 7.4; a plain IPython shell can always await."""
    if getattr(shell, "kernel", None) is None:
        return True
    try:
        import ipykernel

        version: str = getattr(ipykernel, "__version__", "0.0")
        major, minor = (int(part) for part in version.split(".")[:2])
    except (ImportError, ValueError):
        return False
    return (major, minor) >= (7, 4) and bool(getattr(shell, "autoawait", False))


class NotebookSession:
    """The extension's state for one shell: connections by name, and the cell ↔ turn bookkeeping."""

    def __init__(self, shell: InteractiveShell, service: AgentsService | None = None) -> None:
        import silo_nb

        self.shell = shell
        self.service: AgentsService = service or silo_nb.agents
        self.connections: dict[str, Connection] = {}
        self.last_name: str | None = None
        self.prompt_runs = 0
        self.sent_cells: set[str] = set()
        self.blocking_sessions: set[str] = set()
        self.records = ConnectionRecords(
            self.service.data_dir, self.service.workspace_id, notebook_identity(self.service.workspace_folder)
        )
        # A turn is witnessed when its own cell is the one running (a blocking %%prompt).
        self.service.is_witnessed = lambda session_id: session_id in self.blocking_sessions

    # -- dispatch -----------------------------------------------------------------------------------

    async def line(self, line: str) -> None:
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%silo: {exc}") from None
        if not argv or argv[0] in ("help", "-h", "--help"):
            print(USAGE)
            return
        command, rest = argv[0], argv[1:]
        handler = getattr(self, f"cmd_{command}", None)
        if handler is None:
            raise UsageError(f"%silo: unknown subcommand {command!r} — try %silo help")
        try:
            await handler(rest)
        except AgentSessionError as exc:
            raise UsageError(_one_line(exc)) from None
        except (ValueError, OSError) as exc:
            raise UsageError(_one_line(exc)) from None

    def _connection(self, name: str | None) -> Connection:
        key = name or self.last_name
        if key is None:
            raise UsageError("No connection yet — run %silo connect PROFILE first (try %silo profiles).")
        connection = self.connections.get(key)
        if connection is None:
            known = ", ".join(self.connections) or "none"
            raise UsageError(
                f'No connection named "{key}" — run %silo connect PROFILE --as {key} (connected: {known}).'
            )
        return connection

    async def _handle(self, name: str | None) -> tuple[Connection, AgentSessionHandle]:
        connection = self._connection(name)
        if connection.task is not None and not connection.task.done():
            await asyncio.shield(connection.task)
        if connection.handle is None:
            raise UsageError(f'"{connection.name}" is not connected: {connection.error or "connect failed"}')
        return connection, connection.handle

    # -- %silo subcommands ----------------------------------------------------------------------------

    async def cmd_profiles(self, argv: list[str]) -> None:
        _parser("%silo profiles").parse_args(argv)
        profiles = self.service.profiles.list()
        rows = "".join(
            f"<tr><td><code>{html.escape(p.id)}</code></td><td>{html.escape(p.label)}</td>"
            f"<td>{p.interface}</td><td>{'✓' if p.is_default else ''}</td></tr>"
            for p in profiles
        )
        text = "\n".join(
            f"{p.id:<16} {p.label:<24} {p.interface}{'  (default)' if p.is_default else ''}" for p in profiles
        )
        problems = self.service.profiles.problems
        note = "".join(f"<div style='opacity:.7'>skipped: {html.escape(p)}</div>" for p in problems)
        display(
            {
                "text/html": "<table><tr><th>id</th><th>label</th><th>interface</th><th>default</th></tr>"
                f"{rows}</table>{note}",
                "text/plain": text + "".join(f"\nskipped: {p}" for p in problems),
            },
            raw=True,
        )

    async def cmd_connect(self, argv: list[str]) -> None:
        parser = _parser("%silo connect")
        parser.add_argument("profile")
        parser.add_argument("--as", dest="name")
        parser.add_argument("--cwd")
        parser.add_argument("--new", action="store_true")
        parser.add_argument("--resume", dest="resume_id")
        parser.add_argument("--fresh", action="store_true")
        parser.add_argument("--discard", action="store_true")
        parser.add_argument("--bg", action="store_true")
        args = parser.parse_args(argv)
        name = args.name or args.profile.replace("-", "_")  # profile ids may hold "-"; variables may not
        if not name.isidentifier():
            raise UsageError(
                f"%silo connect: --as {name!r} must be a Python identifier (it becomes a variable)."
            )
        await self.connect(
            name,
            args.profile,
            cwd=args.cwd,
            new=args.new,
            resume_id=args.resume_id,
            fresh=args.fresh,
            discard=args.discard,
            background=args.bg,
        )

    async def connect(
        self,
        name: str,
        profile_id: str,
        *,
        cwd: str | None = None,
        new: bool = False,
        resume_id: str | None = None,
        fresh: bool = False,
        discard: bool = False,
        background: bool = False,
    ) -> None:
        existing = self.connections.get(name)
        plain = not (new or resume_id or fresh or discard or cwd)
        if (
            existing is not None
            and plain
            and existing.profile_id == profile_id
            and existing.handle is not None
            and existing.handle.is_live
        ):
            display(existing.box)
            self.last_name = name
            return
        if existing is not None:
            # Let the old agent go before the same session is resumed in a new one.
            self._drop(existing)
            if existing.handle is not None:
                await existing.handle.aclose()
        resume: dict[str, Any] | None = None
        session_id = resume_id
        if session_id is None and not new:
            record = self.records.get(name)
            if record is not None and record.get("profile") == profile_id:
                session_id = record["session_id"]
        if session_id is not None:
            resume = {
                "session_id": session_id,
                "start_fresh": fresh or discard,
                "transcript": "discard" if discard else "carry",
            }
        connection = Connection(name=name, profile_id=profile_id)
        self.connections[name] = connection
        self.last_name = name
        status_id = f"silo-connect-{id(connection)}"
        display(
            {
                "text/plain": f"connecting to {profile_id}…",
                "text/html": f"<i>connecting to {html.escape(profile_id)}…</i>",
            },
            raw=True,
            display_id=status_id,
        )
        coroutine = self._connect(connection, status_id, cwd=cwd, resume=resume)
        if background:
            connection.task = asyncio.get_running_loop().create_task(coroutine)
            return
        await coroutine
        if connection.handle is None:
            raise UsageError(connection.error or "connect failed")

    async def _connect(
        self, connection: Connection, status_id: str, *, cwd: str | None, resume: dict[str, Any] | None
    ) -> None:
        try:
            handle = await self.service.sessions.connect(connection.profile_id, cwd=cwd, resume=resume)
        except (AgentSessionError, ValueError) as exc:
            connection.error = _one_line(exc)
            update_display(
                {
                    "text/plain": f"error: {connection.error}",
                    "text/html": f"<span style='color:#c0392b'>✗ {html.escape(connection.error)}</span>",
                },
                raw=True,
                display_id=status_id,
            )
            return
        connection.handle = handle
        self.shell.user_ns[connection.name] = handle
        if handle.session_id:
            self.records.put(connection.name, profile_id=connection.profile_id, session_id=handle.session_id)
        connection.box = self._panel(connection, handle)
        update_display(connection.box, display_id=status_id)
        if handle.resume_outcome == "journal-only":
            print(
                f"{handle.label} can neither resume nor load session {handle.session_id}: "
                "its transcript comes from the journal only. "
                f"Continue with %silo connect {connection.profile_id} --as {connection.name} --fresh"
            )

    def _panel(self, connection: Connection, handle: AgentSessionHandle) -> Any:
        from silo_nb.notebook.widgets import SessionPanel
        from silo_nb.notebook.widgets._common import ipw

        panel = SessionPanel(handle, self.service, on_run=lambda text: self._palette_run(connection, text))
        connection.panel = panel
        connection.output = ipw.Output()
        return ipw.VBox([panel, connection.output])

    def _palette_run(self, connection: Connection, text: str) -> None:
        """A command from the panel's palette: a background turn shown under the panel."""
        handle, output = connection.handle, connection.output
        if handle is None or output is None:
            return
        from silo_nb.notebook.widgets import TurnView

        view = TurnView(text, label=handle.agent_name, on_stop=handle.cancel)
        output.append_display_data(view)

        def publish(data: dict[str, str], _metadata: dict[str, Any]) -> None:
            output.outputs = ()
            output.append_display_data(html_object(data["text/html"]))

        turn = turns.Turn(
            handle,
            [{"type": "text", "text": text}],
            view,
            "",
            {},
            background=True,
            panel=connection.panel,
            publish=publish,
        )
        turns.track(asyncio.get_running_loop().create_task(turns.run_turn(turn)))

    def _drop(self, connection: Connection) -> None:
        if connection.task is not None and not connection.task.done():
            connection.task.cancel()
        if connection.panel is not None:
            with contextlib.suppress(Exception):
                connection.panel.close_all()
        if connection.handle is not None:
            connection.handle.dispose()
        self.connections.pop(connection.name, None)

    async def cmd_disconnect(self, argv: list[str]) -> None:
        parser = _parser("%silo disconnect")
        parser.add_argument("name")
        args = parser.parse_args(argv)
        connection = self._connection(args.name)
        handle = connection.handle
        self._drop(connection)
        if handle is not None:
            await handle.aclose()
        if self.last_name == args.name:
            self.last_name = next(iter(self.connections), None)
        print(f"disconnected {args.name}")

    async def cmd_cancel(self, argv: list[str]) -> None:
        parser = _parser("%silo cancel")
        parser.add_argument("name", nargs="?")
        args = parser.parse_args(argv)
        _, handle = await self._handle(args.name)
        handle.cancel()

    async def cmd_set(self, argv: list[str]) -> None:
        parser = _parser("%silo set")
        parser.add_argument("name")
        parser.add_argument("option")
        parser.add_argument("value")
        args = parser.parse_args(argv)
        _, handle = await self._handle(args.name)
        option = next((o for o in handle.config_options if o.id == args.option), None)
        value: Any = args.value
        if option is not None and option.type == "boolean":
            lowered = args.value.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise UsageError(f'%silo set: "{args.value}" is not true or false for "{option.name}".')
            value = lowered in ("true", "1", "yes", "on")
        await handle.set_config_option(args.option, value)
        current = {o.id: o.current_value for o in handle.config_options}
        print(f"{args.name}: {args.option} = {current.get(args.option)}")

    async def cmd_commands(self, argv: list[str]) -> None:
        parser = _parser("%silo commands")
        parser.add_argument("name", nargs="?")
        args = parser.parse_args(argv)
        _, handle = await self._handle(args.name)
        if not handle.commands:
            print(f"{handle.agent_name} has not announced any commands (yet).")
            return
        for command in handle.commands:
            hint = f" <{command.input.hint}>" if command.input and command.input.hint else ""
            print(f"/{command.name}{hint}  {command.description or ''}".rstrip())

    async def cmd_agents(self, argv: list[str]) -> None:
        _parser("%silo agents").parse_args(argv)
        from silo_nb.notebook.widgets import AgentsList

        display(AgentsList(self.service))

    async def cmd_journal(self, argv: list[str]) -> None:
        parser = _parser("%silo journal")
        parser.add_argument("session_id")
        args = parser.parse_args(argv)
        updates = await self.service.sessions.read_journal(args.session_id)
        if not updates:
            raise UsageError(f"%silo journal: no journal for session {args.session_id!r} in this workspace.")
        turns.display_restored(
            updates, metadata={"session_id": args.session_id}, meta=f"journal of {args.session_id}"
        )

    async def cmd_export(self, argv: list[str]) -> None:
        parser = _parser("%silo export")
        parser.add_argument("name")
        parser.add_argument("path")
        args = parser.parse_args(argv)
        _, handle = await self._handle(args.name)
        path = Path(args.path).expanduser()
        if path.suffix.lower() not in (".md", ".markdown", ".html", ".htm"):
            raise UsageError("%silo export: the path must end in .md or .html")
        updates = await self.service.sessions.read_journal(handle.session_id)
        state = with_status(fold_all(updates), "restored")
        title = handle.title
        meta = f"session {handle.session_id} · {handle.agent_name}"
        if path.suffix.lower() in (".html", ".htm"):
            body = transcript_html(state, title=title, meta=meta)
            text = f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>{body}\n"
        else:
            text = transcript_markdown(state, title=title, meta=meta)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {len(updates)} updates to {path}")

    # -- %%prompt -------------------------------------------------------------------------------------

    async def prompt(self, argline: str, body: str, *, blocking: bool, display_id: str | None = None) -> None:
        """One ``%%prompt`` cell. ``display_id``: a placeholder the (background) cell already displayed."""
        parser = _parser("%%prompt")
        parser.add_argument("name", nargs="?")
        parser.add_argument("--bg", action="store_true")
        parser.add_argument("--rerun", action="store_true")
        parser.add_argument("--attach", nargs="+", default=[])
        parser.add_argument("--file", nargs="+", default=[])
        try:
            args = parser.parse_args(shlex.split(argline))
        except ValueError as exc:
            raise UsageError(f"%%prompt: {exc}") from None
        connection, handle = await self._handle(args.name)
        text = interpolate(body.rstrip("\n"), self.shell.user_ns)
        workspace = self.service.workspace_folder
        try:
            extra = attachment_blocks(
                args.attach,
                self.shell.user_ns,
                embedded=handle.prompt_capabilities.embedded_context,
                workspace=workspace,
            )
            extra += file_blocks(
                args.file, embedded=handle.prompt_capabilities.embedded_context, workspace=workspace
            )
        except ValueError as exc:
            raise UsageError(_one_line(exc)) from None
        if not text.strip() and not extra:
            raise UsageError("%%prompt: the cell is empty — write the prompt on the lines below %%prompt.")
        self.prompt_runs += 1
        cell_id = execute_cell_id(self.shell) or fallback_cell_key(f"{argline}\n{body}", self.prompt_runs)
        metadata: dict[str, Any] = {
            "session_id": handle.session_id,
            "profile_id": connection.profile_id,
            "cell_id": cell_id,
            "name": connection.name,
        }
        if not args.rerun and cell_id not in self.sent_cells:
            earlier = await self._turn_in_journal(handle, cell_id, text)
            if earlier is not None:
                turns.display_restored(
                    earlier,
                    display_id=display_id,
                    metadata={**metadata, "restored": True},
                    meta="restored from the journal — %%prompt --rerun sends it again",
                )
                return
        if handle.resume_outcome == "journal-only":
            raise UsageError(
                f"{handle.label} is journal-only — run %silo connect {connection.profile_id} --as "
                f"{connection.name} --fresh to continue in a new session."
            )
        # Attachments were already shaped for this agent (embedded only when it accepts embedded context).
        blocks: list[Any] = ([{"type": "text", "text": text}] if text.strip() else []) + extra
        self.sent_cells.add(cell_id)
        background = args.bg or not blocking
        turn = turns.start_turn(
            handle,
            blocks,
            prompt_text=text,
            metadata=metadata,
            panel=connection.panel,
            background=background,
            display_id=display_id,
        )
        if background and blocking:
            turns.track(asyncio.get_running_loop().create_task(turns.run_turn(turn)))
            return
        if background:
            await turns.run_turn(turn)  # already a background task (see SiloMagics.prompt)
            return
        self.blocking_sessions.add(handle.id)
        waker = asyncio.get_running_loop().create_task(_waker())
        try:
            await turns.run_turn(turn)
        finally:
            waker.cancel()
            self.blocking_sessions.discard(handle.id)

    async def _turn_in_journal(
        self, handle: AgentSessionHandle, cell_id: str, text: str
    ) -> list[AgentSessionUpdate] | None:
        journal = await self.service.sessions.read_journal(
            handle.session_id, workspace_id=handle.workspace_id
        )
        found: list[AgentSessionUpdate] | None = None
        for turn in split_turns(journal):
            first = turn[0]
            if (
                first.kind == "user_message_chunk"
                and first.raw.get("cellId") == cell_id
                and first.text == text
            ):
                found = turn
        return found


async def _waker() -> None:
    # Keeps the loop turning so a SIGINT (the stop button) is noticed promptly (ipykernel #881).
    while True:  # noqa: ASYNC110 - the wake-ups are the point; there is nothing to wait for
        await asyncio.sleep(WAKER_INTERVAL_SECONDS)


# -- the extension ---------------------------------------------------------------------------------------


def _session() -> NotebookSession:
    from IPython import get_ipython

    shell = get_ipython()
    state = getattr(shell, "_silo_nb", None)
    if state is None:
        raise UsageError("silo_nb is not loaded — run %load_ext silo_nb first.")
    assert isinstance(state, NotebookSession)
    return state


async def prompt_cell(argline: str, body: str) -> None:
    """What a transformed ``%%prompt`` cell awaits (blocking mode)."""
    await _session().prompt(argline, body, blocking=True)


async def silo_line(line: str) -> None:
    """What a transformed top-level ``%silo`` line awaits (blocking mode)."""
    await _session().line(line)


def _transform(lines: list[str]) -> list[str]:
    """Rewrite ``%%prompt`` cells and top-level ``%silo`` lines into awaits (see the module docstring)."""
    if not lines:
        return lines
    first = lines[0]
    if first.startswith("%%prompt") and first[len("%%prompt") :][:1] in ("", " ", "\t", "\n"):
        argline = first[len("%%prompt") :].strip()
        with contextlib.suppress(ValueError):
            if "--bg" in shlex.split(argline):
                return lines
        body = "".join(lines[1:])
        return [f"await {_MODULE}.prompt_cell({argline!r}, {body!r})\n"]
    if first.startswith("%%"):
        return lines
    out: list[str] = []
    for line in lines:
        if line.startswith("%silo") and line[len("%silo") :][:1] in ("", " ", "\t", "\n"):
            out.append(f"await {_MODULE}.silo_line({line[len('%silo') :].strip()!r})\n")
        else:
            out.append(line)
    return out


@magics_class
class SiloMagics(Magics):
    """Background-mode fallbacks (``--bg``, older kernels, indented lines): they return at once."""

    @line_magic
    def silo(self, line: str) -> None:
        self._schedule(_session().line(line))

    @cell_magic
    def prompt(self, line: str, cell: str) -> None:
        session = _session()
        # Display now, while the cell runs: output sent after the cell ends is lost to headless runners.
        display_id = turns.show_placeholder("sending the prompt…")
        self._schedule(session.prompt(line, cell, blocking=False, display_id=display_id), display_id)

    @staticmethod
    def _schedule(coroutine: Any, display_id: str | None = None) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            coroutine.close()
            raise UsageError("silo_nb needs a running event loop: use it in a Jupyter kernel.") from None
        task = loop.create_task(coroutine)
        turns.track(task)

        def report(done: asyncio.Task[None]) -> None:
            error = None if done.cancelled() else done.exception()
            if error is None:
                return
            if display_id is not None:
                turns.show_error(display_id, _one_line(error))
            else:
                log.warning("%%silo failed: %s", _one_line(error))

        task.add_done_callback(report)


def load_ipython_extension(shell: InteractiveShell) -> None:
    if getattr(shell, "_silo_nb", None) is None:
        shell._silo_nb = NotebookSession(shell)  # type: ignore[attr-defined]
    shell.register_magics(SiloMagics)
    if _can_block(shell) and _transform not in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.append(_transform)


def unload_ipython_extension(shell: InteractiveShell) -> None:
    if _transform in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.remove(_transform)
