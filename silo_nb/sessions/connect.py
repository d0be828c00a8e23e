"""``connect`` (Silo §2.1): the one place that builds a session handle, and the in-place resume.

- Resolve the profile, open the agent's transport (a subprocess; or what the service's
  ``transport_factory`` returns — tests run agents in-process), ``initialize``, ``authenticate`` when a
  sign-in method applies (``_auth.choose_method``; Silo never authenticates), then route:
  ``session/new``; or, with ``resume``, ``session/resume`` → ``session/load`` → journal-only → a fresh
  ``session/new`` for a stale id; or ``start_fresh`` carrying or discarding the old transcript.
- Initialize and session setup are bounded by the profile's ``connect_timeout`` (default 60 s); on any
  failure the error is raised as soon as the agent answered (Silo shuts the agent down first: seconds
  for one that ignores stdin EOF); its shutdown continues in the background; the registry forgets the
  placeholder.
- The handle comes back finished: session id, journal writer, capabilities and options are set through
  its few ``_``-setup methods, here and nowhere else.
- Errors are ``AgentSessionError`` with Silo's wording, the agent's own message and the stderr lines
  that state the cause (``_handshake.py``); a sign-in failure says every way to sign in.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

import anyio

from silo_nb.acp import AcpRpcError, AgentConnection, AgentSpawnError, SubprocessTransport, Transport
from silo_nb.sessions import _journal_lock
from silo_nb.sessions._connect_faults import abandon, request_or_undo
from silo_nb.sessions._handshake import authenticate, initialize, new_session, timed_out
from silo_nb.sessions._host import ConnectHost
from silo_nb.sessions._reconcile import has_conversation_content, last_title, reconcile_load
from silo_nb.sessions.errors import AgentSessionError, AgentSessionInputError
from silo_nb.sessions.handle import AgentSessionHandle
from silo_nb.sessions.journal import JournalFiles
from silo_nb.sessions.models import AgentInfo, AgentSessionRestore
from silo_nb.sessions.profiles import AgentProfile

__all__ = ["Connector"]

log = logging.getLogger("silo_nb.sessions")


class Connector:
    """Builds handles for one ``AgentsService`` (its registry, profiles and journal files)."""

    def __init__(self, host: ConnectHost, journals: JournalFiles) -> None:
        self._host = host
        self._journals = journals

    # -- connect ----------------------------------------------------------------------------------

    def resolve_profile(self, profile_id: str) -> AgentProfile:
        profiles = self._host.profiles
        profile = profiles.get(profile_id) if isinstance(profile_id, str) else None
        if profile is None:
            known = ", ".join(p.id for p in profiles.list())
            hint = f" Known profiles: {known}." if known else ""
            if profiles.problems:
                hint += f" (Skipped: {profiles.problems[0]})"
            raise AgentSessionError(f'No agent profile with id "{profile_id}".{hint}')
        if profile.interface != "chat":
            raise AgentSessionError(
                f'Agent profile "{profile.display_label}" is a Terminal profile — '
                "silo_nb connects Chat profiles only."
            )
        return profile

    def _work_dir(self, cwd: str | Path | None) -> Path:
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

    async def connect(
        self,
        profile_id: str,
        *,
        cwd: str | Path | None,
        workspace_id: str | None,
        title: str | None,
        restore: AgentSessionRestore | None,
        auth_method: str | None = None,
    ) -> AgentSessionHandle:
        profile = self.resolve_profile(profile_id)
        workspace = workspace_id or self._host.workspace_id
        work_dir = self._work_dir(cwd)
        self._journals.path(workspace, "probe")  # validates workspace_id before anything starts
        handle = AgentSessionHandle(
            registry=self._host,
            journals=self._journals,
            profile=profile,
            workspace_id=workspace,
            cwd=str(work_dir),
        )
        placeholder: str | None = None
        if restore is not None:
            path = self._journals.path(workspace, restore.session_id)
            _journal_lock.claim(path, restore.session_id, handle)  # refused while open in this kernel
            # Silo restores the last title from its persisted status; here the journal is that record.
            title = title or last_title(self._journals.read(path))
            placeholder = handle.id = "chat:" + restore.session_id
            self._host._register(self._info(handle, title=title, resume_state="resuming", restore=restore))
        # One budget for every wait of the connect: initialize, routing, and applying session_config.
        deadline = anyio.current_time() + profile.connect_timeout
        busy = _journal_lock.connecting(path) if restore is not None else contextlib.nullcontext()
        try:
            with busy:  # a second connect to this session meanwhile is refused (claim)
                result = await self._handshake(
                    handle, profile, restore, workspace, deadline, auth_method=auth_method
                )
        except BaseException:
            if placeholder is not None:
                self._host._unregister(placeholder)
            raise
        handle._finish_setup(result)
        if handle._writer is not None:  # noted under its final id (a new session, an adopted id)
            _journal_lock.claim(handle._writer.path, handle.session_id, handle, refuse=False)
        if placeholder is not None and placeholder != handle.id:
            self._host._unregister(placeholder)
        state = {"journal-only": "journal-only", "resumed": "resumed"}.get(handle.resume_outcome, "live")
        self._host._register(
            self._info(handle, title=handle._title or (title if restore else None), resume_state=state),
            handle=handle,
        )
        if handle.resume_outcome == "new" and handle.is_live:
            try:
                with anyio.fail_at(deadline):
                    await self._apply_session_config(handle, profile)
            except TimeoutError:
                message = timed_out(profile, handle._connection, while_="applying session_config")
                await handle.aclose()
                raise AgentSessionError(message) from None
            except BaseException:  # the caller gave up (an interrupted cell): it never gets the handle
                handle.dispose()  # unregistered now; the agent and the journal lock go in the background
                raise
        return handle

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
        handle: AgentSessionHandle,
        profile: AgentProfile,
        restore: AgentSessionRestore | None,
        workspace: str,
        deadline: float,
        *,
        auth_method: str | None,
    ) -> dict[str, Any]:
        connection = await self._open(handle, profile)
        try:
            with anyio.fail_at(deadline):
                handle._caps = await initialize(connection, profile)
                await authenticate(handle._caps, connection, profile, auth_method)
                return await self._route(handle, connection, restore, workspace)
        except TimeoutError:
            message = timed_out(profile, connection)
            abandon(handle, self._journals, connection, "connect timed out")
            raise AgentSessionError(message) from None
        except BaseException:
            # Report at once: the agent answered; its shutdown (seconds for one that ignores stdin EOF)
            # goes on in the background, and no process outlives it (see acp/process.py).
            abandon(handle, self._journals, connection, "connect failed")
            raise

    async def _open(self, handle: AgentSessionHandle, profile: AgentProfile) -> AgentConnection:
        requests = {"session/request_permission": handle._on_permission_request}
        notifications = {"session/update": handle._on_session_update}
        try:
            factory = self._host.transport_factory
            if factory is None:
                transport: Transport = await SubprocessTransport.spawn(
                    profile.command, profile.args, env=profile.spawn_env, cwd=handle.cwd
                )
            else:
                transport = await factory(profile, handle.cwd)
            connection = AgentConnection.open(
                transport, request_handlers=requests, notification_handlers=notifications
            )
        except AgentSpawnError as exc:
            raise AgentSessionError(f"Could not start {profile.display_label}: {exc}.") from exc
        connection.on_closed(handle._on_connection_closed)
        handle._connection = connection
        return connection

    async def _new_session(self, handle: AgentSessionHandle, connection: AgentConnection) -> dict[str, Any]:
        caps = handle._caps
        session_id, result = await new_session(connection, handle.cwd, handle.label, caps, handle.profile_id)
        handle._adopt(session_id=session_id, outcome="new")
        return result

    async def _try_resume_or_load(
        self, handle: AgentSessionHandle, connection: AgentConnection, session_id: str
    ) -> tuple[str, dict[str, Any]] | None:
        params = {"sessionId": session_id, "cwd": handle.cwd, "mcpServers": []}
        caps = handle._caps
        for method, advertised in (("session/resume", caps.can_resume_call), ("session/load", caps.can_load)):
            if not advertised:
                continue
            try:
                result = await request_or_undo(handle, connection, method, params)
            except AcpRpcError as exc:
                log.info("%s %s failed: %s", handle.label, method, exc.agent_message())
                continue
            return method, result if isinstance(result, dict) else {}
        return None

    async def _route(
        self,
        handle: AgentSessionHandle,
        connection: AgentConnection,
        restore: AgentSessionRestore | None,
        workspace: str,
    ) -> dict[str, Any]:
        journals = self._journals
        if restore is None or restore.start_fresh:
            seed: list[str] = []
            old_path = journals.path(workspace, restore.session_id) if restore is not None else None
            if restore is not None and old_path is not None:
                if restore.transcript == "discard":
                    journals.discard(old_path)
                else:
                    seed = journals.read(old_path)
            result = await self._new_session(handle, connection)
            new_path = journals.path(workspace, handle.session_id)
            handle._attach_writer(
                journals.writer(new_path, seed, rewrite=bool(seed) and new_path != old_path)
            )
            return result

        old_path = journals.path(workspace, restore.session_id)
        prior = journals.read(old_path)
        handle._attach_writer(journals.writer(old_path, prior))
        handle._adopt(session_id=restore.session_id, outcome="new")
        outcome = await self._try_resume_or_load(handle, connection, restore.session_id)
        if outcome is not None:
            handle._adopt(session_id=restore.session_id, outcome="resumed")
            self._after_load(handle, outcome, prior)
            return outcome[1]
        if has_conversation_content(prior):
            handle._adopt(session_id=restore.session_id, outcome="journal-only")
            await connection.aclose("journal-only")
            return {}
        # Stale id with nothing worth keeping: start over, with an empty journal.
        assert handle._writer is not None
        handle._writer.abandon()
        journals._release_writer(handle._writer)
        handle._attach_writer(None)
        result = await self._new_session(handle, connection)
        handle._attach_writer(journals.writer(journals.path(workspace, handle.session_id), []))
        return result

    def _after_load(
        self, handle: AgentSessionHandle, outcome: tuple[str, dict[str, Any]], prior: list[str]
    ) -> None:
        """A load's replay replaces the journal (reconciled once); an adopted id re-keys the file."""
        method, result = outcome
        writer = handle._writer
        if method != "session/load" or writer is None:
            return
        reconcile_load(writer, prior)
        adopted = result.get("sessionId")
        if isinstance(adopted, str) and adopted and adopted != handle.session_id:
            snapshot = writer.snapshot_lines()
            writer.flush()
            self._journals._release_writer(writer)
            path = self._journals.path(handle.workspace_id, adopted)
            handle._writer = None
            handle._attach_writer(self._journals.writer(path, snapshot, rewrite=True))
            handle._adopt(session_id=adopted, outcome=handle.resume_outcome)

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
        old = handle._connection
        profile = handle._profile
        handle._turns.handshaking = True
        try:
            connection = await self._open(handle, profile)
            try:
                with anyio.fail_after(profile.connect_timeout):
                    handle._caps = await initialize(connection, profile)
                    await authenticate(handle._caps, connection, profile, None)
                    prior = handle._writer.snapshot_lines() if handle._writer is not None else []
                    outcome = await self._try_resume_or_load(handle, connection, handle.session_id)
                if outcome is None:
                    raise AgentSessionError(
                        f"{handle.label} could neither resume nor load {handle.session_id}."
                    )
            except BaseException:
                handle._connection = old
                await connection.aclose("resume failed")
                raise
            self._after_load(handle, outcome, prior)
            if old is not None:
                await old.aclose("replaced by an in-place resume")
            handle._options.adopt_result(outcome[1], notify=False)
            handle._options.listeners.emit()  # as before the redesign: the session was re-established
        finally:
            handle._turns.handshaking = False
        handle._turns.reset()
        self._host._resumed_in_place(handle.id, handle.session_id)
