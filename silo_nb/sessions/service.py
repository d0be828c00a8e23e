"""``AgentSessionsService``: ``connect`` (Silo's algorithm, §2.1) and ``read_journal``.

- ``connect`` resolves the profile, spawns the agent, sends ``initialize`` and routes the session:
  ``session/new``; or, with ``resume``, ``session/resume`` → ``session/load`` → journal-only → a fresh
  ``session/new`` for a stale id; or ``start_fresh`` carrying or discarding the old transcript.
- Initialize and session setup are bounded by the profile's ``connect_timeout`` (default 60 s), so a
  connect never hangs; on any failure the agent's process group is killed before the error is raised.
- Errors are ``AgentSessionError`` with Silo's wording, the agent's own message and its stderr tail.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from silo_nb.acp import (
    PROTOCOL_VERSION,
    AcpConnectionClosed,
    AcpRpcError,
    AgentConnection,
    AgentSpawnError,
    client_capabilities,
    client_info,
)
from silo_nb.sessions.errors import AgentSessionError, AgentSessionInputError
from silo_nb.sessions.handle import AgentSessionHandle
from silo_nb.sessions.journal import JournalWriter, parse_lines, read_lines
from silo_nb.sessions.models import AgentInfo, AgentSessionRestore, AgentSessionUpdate
from silo_nb.sessions.parse import (
    capability_enabled,
    parse_config_options,
    parse_prompt_capabilities,
    synthesize_legacy_options,
)
from silo_nb.sessions.profiles import AgentProfile
from silo_nb.sessions.storage import journal_path

if TYPE_CHECKING:
    from silo_nb.sessions.agents import AgentsService

__all__ = ["AgentSessionsService", "backfill_user_prompt_timestamps", "has_conversation_content"]

log = logging.getLogger("silo_nb.sessions")

_METADATA_KINDS = frozenset({"available_commands_update", "session_info_update", "current_mode_update"})


def has_conversation_content(lines: list[str]) -> bool:
    """True when some line is more than metadata (commands, titles, modes)."""
    return any(update.kind not in _METADATA_KINDS for update in parse_lines(lines))


def backfill_user_prompt_timestamps(prior: list[str], replayed: list[str]) -> list[str]:
    """Copy prior user-prompt timestamps onto the replay's user chunks, matched by position.

    silo_nb also carries the notebook cell a prompt came from (``raw.cellId``), so a restored notebook
    still finds each cell's turn after an agent's replay replaced the journal.
    """
    stamps: list[str | None] = []
    cells: list[str | None] = []
    for line in prior:
        with contextlib.suppress(json.JSONDecodeError):
            value = json.loads(line)
            if isinstance(value, dict) and value.get("kind") == "user_message_chunk":
                stamp = value.get("timestamp")
                stamps.append(stamp if isinstance(stamp, str) else None)
                raw = value.get("raw")
                cell = raw.get("cellId") if isinstance(raw, dict) else None
                cells.append(cell if isinstance(cell, str) else None)
    out: list[str] = []
    position = 0
    for line in replayed:
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            out.append(line)
            continue
        if isinstance(value, dict) and value.get("kind") == "user_message_chunk":
            stamp = stamps[position] if position < len(stamps) else None
            cell = cells[position] if position < len(cells) else None
            position += 1
            raw = value.get("raw")
            if cell is not None and isinstance(raw, dict) and "cellId" not in raw:
                value["raw"] = {**raw, "cellId": cell}
                if stamp is None or "timestamp" in value:
                    out.append(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
                    continue
            if stamp is not None and "timestamp" not in value:
                ordered: dict[str, Any] = {}
                for key, item in value.items():
                    if key in ("toolCall", "plan", "usage", "raw") and "timestamp" not in ordered:
                        ordered["timestamp"] = stamp
                    ordered[key] = item
                ordered.setdefault("timestamp", stamp)
                out.append(json.dumps(ordered, ensure_ascii=False, separators=(",", ":")))
                continue
        out.append(line)
    return out


def _last_title(lines: list[str]) -> str | None:
    """The most recent title an agent volunteered (``session_info_update``) in a journal."""
    for update in reversed(parse_lines(lines)):
        if update.kind == "session_info_update":
            title = update.raw.get("title")
            if isinstance(title, str) and title.strip():
                return title.strip()
    return None


def _with_stderr(message: str, connection: AgentConnection | None) -> str:
    tail = connection.stderr_tail() if connection is not None else []
    if not tail or any(line in message for line in tail):
        return message
    return message + "\nAgent stderr (last lines):\n" + "\n".join(tail)


class AgentSessionsService:
    """``agents.sessions``: connect to chat agents and read their journals."""

    def __init__(self, agents: AgentsService) -> None:
        self._agents = agents
        self._live_writers: dict[Path, JournalWriter] = {}

    # -- journals ---------------------------------------------------------------------------------

    def _journal_path(self, workspace_id: str, session_id: str) -> Path:
        return journal_path(self._agents.data_dir, workspace_id, session_id)

    async def read_journal(
        self, session_id: str, *, workspace_id: str | None = None
    ) -> list[AgentSessionUpdate]:
        """The journal of ``session_id`` without connecting; ``[]`` when there is none."""
        if not isinstance(session_id, str) or not session_id:
            return []
        path = self._journal_path(workspace_id or self._agents.workspace_id, session_id)
        live = self._live_writers.get(path)
        if live is not None:
            live.flush()
        return parse_lines(read_lines(path))

    def _writer_for(self, path: Path, seed: list[str]) -> JournalWriter:
        writer = JournalWriter(path, seed)
        self._live_writers[path] = writer
        return writer

    def _release_writer(self, writer: JournalWriter) -> None:
        if self._live_writers.get(writer.path) is writer:
            del self._live_writers[writer.path]

    def _discard_journal(self, path: Path) -> None:
        live = self._live_writers.pop(path, None)
        if live is not None:
            live.abandon()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    # -- connect ----------------------------------------------------------------------------------

    def _resolve_profile(self, profile_id: str) -> AgentProfile:
        profiles = self._agents.profiles
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

    async def connect(
        self,
        profile_id: str,
        *,
        cwd: str | os.PathLike[str] | None = None,
        workspace_id: str | None = None,
        title: str | None = None,
        resume: AgentSessionRestore | Mapping[str, Any] | None = None,
    ) -> AgentSessionHandle:
        """Spawn the profile's agent, initialize it and open (or restore) a session."""
        profile = self._resolve_profile(profile_id)
        restore = AgentSessionRestore.model_validate(dict(resume)) if isinstance(resume, Mapping) else resume
        workspace = workspace_id or self._agents.workspace_id
        folder = self._agents.workspace_folder
        if not folder.is_dir():
            raise AgentSessionError("No workspace to connect the Chat session in.")
        work_dir = Path(cwd).expanduser() if cwd is not None else folder
        if not work_dir.is_absolute():
            work_dir = (folder / work_dir).resolve()
        if not work_dir.is_dir():
            raise AgentSessionInputError(
                f"cwd {str(work_dir)!r} is not a folder — pass an existing directory."
            )
        self._journal_path(workspace, "probe")  # validates workspace_id before anything starts

        handle = AgentSessionHandle(
            service=self._agents, profile=profile, workspace_id=workspace, cwd=str(work_dir)
        )
        placeholder_id: str | None = None
        if restore is not None:
            # Silo restores the last title from its persisted status; here the journal is that record.
            title = title or _last_title(read_lines(self._journal_path(workspace, restore.session_id)))
            placeholder_id = "chat:" + restore.session_id
            self._agents._register(
                AgentInfo(
                    id=placeholder_id,
                    workspace_id=workspace,
                    title=title or profile.display_label,
                    activity="idle",
                    can_resume=False,
                    session_id=restore.session_id,
                    agent_id=profile.agent_id,
                    chat_resume_state="resuming",
                    cwd=str(work_dir),
                )
            )
        handle.id = placeholder_id or ""
        try:
            connection = await self._start(handle, profile)
            try:
                with anyio.fail_after(profile.connect_timeout):
                    init = await self._initialize(handle, connection, profile)
                    self._read_capabilities(handle, init)
                    result = await self._route(handle, connection, profile, restore, workspace)
            except TimeoutError:
                await connection.aclose("connect timed out")
                raise AgentSessionError(
                    _with_stderr(
                        f"Could not start {profile.display_label}: "
                        f"no answer within {profile.connect_timeout:g} s "
                        "(raise connect_timeout in the profile if the agent is just slow).",
                        connection,
                    )
                ) from None
            except BaseException:
                if handle._writer is not None:
                    handle._writer.flush()
                    self._release_writer(handle._writer)
                await connection.aclose("connect failed")
                raise
        except BaseException:
            if placeholder_id is not None:
                self._agents._unregister(placeholder_id)
            raise

        handle._handshaking = False
        handle.id = "chat:" + handle.session_id
        if placeholder_id is not None and placeholder_id != handle.id:
            self._agents._unregister(placeholder_id)
        options = parse_config_options(result.get("configOptions"))
        synthesized = () if options else synthesize_legacy_options(result)
        handle._set_config_options(options or synthesized, (o.id for o in synthesized))
        if handle._writer is not None:
            handle.journal = tuple(parse_lines(handle._writer.snapshot_lines()))
        journal_only = handle.resume_outcome == "journal-only"
        self._agents._register(
            AgentInfo(
                id=handle.id,
                workspace_id=workspace,
                title=handle._title
                or (title if restore is not None and title else None)
                or profile.display_label,
                activity="dead" if journal_only else "idle",
                session_id=handle.session_id,
                can_resume=handle.can_resume,
                agent_name=handle.agent_name,
                agent_id=profile.agent_id,
                chat_resume_state=(
                    "journal-only"
                    if journal_only
                    else "resumed"
                    if handle.resume_outcome == "resumed"
                    else "live"
                ),
                cwd=handle.cwd,
            ),
            handle=handle,
        )
        if handle.resume_outcome == "new" and handle.is_live:
            await self._apply_session_config(handle, profile)
        return handle

    async def _start(self, handle: AgentSessionHandle, profile: AgentProfile) -> AgentConnection:
        try:
            connection = await AgentConnection.start(
                profile.command,
                profile.args,
                env=profile.env,
                cwd=handle.cwd,
                request_handlers={"session/request_permission": handle._on_permission_request},
                notification_handlers={"session/update": handle._on_session_update},
            )
        except AgentSpawnError as exc:
            raise AgentSessionError(f"Could not start {profile.display_label}: {exc}.") from exc
        connection.on_closed(handle._on_connection_closed)
        handle._connection = connection
        return connection

    async def _initialize(
        self, handle: AgentSessionHandle, connection: AgentConnection, profile: AgentProfile
    ) -> dict[str, Any]:
        label = profile.display_label
        try:
            init = await connection.rpc.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientCapabilities": client_capabilities(),
                    "clientInfo": client_info(),
                },
            )
        except AcpRpcError as exc:
            raise AgentSessionError(
                _with_stderr(f"Could not start {label}: {exc.agent_message()}", connection)
            ) from exc
        except AcpConnectionClosed as exc:
            raise AgentSessionError(f"Could not start {label}: {exc}") from exc
        if not isinstance(init, dict):
            init = {}
        version = init.get("protocolVersion")
        if version != PROTOCOL_VERSION:
            raise AgentSessionError(
                f"Could not start {label}: it speaks ACP protocol version {version!r}; "
                "silo_nb speaks version "
                f"{PROTOCOL_VERSION} — update the agent or its ACP adapter."
            )
        return init

    def _read_capabilities(self, handle: AgentSessionHandle, init: dict[str, Any]) -> None:
        handle.init_result = init
        agent_caps = init.get("agentCapabilities") if isinstance(init.get("agentCapabilities"), dict) else {}
        assert isinstance(agent_caps, dict)
        session_caps = init.get("sessionCapabilities")
        if not isinstance(session_caps, dict):
            session_caps = agent_caps.get("sessionCapabilities")
        if not isinstance(session_caps, dict):
            session_caps = {}
        handle.can_load = capability_enabled(agent_caps.get("loadSession"))
        handle._can_resume_call = capability_enabled(session_caps.get("resume"))
        handle.can_close = capability_enabled(session_caps.get("close"))
        handle.can_list = capability_enabled(session_caps.get("list"))
        handle.can_resume = handle._can_resume_call or handle.can_load
        handle.prompt_capabilities = parse_prompt_capabilities(init)
        info = init.get("agentInfo") if isinstance(init.get("agentInfo"), dict) else {}
        assert isinstance(info, dict)
        name = info.get("title") or info.get("name")
        handle.agent_name = name if isinstance(name, str) and name else handle.label

    async def _new_session(self, handle: AgentSessionHandle, connection: AgentConnection) -> dict[str, Any]:
        try:
            result = await connection.rpc.request("session/new", {"cwd": handle.cwd, "mcpServers": []})
        except AcpRpcError as exc:
            raise AgentSessionError(
                _with_stderr(
                    f"{handle.label} could not start a session (it may need you to sign in first): "
                    f"{exc.agent_message()}",
                    connection,
                )
            ) from exc
        except AcpConnectionClosed as exc:
            raise AgentSessionError(f"{handle.label} could not start a session: {exc}") from exc
        session_id = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(session_id, str) or not session_id:
            raise AgentSessionError(
                f"{handle.label} could not start a session: session/new returned no sessionId"
            )
        handle._session_id = session_id
        handle.resume_outcome = "new"
        assert isinstance(result, dict)
        return result

    async def _try_resume_or_load(
        self, handle: AgentSessionHandle, connection: AgentConnection, session_id: str
    ) -> tuple[str, dict[str, Any]] | None:
        params = {"sessionId": session_id, "cwd": handle.cwd, "mcpServers": []}
        attempts = [("session/resume", handle._can_resume_call), ("session/load", handle.can_load)]
        for method, advertised in attempts:
            if not advertised:
                continue
            try:
                result = await connection.rpc.request(method, params)
            except AcpRpcError as exc:
                log.info("%s %s failed: %s", handle.label, method, exc.agent_message())
                continue
            return method, result if isinstance(result, dict) else {}
        return None

    async def _route(
        self,
        handle: AgentSessionHandle,
        connection: AgentConnection,
        profile: AgentProfile,
        restore: AgentSessionRestore | None,
        workspace: str,
    ) -> dict[str, Any]:
        if restore is None:
            result = await self._new_session(handle, connection)
            handle._attach_writer(self._writer_for(self._journal_path(workspace, handle.session_id), []))
            return result

        old_path = self._journal_path(workspace, restore.session_id)
        if restore.start_fresh:
            seed: list[str] = []
            if restore.transcript == "discard":
                self._discard_journal(old_path)
            else:
                live = self._live_writers.get(old_path)
                if live is not None:
                    live.flush()
                seed = read_lines(old_path)
            result = await self._new_session(handle, connection)
            new_path = self._journal_path(workspace, handle.session_id)
            writer = self._writer_for(new_path, seed)
            if seed and new_path != old_path:
                writer.replace_lines(seed)
            handle._attach_writer(writer)
            return result

        live = self._live_writers.get(old_path)
        if live is not None:
            live.flush()
        prior = read_lines(old_path)
        writer = self._writer_for(old_path, prior)
        handle._session_id = restore.session_id
        handle._attach_writer(writer)
        outcome = await self._try_resume_or_load(handle, connection, restore.session_id)
        if outcome is not None:
            method, result = outcome
            handle.resume_outcome = "resumed"
            if method == "session/load":
                replayed = writer.snapshot_lines()[len(prior) :]
                writer.replace_lines(backfill_user_prompt_timestamps(prior, replayed))
                adopted = result.get("sessionId")
                if isinstance(adopted, str) and adopted and adopted != restore.session_id:
                    self._rekey(handle, workspace, adopted)
            return result
        if has_conversation_content(prior):
            handle.resume_outcome = "journal-only"
            await connection.aclose("journal-only")
            return {}
        # Stale id with nothing worth keeping: start over, with an empty journal.
        writer.abandon()
        self._release_writer(writer)
        handle._writer = None
        result = await self._new_session(handle, connection)
        handle._attach_writer(self._writer_for(self._journal_path(workspace, handle.session_id), []))
        return result

    def _rekey(self, handle: AgentSessionHandle, workspace: str, new_id: str) -> None:
        old = handle._writer
        snapshot = old.snapshot_lines() if old is not None else []
        if old is not None:
            old.flush()
            self._release_writer(old)
        writer = self._writer_for(self._journal_path(workspace, new_id), snapshot)
        writer.replace_lines(snapshot)
        handle._writer = writer
        handle._session_id = new_id

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
                log.warning(
                    "%s: could not apply session_config %s=%r: %s",
                    profile.display_label,
                    option_id,
                    value,
                    exc,
                )

    async def _resume_in_place(self, handle: AgentSessionHandle) -> None:
        """``AgentsService.resume``: a new process, resume/load the current id, swap it in."""
        if handle.disposed or not handle.is_live:
            return
        old = handle._connection
        handle._handshaking = True
        try:
            connection = await self._start(handle, handle._profile)
            try:
                with anyio.fail_after(handle._profile.connect_timeout):
                    init = await self._initialize(handle, connection, handle._profile)
                    self._read_capabilities(handle, init)
                    writer = handle._writer
                    prior = writer.snapshot_lines() if writer is not None else []
                    outcome = await self._try_resume_or_load(handle, connection, handle.session_id)
            except BaseException:
                handle._connection = old
                await connection.aclose("resume failed")
                raise
            if outcome is None:
                handle._connection = old
                await connection.aclose("resume failed")
                raise AgentSessionError(f"{handle.label} could neither resume nor load {handle.session_id}.")
            method, result = outcome
            if method == "session/load" and writer is not None:
                replayed = writer.snapshot_lines()[len(prior) :]
                writer.replace_lines(backfill_user_prompt_timestamps(prior, replayed))
                adopted = result.get("sessionId")
                if isinstance(adopted, str) and adopted and adopted != handle.session_id:
                    self._rekey(handle, handle.workspace_id, adopted)
            if old is not None:
                await old.aclose("replaced by an in-place resume")
            options = parse_config_options(result.get("configOptions"))
            synthesized = () if options else synthesize_legacy_options(result)
            handle._set_config_options(options or synthesized, (o.id for o in synthesized))
            handle._config_listeners.emit()
        finally:
            handle._handshaking = False
        handle._agent_turn_open = False
        handle._stop_quiescence()
        handle._tools_in_flight.clear()
        self._agents._resumed_in_place(handle.id, handle.session_id)
