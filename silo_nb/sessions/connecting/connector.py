"""``connect`` (Silo §2.1): the one place that builds a session handle, and the in-place resume.

- Resolve the profile, open the agent's transport (a subprocess; or what the service's
  ``transport_factory`` returns — tests run agents in-process), ``initialize``, ``authenticate`` when a
  sign-in method applies (``sign_in.choose_method``; Silo never authenticates), then route:
  ``session/new``; or, with ``resume``, ``session/resume`` → ``session/load`` → journal-only → a fresh
  ``session/new`` for a stale id; or ``start_fresh`` carrying or discarding the old transcript; or
  (``fork``, ``handle.fork()``) ``session/fork`` of a session in a new process of its profile, the fork's
  journal starting as a copy of the parent's.
- Every set-up request carries the session's ``systemPrompt`` where the agent takes one
  (``system_prompt.py``); an agent refusing it fails the connect in one line naming the profile.
- Initialize and session setup are bounded by the profile's ``connect_timeout`` (default 60 s); on any
  failure the error is raised as soon as the agent answered (Silo shuts the agent down first: seconds
  for one that ignores stdin EOF); its shutdown continues in the background; the registry forgets the
  placeholder.
- The session's parts (``session/core.SessionCore``) are wired here and nowhere else, through their
  public methods (``SessionWiring``, ``JournalSlot``); the handle, their face, comes back finished.
- Errors are ``AgentSessionError`` with Silo's wording, the agent's own message and the stderr lines
  that state the cause (``handshake.py``); a sign-in failure says every way to sign in.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from silo_nb.acp import (
    AcpConnectionClosed,
    AcpRpcError,
    AgentConnection,
    AgentSpawnError,
    SubprocessTransport,
    Transport,
)
from silo_nb.model import (
    AgentInfo,
    AgentSessionError,
    AgentSessionInputError,
    AgentSessionRestore,
)
from silo_nb.sessions.agent_pins import AgentPinError, pinned_command
from silo_nb.sessions.connecting.connect_faults import abandon, request_or_undo
from silo_nb.sessions.connecting.handshake import (
    authenticate,
    initialize,
    new_session,
    refused_error,
    timed_out,
)
from silo_nb.sessions.host import ConnectHost
from silo_nb.sessions.journal import JournalFiles
from silo_nb.sessions.journal.reconcile import (
    has_conversation_content,
    last_commands,
    last_title,
    reconcile_load,
)
from silo_nb.sessions.mcp_servers import McpServerConfig, wire_servers
from silo_nb.sessions.profiles import AgentProfile
from silo_nb.sessions.session.core import SessionCore
from silo_nb.sessions.session.handle import AgentSessionHandle
from silo_nb.sessions.system_prompt import NOTEBOOK_GUIDANCE, SystemPrompt, SystemPromptMode
from silo_nb.updates import (
    parse_commands,
)

__all__ = ["Connector"]

log = logging.getLogger("silo_nb.sessions")


class Connector:
    """Builds handles for one ``AgentsService`` (its status board, profiles and journal files)."""

    def __init__(self, host: ConnectHost, journals: JournalFiles) -> None:
        self._host = host
        self._journals = journals

    # -- connect ----------------------------------------------------------------------------------

    def resolve_profile(self, profile_id: str) -> AgentProfile:
        profiles = self._host.profiles
        try:
            profile = profiles.get(profile_id) if isinstance(profile_id, str) else None
        except AgentPinError as exc:  # an unpinned or malformed spec given for a profile id
            raise AgentSessionError(str(exc)) from None
        if profile is None:
            known = ", ".join(p.id for p in profiles.list())
            hint = f" Known profiles: {known}." if known else ""
            problem = profiles.problems.about(profile_id) if isinstance(profile_id, str) else None
            if problem is not None:
                hint += f" (Skipped: {problem})"
            raise AgentSessionError(f'No agent profile with id "{profile_id}".{hint}')
        if profile.interface != "chat":
            raise AgentSessionError(
                f'Agent profile "{profile.display_label}" is a Terminal profile — '
                "silo_nb connects Chat profiles only."
            )
        return profile

    def work_dir(self, cwd: str | Path | None) -> Path:
        """The folder a session runs in: ``cwd`` (relative to the workspace) or the workspace itself."""
        folder = self._host.workspace_folder
        if not folder.is_dir():
            raise AgentSessionError("No workspace to connect the Chat session in.")
        work_dir = Path(cwd).expanduser() if cwd is not None else folder
        if not work_dir.is_absolute():
            work_dir = (folder / work_dir).resolve()
        if not work_dir.is_dir():
            raise AgentSessionInputError(
                f"cwd {str(work_dir)!r} is not a folder — pass an existing directory."
            )
        return work_dir

    def _extra_folders(self, profile: AgentProfile) -> list[Path]:
        """The profile's ``additional_directories`` that exist, resolved (relative: to the workspace)."""
        found: list[Path] = []
        for entry in profile.additional_directories:
            folder = Path(entry).expanduser()
            folder = (folder if folder.is_absolute() else self._host.workspace_folder / folder).resolve()
            if folder.is_dir():
                found.append(folder)
            else:
                log.warning(
                    "%s: additional directory %s is not a folder; left out", profile.display_label, entry
                )
        return found

    async def connect(
        self,
        profile_id: str,
        *,
        cwd: str | Path | None,
        workspace_id: str | None,
        title: str | None,
        restore: AgentSessionRestore | None,
        auth_method: str | None = None,
        mcp_servers: Sequence[McpServerConfig] = (),
        system_prompt: str | None = None,
        system_prompt_mode: str | None = None,
        notebook_guidance: bool = False,
    ) -> AgentSessionHandle:
        profile = self.resolve_profile(profile_id)
        prompt = self.system_prompt(profile, system_prompt, system_prompt_mode, notebook_guidance)
        workspace = workspace_id or self._host.workspace_id
        work_dir = self.work_dir(cwd)
        # Sandboxed, the session's folders are its working copy alone: the client's fs methods and
        # terminals serve no more than the sandbox shows (additional_directories are left out).
        sandboxed = self._host.sandbox is not None
        folders = (work_dir,) if sandboxed else (work_dir, *self._extra_folders(profile))
        if sandboxed and profile.additional_directories:
            log.warning("%s: additional_directories are left out in a sandbox", profile.display_label)
        journals, board = self._journals, self._host.board
        # Validates workspace_id, and refuses a data folder another user could change, before anything starts.
        journals.check(journals.path(workspace, "probe"), folder_only=True)
        core = SessionCore(
            registry=board,
            journals=journals,
            profile=profile,
            workspace_id=workspace,
            cwd=str(work_dir),
            folders=folders,
            extra_mcp_servers=tuple(mcp_servers),
            system_prompt=prompt,
            sandbox=self._host.sandbox,
        )
        return await self._connect(core, title=title, restore=restore, auth_method=auth_method)

    @staticmethod
    def system_prompt(
        profile: AgentProfile, text: str | None, mode: str | None, notebook_guidance: bool
    ) -> SystemPrompt:
        """The session's ``systemPrompt`` wish: ``text`` and ``mode`` (else the profile's), and the notebook
        guidance for a kernel session (unless the profile's ``notebook_guidance`` is false)."""
        if text is not None and not isinstance(text, str):
            raise AgentSessionInputError(
                f'system_prompt must be text, not {type(text).__name__} — pass a string (or "" for none).'
            )
        asked = mode if mode is not None else profile.system_prompt_mode
        modes: dict[str, SystemPromptMode] = {"append": "append", "override": "override"}
        if asked not in modes:
            raise AgentSessionInputError(
                f"system_prompt_mode {asked!r} is not one of append, override — pass one of them."
            )
        guidance = NOTEBOOK_GUIDANCE if notebook_guidance and profile.notebook_guidance else None
        return SystemPrompt(text if text is not None else profile.system_prompt, modes[asked], guidance)

    async def _connect(
        self,
        core: SessionCore,
        *,
        title: str | None,
        restore: AgentSessionRestore | None,
        auth_method: str | None,
        fork_of: AgentSessionHandle | None = None,
    ) -> AgentSessionHandle:
        """Open ``core``'s session (new, restored, or a fork of ``fork_of``) and register its handle."""
        profile, workspace = core.profile, core.workspace_id
        journals, board = self._journals, self._host.board
        handle = AgentSessionHandle(core)
        core.forker = self.fork
        placeholder: str | None = None
        if restore is not None:
            path = journals.path(workspace, restore.session_id)
            journals.locks.claim(path, restore.session_id, handle)  # refused while open in this kernel
            journals.check(path)  # a link, a FIFO: refused in one line, never read through
            # Silo restores the last title from its persisted status; here the journal is that record.
            title = title or last_title(journals.lines(path))
            placeholder = core.id = "chat:" + restore.session_id
            board.register(self._info(handle, title=title, resume_state="resuming", restore=restore))
        # One budget for every wait of the connect: initialize, routing, and applying session_config.
        deadline = anyio.current_time() + profile.connect_timeout
        busy = journals.locks.connecting(path) if restore is not None else contextlib.nullcontext()
        try:
            with busy:  # a second connect to this session meanwhile is refused (claim)
                result = await self._handshake(
                    core, restore, workspace, deadline, auth_method=auth_method, fork_of=fork_of
                )
        except BaseException:
            if placeholder is not None:
                board.unregister(placeholder)
            raise
        core.finish_setup(result)
        writer = core.journal.writer
        if writer is not None:  # noted under its final id (a new session, an adopted id)
            journals.locks.claim(writer.path, handle.session_id, handle, refuse=False)
        if placeholder is not None and placeholder != handle.id:
            board.unregister(placeholder)
        state = {"journal-only": "journal-only", "resumed": "resumed"}.get(handle.resume_outcome, "live")
        board.register(
            self._info(
                handle, title=core.title or (title if restore or fork_of else None), resume_state=state
            ),
            handle=handle,
        )
        if handle.resume_outcome == "new" and handle.is_live and fork_of is None:
            try:
                with anyio.fail_at(deadline):
                    await self._apply_session_config(handle, profile)
            except TimeoutError:
                message = timed_out(profile, core.wiring.connection, while_="applying session_config")
                await handle.aclose()
                raise AgentSessionError(message) from None
            except BaseException:  # the caller gave up (an interrupted cell): it never gets the handle
                handle.dispose()  # unregistered now; the agent and the journal lock go in the background
                raise
        return handle

    # -- fork -------------------------------------------------------------------------------------

    async def fork(
        self,
        parent: AgentSessionHandle,
        *,
        title: str | None = None,
        mcp_servers: Sequence[McpServerConfig] = (),
        system_prompt: str | None = None,
        system_prompt_mode: str | None = None,
        notebook_guidance: bool = False,
        cwd: str | None = None,
    ) -> AgentSessionHandle:
        """``session/fork`` of ``parent``'s session, in a new agent process of the same profile: a new
        handle whose journal starts as a copy of the parent's (``handle.fork``). The fork keeps the
        parent's system prompt unless ``system_prompt`` / ``system_prompt_mode`` say otherwise, and works
        in the parent's folder unless ``cwd`` names another (a ``fork_grid`` cell's own working copy)."""
        parent_core = parent.core
        label = parent.label
        if not parent_core.wiring.caps.can_fork:
            raise AgentSessionError(
                f"{label} does not offer session/fork (its sessionCapabilities.fork) — connect a new "
                f"session instead, or carry this transcript: resume={{'session_id': "
                f"'{parent.session_id}', 'start_fresh': True}}."
            )
        if not parent.session_id:
            raise AgentSessionError(f"{label}: this session has no id yet to fork — connect it first.")
        profile = parent_core.profile
        asked = parent_core.system_prompt
        if system_prompt is not None or system_prompt_mode is not None or notebook_guidance:
            asked = self.system_prompt(
                profile,
                system_prompt if system_prompt is not None else asked.text,
                system_prompt_mode if system_prompt_mode is not None else asked.mode,
                notebook_guidance,
            )
        elif asked.guidance is not None:  # the notebook guidance only with the fork's own notebook tools
            asked = SystemPrompt(asked.text, asked.mode, None)
        core = SessionCore(
            registry=self._host.board,
            journals=self._journals,
            profile=profile,
            workspace_id=parent.workspace_id,
            cwd=cwd if cwd is not None else parent.cwd,
            folders=parent_core.folders,
            extra_mcp_servers=tuple(mcp_servers),
            system_prompt=asked,
            sandbox=self._host.sandbox,
        )
        title = title or f"{parent.title} · fork"
        return await self._connect(core, title=title, restore=None, auth_method=None, fork_of=parent)

    async def _fork_route(
        self, core: SessionCore, connection: AgentConnection, parent: AgentSessionHandle
    ) -> dict[str, Any]:
        """``session/fork`` on the new connection; the fork's journal starts as the parent's lines."""
        journals = self._journals
        parent_path = journals.path(parent.workspace_id, parent.session_id)
        seed = journals.read(parent_path)  # a live parent's writer is flushed first
        params = {"sessionId": parent.session_id, **self._setup_params(core)}
        try:
            result = await connection.rpc.request("session/fork", params)
        except AcpRpcError as exc:
            raise refused_error(
                f"{core.label} could not fork session {parent.session_id}",
                exc,
                core.profile.id,
                system_prompt="systemPrompt" in params,
            ) from exc
        except AcpConnectionClosed as exc:
            head = f"{core.label} could not fork session {parent.session_id}"
            raise AgentSessionError(f"{head}: {exc}") from exc
        session_id = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(session_id, str) or not session_id:
            raise AgentSessionError(
                f"{core.label} could not fork session {parent.session_id}: session/fork returned no "
                "sessionId (the agent's answer does not follow ACP) — report it to the agent's authors."
            )
        if session_id == parent.session_id:
            raise AgentSessionError(
                f"{core.label} could not fork session {parent.session_id}: session/fork answered the "
                "parent's own id — report it to the agent's authors."
            )
        core.wiring.adopt(session_id, "new")
        core.journal.attach(journals.writer(journals.path(core.workspace_id, session_id), seed, rewrite=True))
        assert isinstance(result, dict)
        return result

    def _info(
        self,
        handle: AgentSessionHandle,
        *,
        title: str | None,
        resume_state: Any,
        restore: AgentSessionRestore | None = None,
    ) -> AgentInfo:
        placeholder = restore is not None
        return AgentInfo(
            id=handle.id,
            workspace_id=handle.workspace_id,
            title=title or handle.label,
            activity="dead" if resume_state == "journal-only" else "idle",
            session_id=restore.session_id if restore is not None else handle.session_id,
            can_resume=False if placeholder else handle.can_resume,
            agent_name=None if placeholder else handle.agent_name,
            agent_id=handle.agent_id,
            chat_resume_state=resume_state,
            cwd=handle.cwd,
            journal_problem=handle.journal_problem,
        )

    async def _handshake(
        self,
        core: SessionCore,
        restore: AgentSessionRestore | None,
        workspace: str,
        deadline: float,
        *,
        auth_method: str | None,
        fork_of: AgentSessionHandle | None = None,
    ) -> dict[str, Any]:
        profile = core.profile
        connection = await self._open(core)
        try:
            with anyio.fail_at(deadline):
                core.wiring.initialized(await initialize(connection, profile))
                await authenticate(core.wiring.caps, connection, profile, auth_method)
                if fork_of is not None:
                    return await self._fork_route(core, connection, fork_of)
                return await self._route(core, connection, restore, workspace)
        except TimeoutError:
            message = timed_out(profile, connection)
            abandon(core, connection, "connect timed out")
            raise AgentSessionError(message) from None
        except BaseException:
            # Report at once: the agent answered; its shutdown (seconds for one that ignores stdin EOF)
            # goes on in the background, and no process outlives it (see acp/process.py).
            abandon(core, connection, "connect failed")
            raise

    async def _open(self, core: SessionCore) -> AgentConnection:
        profile = core.profile
        requests, notifications = core.inbound.handlers()
        try:
            factory = self._host.transport_factory
            try:  # a pinned agent (profile ``agent``): its installed entry's command (issue 33)
                command, args = await pinned_command(profile)
            except AgentPinError as exc:
                raise AgentSessionError(f"Could not start {profile.display_label}: {exc}.") from None
            if factory is None:
                transport: Transport = await SubprocessTransport.spawn(
                    command, args, env=profile.spawn_env, cwd=core.cwd, sandbox=core.sandbox
                )
            else:
                started = (
                    profile
                    if profile.agent is None
                    else profile.model_copy(update={"command": command, "args": args})
                )
                transport = await factory(started, core.cwd)
            connection = AgentConnection.open(
                transport, request_handlers=requests, notification_handlers=notifications
            )
        except AgentSpawnError as exc:
            raise AgentSessionError(f"Could not start {profile.display_label}: {exc}.") from exc
        connection.on_closed(core.inbound.on_connection_closed)
        core.wiring.connected(connection)
        return connection

    def _setup_params(self, core: SessionCore, session_id: str | None = None) -> dict[str, Any]:
        """What ``session/new``, ``load`` and ``resume`` carry: the folders and the MCP servers."""
        caps = core.wiring.caps
        servers, skipped = wire_servers(
            (*core.profile.mcp_servers, *core.extra_mcp_servers), http=caps.mcp_http, sse=caps.mcp_sse
        )
        for warning in skipped:
            log.warning("%s: %s", core.label, warning)
        params: dict[str, Any] = {"cwd": core.cwd, "mcpServers": servers}
        if session_id is not None:
            params = {"sessionId": session_id, **params}
        extra = [str(folder) for folder in core.folders[1:]]
        if extra and caps.additional_directories:
            params["additionalDirectories"] = extra
        refused = core.system_prompt.refusal(caps)
        if refused is not None:
            log.warning("%s: the system prompt is not sent — %s", core.label, refused)
        system_prompt = core.system_prompt.wire(caps)
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        return params

    async def _new_session(self, core: SessionCore, connection: AgentConnection) -> dict[str, Any]:
        caps = core.wiring.caps
        params = self._setup_params(core)
        session_id, result = await new_session(
            connection, params, core.label, caps, core.profile.id, system_prompt="systemPrompt" in params
        )
        core.wiring.adopt(session_id, "new")
        return result

    async def _try_resume_or_load(
        self, core: SessionCore, connection: AgentConnection, session_id: str
    ) -> tuple[str, dict[str, Any]] | None:
        params = self._setup_params(core, session_id)
        caps = core.wiring.caps
        for method, advertised in (("session/resume", caps.can_resume_call), ("session/load", caps.can_load)):
            if not advertised:
                continue
            try:
                result = await request_or_undo(core, connection, method, params)
            except AcpRpcError as exc:
                log.info("%s %s failed: %s", core.label, method, exc.agent_message())
                continue
            return method, result if isinstance(result, dict) else {}
        return None

    async def _route(
        self,
        core: SessionCore,
        connection: AgentConnection,
        restore: AgentSessionRestore | None,
        workspace: str,
    ) -> dict[str, Any]:
        journals, slot = self._journals, core.journal
        if restore is None or restore.start_fresh:
            seed: list[str] = []
            old_path = journals.path(workspace, restore.session_id) if restore is not None else None
            if restore is not None and old_path is not None:
                # The lock a resume takes: refused while another kernel writes that journal.
                with journals.holding(old_path, restore.session_id):
                    if restore.transcript == "discard":
                        journals.discard(old_path)
                    else:
                        seed = journals.read(old_path)
            result = await self._new_session(core, connection)
            new_path = journals.path(workspace, core.session_id)
            slot.attach(journals.writer(new_path, seed, rewrite=bool(seed) and new_path != old_path))
            return result

        old_path = journals.path(workspace, restore.session_id)
        writer = journals.writer(old_path)  # the journal as it is, unread: a resume holds none of it
        mark = writer.mark()
        slot.attach(writer)
        core.wiring.adopt(restore.session_id, "new")
        outcome = await self._try_resume_or_load(core, connection, restore.session_id)
        if not core.commands:  # what the agent offered last time, until it says so again
            core.commands = parse_commands(last_commands(journals.lines(old_path)))
            core.command_listeners.emit()
        if outcome is not None:
            core.wiring.adopt(restore.session_id, "resumed")
            self._after_load(core, outcome, mark)
            return outcome[1]
        if has_conversation_content(journals.lines(old_path)):
            core.wiring.adopt(restore.session_id, "journal-only")
            await connection.aclose("journal-only")
            return {}
        # Stale id with nothing worth keeping: start over, with an empty journal.
        slot.abandon()
        result = await self._new_session(core, connection)
        slot.attach(journals.writer(journals.path(workspace, core.session_id), []))
        return result

    def _after_load(self, core: SessionCore, outcome: tuple[str, dict[str, Any]], mark: int) -> None:
        """A load's replay (the lines since ``mark``) replaces the journal (reconciled once); an adopted id
        re-keys the file."""
        method, result = outcome
        slot = core.journal
        writer = slot.writer
        if method != "session/load" or writer is None:
            return
        reconcile_load(writer, mark)
        adopted = result.get("sessionId")
        if isinstance(adopted, str) and adopted and adopted != core.session_id:
            snapshot = slot.snapshot_lines()
            slot.hand_back()
            path = self._journals.path(core.workspace_id, adopted)
            slot.attach(self._journals.writer(path, snapshot, rewrite=True))
            core.wiring.adopt(adopted, core.wiring.resume_outcome)

    async def _apply_session_config(self, handle: AgentSessionHandle, profile: AgentProfile) -> None:
        for option_id, value in profile.session_config.items():
            option = next((o for o in handle.config_options if o.id == option_id), None)
            if option is None or value == option.current_value:
                continue
            if option.type == "select" and all(choice.value != value for choice in option.options):
                continue
            try:
                await handle.set_config_option(option_id, value)
            except Exception as exc:
                label = profile.display_label
                log.warning("%s: could not apply session_config %s=%r: %s", label, option_id, value, exc)

    # -- AgentsService.resume ---------------------------------------------------------------------

    async def resume_in_place(self, handle: AgentSessionHandle) -> None:
        """A new process resumes/loads the current id and is swapped in; the old one is shut down."""
        if handle.disposed or not handle.is_live:
            return
        core = handle.core
        profile = core.profile
        old = core.wiring.connection
        core.turns.handshaking = True
        core.turns.opening = False  # what the load replays is delivered live, not kept as an opening
        try:
            connection = await self._open(core)
            try:
                with anyio.fail_after(profile.connect_timeout):
                    core.wiring.initialized(await initialize(connection, profile))
                    await authenticate(core.wiring.caps, connection, profile, None)
                    writer = core.journal.writer
                    mark = writer.mark() if writer is not None else 0
                    core.journal.keep_setup_lines()  # handle.journal stays as it was at connect
                    outcome = await self._try_resume_or_load(core, connection, core.session_id)
                if outcome is None:
                    raise AgentSessionError(f"{core.label} could neither resume nor load {core.session_id}.")
            except BaseException:
                core.wiring.swap(old)
                await connection.aclose("resume failed")
                raise
            self._after_load(core, outcome, mark)
            if old is not None:
                await old.aclose("replaced by an in-place resume")
            core.options.adopt_result(outcome[1], notify=False)
            core.options.listeners.emit()  # as before the redesign: the session was re-established
        finally:
            core.turns.handshaking = False
        core.turns.reset()
        self._host.board.resumed_in_place(core.id, core.session_id)
