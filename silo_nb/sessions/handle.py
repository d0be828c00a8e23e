"""``AgentSessionHandle``: one live chat session, with Silo's semantics.

- Every ``session/update`` goes, synchronously and in arrival order: parse → message id → side effects
  (commands, config options, mode, title) → journal → status → ``on_update`` listeners. Listener errors
  are logged, never raised.
- ``prompt`` validates every block before anything is sent, journals a synthesized user prompt, sends
  ``session/prompt`` and maps the result or error. The journal is flushed before it returns.
- Permission requests run in their own task: no listener → ``cancelled`` at once; otherwise the first
  ``respond`` wins, and the session shows ``blocked`` while nobody has answered.
- ``dispose`` is synchronous (it schedules :meth:`aclose`); ``aclose`` returns once the process group is
  gone and the journal is flushed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import TypeAdapter

from silo_nb.acp import METHOD_NOT_FOUND, AcpConnectionClosed, AcpRpcError, AgentConnection
from silo_nb.sessions.errors import AgentSessionError, AgentSessionInputError
from silo_nb.sessions.journal import JournalWriter
from silo_nb.sessions.models import (
    AgentCommand,
    AgentContentBlock,
    AgentPermissionRequest,
    AgentPromptBlock,
    AgentPromptCapabilities,
    AgentPromptResult,
    AgentSessionConfigOption,
    AgentSessionSummary,
    AgentSessionUpdate,
    ResourceBlock,
    ResourceLinkBlock,
    ResumeOutcome,
    TextBlock,
)
from silo_nb.sessions.parse import (
    MessageIdSynthesizer,
    parse_commands,
    parse_config_options,
    parse_permission_options,
    parse_session_summary,
    parse_tool_call,
    parse_update,
)
from silo_nb.sessions.status import TurnOutcome, now_iso
from silo_nb.util import Disposable, ListenerSet

if TYPE_CHECKING:
    from silo_nb.sessions.agents import AgentsService
    from silo_nb.sessions.profiles import AgentProfile

__all__ = ["AgentSessionHandle", "validate_prompt_blocks"]

log = logging.getLogger("silo_nb.sessions")

SESSION_CLOSE_TIMEOUT_SECONDS = 2.0
# Updates that mean the agent is working; seeing one with no prompt in flight opens an agent turn.
WORK_KINDS = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    }
)
SETTLED_TOOL_STATUSES = frozenset({"completed", "failed", "cancelled"})
# The journal line that records a permission decision (a silo_nb kind; see _journal_decision).
PERMISSION_DECISION_KIND = "permission_decision"
# Silo's TURN_QUIESCENCE_MS: an agent-initiated turn with no explicit end marker ends after this silence.
TURN_QUIESCENCE_SECONDS = 15.0
_PROMPT_BLOCKS: TypeAdapter[list[AgentPromptBlock]] = TypeAdapter(list[AgentPromptBlock])


def validate_prompt_blocks(blocks: Iterable[AgentPromptBlock | Mapping[str, Any]]) -> list[AgentPromptBlock]:
    """Blocks or plain dicts → validated blocks (``mimeType`` accepted too). Raises ``ValueError``."""
    if isinstance(blocks, (str, bytes, Mapping)):
        raise AgentSessionInputError(
            'prompt() takes a list of blocks, e.g. [{"type": "text", "text": "hello"}] — not a single value.'
        )
    items = [
        b.model_dump(by_alias=False) if isinstance(b, (TextBlock, ResourceLinkBlock, ResourceBlock)) else b
        for b in blocks
    ]
    if not items:
        raise AgentSessionInputError(
            'prompt() needs at least one block, e.g. [{"type": "text", "text": "hi"}].'
        )
    return _PROMPT_BLOCKS.validate_python(items)


def _wire_block(block: AgentPromptBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ResourceLinkBlock):
        wire: dict[str, Any] = {"type": "resource_link", "uri": block.uri}
        if block.name is not None:
            wire["name"] = block.name
        return wire
    resource: dict[str, Any] = {"uri": block.uri, "text": block.text}
    if block.mime_type is not None:
        resource["mimeType"] = block.mime_type
    return {"type": "resource", "resource": resource}


class AgentSessionHandle:
    """A connected chat session. Get one from ``AgentSessionsService.connect``."""

    def __init__(
        self,
        *,
        service: AgentsService,
        profile: AgentProfile,
        workspace_id: str,
        cwd: str,
    ) -> None:
        self._service = service
        self._profile = profile
        self.workspace_id = workspace_id
        self.cwd = cwd
        self.id = ""
        self._session_id: str | None = None
        self._connection: AgentConnection | None = None
        self._writer: JournalWriter | None = None
        self._early_updates: list[AgentSessionUpdate] = []
        self._handshaking = True
        self._disposed = False
        self._close_task: asyncio.Task[None] | None = None
        self._synth = MessageIdSynthesizer()
        self._user_prompts = 0
        self._prompts_in_flight = 0
        self._agent_turn_open = False
        self._marks_turn_ends = False
        self._quiescence: asyncio.TimerHandle | None = None
        self._tools_in_flight: set[str] = set()
        self.turn_quiescence_seconds = TURN_QUIESCENCE_SECONDS
        self._pending_permissions: dict[int, AgentPermissionRequest] = {}
        self._synthesized_option_ids: set[str] = set()
        self._config_options: tuple[AgentSessionConfigOption, ...] = ()
        self._commands: tuple[AgentCommand, ...] = ()
        self._title: str | None = None
        self.agent_id: str | None = profile.agent_id
        self.agent_name: str = profile.display_label
        self.can_resume = False
        self.can_list = False
        self.can_close = False
        self.can_load = False
        self._can_resume_call = False
        self.resume_outcome: ResumeOutcome = "new"
        self.journal: tuple[AgentSessionUpdate, ...] = ()
        self.prompt_capabilities = AgentPromptCapabilities()
        self.init_result: dict[str, Any] = {}
        self._update_listeners: ListenerSet[[AgentSessionUpdate]] = ListenerSet("on_update")
        self._permission_listeners: ListenerSet[[AgentPermissionRequest]] = ListenerSet("on_permission")
        self._config_listeners: ListenerSet[[]] = ListenerSet("on_config_options_changed")
        self._command_listeners: ListenerSet[[]] = ListenerSet("on_commands_changed")

    # -- read-only surface ------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The agent's own session id (changes on a load that adopts a new id, or ``start_fresh``)."""
        return self._session_id or ""

    @property
    def label(self) -> str:
        return self._profile.display_label

    @property
    def profile_id(self) -> str:
        return self._profile.id

    @property
    def config_options(self) -> tuple[AgentSessionConfigOption, ...]:
        return self._config_options

    @property
    def commands(self) -> tuple[AgentCommand, ...]:
        return self._commands

    @property
    def title(self) -> str:
        info = self._service.get(self.id)
        return info.title if info else (self._title or self.label)

    @property
    def is_live(self) -> bool:
        """True while the agent process is connected and the handle is not disposed."""
        return (
            not self._disposed
            and self.resume_outcome != "journal-only"
            and self._connection is not None
            and self._connection.is_open
        )

    @property
    def disposed(self) -> bool:
        return self._disposed

    def stderr_tail(self, lines: int = 5) -> list[str]:
        return self._connection.stderr_tail(lines) if self._connection is not None else []

    def __repr__(self) -> str:
        state = "disposed" if self._disposed else ("live" if self.is_live else self.resume_outcome)
        return f"<AgentSessionHandle {self.label!r} session_id={self.session_id!r} {state}>"

    # -- listeners --------------------------------------------------------------------------------

    def on_update(self, listener: Callable[[AgentSessionUpdate], None]) -> Disposable:
        return self._update_listeners.add(listener)

    def on_permission(self, listener: Callable[[AgentPermissionRequest], None]) -> Disposable:
        return self._permission_listeners.add(listener)

    def on_config_options_changed(self, listener: Callable[[], None]) -> Disposable:
        return self._config_listeners.add(listener)

    def on_commands_changed(self, listener: Callable[[], None]) -> Disposable:
        return self._command_listeners.add(listener)

    # -- prompt / cancel --------------------------------------------------------------------------

    async def prompt(
        self, blocks: Iterable[AgentPromptBlock | Mapping[str, Any]], *, cell_id: str | None = None
    ) -> AgentPromptResult:
        """Send one turn and wait for it to end. Drive one turn at a time.

        ``cell_id`` (the notebook cell the prompt came from) is recorded with the journaled prompt.
        """
        parsed = validate_prompt_blocks(blocks)
        if (
            any(isinstance(b, ResourceBlock) for b in parsed)
            and not self.prompt_capabilities.embedded_context
        ):
            raise AgentSessionInputError(
                f"{self.label} does not accept embedded context (resource blocks) — "
                "send a resource_link block with the file's URI instead."
            )
        self._check_live()
        connection = self._connection
        assert connection is not None
        # A prompt takes over any agent-initiated turn.
        self._agent_turn_open = False
        self._stop_quiescence()
        self._tools_in_flight.clear()
        if self._prompts_in_flight == 0:
            self._service._begin_turn(self.id)
        self._prompts_in_flight += 1
        self._journal_user_prompt(parsed, cell_id)
        outcome: TurnOutcome = "failed"
        try:
            call = connection.rpc.start_request(
                "session/prompt", {"sessionId": self.session_id, "prompt": [_wire_block(b) for b in parsed]}
            )
            try:
                result = await call.wait(abandon_on_cancel=False)
            except AcpRpcError as exc:
                raise AgentSessionError(f"The prompt turn failed: {exc.agent_message()}") from exc
            except AcpConnectionClosed as exc:
                raise AgentSessionError(f"The prompt turn failed: {exc}") from exc
            except BaseException:
                # Our caller was cancelled (the notebook's stop button, a timeout): cancel the turn on the
                # agent's side too, and give it a moment to answer so the transcript ends cleanly.
                if not self._disposed:
                    self.cancel()
                    with anyio.CancelScope(shield=True), anyio.move_on_after(3):
                        await call.wait_quietly()
                outcome = "cancelled"
                raise
            stop_reason = result.get("stopReason") if isinstance(result, Mapping) else None
            if not isinstance(stop_reason, str) or not stop_reason:
                stop_reason = "end_turn"
            outcome = "cancelled" if stop_reason == "cancelled" else "finished"
            return AgentPromptResult(stop_reason=stop_reason)
        finally:
            self._prompts_in_flight -= 1
            if self._writer is not None:
                self._writer.flush()
            if not self._disposed and self._prompts_in_flight == 0:
                self._service._end_turn(self.id, outcome)

    def cancel(self) -> None:
        """Cancel the running turn: ``session/cancel``; pending permissions are answered ``cancelled``."""
        if self.resume_outcome == "journal-only" or self._connection is None:
            return
        self._connection.rpc.notify("session/cancel", {"sessionId": self.session_id})
        for request in list(self._pending_permissions.values()):
            request._settle(None)

    def _check_live(self) -> None:
        if self.resume_outcome == "journal-only":
            raise AgentSessionError(
                f"{self.label} is journal-only — reconnect with resume={{'session_id': "
                f"'{self.session_id}', 'start_fresh': True}} to continue."
            )
        if self._disposed:
            raise AgentSessionError(
                f"This {self.label} session was disconnected — connect again to continue."
            )
        if self._connection is None or not self._connection.is_open:
            reason = self._connection.rpc.close_message if self._connection else None
            raise AgentSessionError(
                f"{self.label} is no longer connected ({(reason or 'connection closed').splitlines()[0]}) — "
                f"connect again with resume={{'session_id': '{self.session_id}'}} to continue."
            )

    def _journal_user_prompt(self, blocks: Sequence[AgentPromptBlock], cell_id: str | None) -> None:
        text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
        if not any(isinstance(b, TextBlock) for b in blocks) or self._writer is None:
            return
        self._user_prompts += 1
        self._writer.append(
            AgentSessionUpdate(
                kind="user_message_chunk",
                text=text,
                content=AgentContentBlock(type="text", text=text),
                message_id=f"silo-journal-user-{self._user_prompts}",
                timestamp=now_iso(),
                raw={"synthesized": True, "cellId": cell_id} if cell_id else {"synthesized": True},
            )
        )

    # -- config options ---------------------------------------------------------------------------

    async def set_config_option(self, option_id: str, value: Any) -> None:
        """Set a session control; ``on_config_options_changed`` fires before this returns."""
        option = next((o for o in self._config_options if o.id == option_id), None)
        if option is None:
            raise AgentSessionInputError(f'No session config option "{option_id}".')
        if option.type == "boolean" and not isinstance(value, bool):
            raise AgentSessionInputError(f'"{value}" is not a choice for "{option.name}" (true or false).')
        if option.type == "select" and (
            not isinstance(value, str) or all(choice.value != value for choice in option.options)
        ):
            raise AgentSessionInputError(f'"{value}" is not a choice for "{option.name}".')
        if value == option.current_value:
            return
        self._check_live()
        assert self._connection is not None
        rpc = self._connection.rpc
        returned: Any = None
        if option.id in self._synthesized_option_ids:
            await self._set_legacy(option, value)
        else:
            params: dict[str, Any] = {"sessionId": self.session_id, "configId": option.id, "value": value}
            if option.type == "boolean":
                params["type"] = "boolean"
            try:
                returned = await rpc.request("session/set_config_option", params)
            except AcpRpcError as exc:
                if exc.code != METHOD_NOT_FOUND:
                    raise AgentSessionError(
                        f'{self.label} rejected "{option.name}" = "{value}": {exc.agent_message()}'
                    ) from exc
                await self._set_legacy(option, value)
            except AcpConnectionClosed as exc:
                raise AgentSessionError(f"{self.label} is no longer connected: {exc}") from exc
        fresh = parse_config_options(returned.get("configOptions")) if isinstance(returned, Mapping) else ()
        if not fresh:
            fresh = tuple(
                o.model_copy(update={"current_value": value}) if o.id == option.id else o
                for o in self._config_options
            )
        # The agent may already have confirmed the change (current_mode_update) while we awaited its
        # answer; then listeners have heard of it and the list is not replaced a second time.
        if fresh != self._config_options:
            self._config_options = fresh
            self._config_listeners.emit()

    async def _set_legacy(self, option: AgentSessionConfigOption, value: Any) -> None:
        assert self._connection is not None
        if option.category == "mode":
            method, params = "session/set_mode", {"sessionId": self.session_id, "modeId": value}
        elif option.category == "model":
            method, params = "session/set_model", {"sessionId": self.session_id, "modelId": value}
        else:
            raise AgentSessionError(
                f'{self.label} has no way to set "{option.name}" (category "{option.category or "(none)"}").'
            )
        try:
            await self._connection.rpc.request(method, params)
        except AcpRpcError as exc:
            raise AgentSessionError(
                f'{self.label} rejected "{option.name}" = "{value}": {exc.agent_message()}'
            ) from exc
        except AcpConnectionClosed as exc:
            raise AgentSessionError(f"{self.label} is no longer connected: {exc}") from exc

    # -- sessions list ----------------------------------------------------------------------------

    async def list_sessions(self) -> list[AgentSessionSummary]:
        """``session/list`` on this live connection (no caching, no pagination)."""
        if not self.can_list:
            raise AgentSessionError(f"{self.label} does not support session/list.")
        if self.resume_outcome == "journal-only":
            raise AgentSessionError(f"{self.label} is journal-only — there is no live connection to ask.")
        self._check_live()
        assert self._connection is not None
        try:
            result = await self._connection.rpc.request("session/list", {})
        except (AcpRpcError, AcpConnectionClosed) as exc:
            message = exc.agent_message() if isinstance(exc, AcpRpcError) else str(exc)
            raise AgentSessionError(f"{self.label} could not list its sessions: {message}") from exc
        sessions = result.get("sessions") if isinstance(result, Mapping) else None
        return [s for s in map(parse_session_summary, sessions or []) if s is not None]

    # -- dispose ----------------------------------------------------------------------------------

    def dispose(self) -> None:
        """End the session: the agent's whole process group is killed. Idempotent; returns at once."""
        if self._close_task is not None or self._disposed:
            return
        self._begin_dispose()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            if self._connection is not None:
                self._connection.kill_now()
            self._release_journal()
            return
        self._close_task = loop.create_task(self._close(), name=f"silo_nb dispose {self.id}")

    async def aclose(self) -> None:
        """Awaitable :meth:`dispose`: returns once the process is gone and the journal is flushed."""
        if self._close_task is None:
            if self._disposed:
                return
            self._begin_dispose()
            self._close_task = asyncio.get_running_loop().create_task(self._close())
        await asyncio.shield(self._close_task)

    async def __aenter__(self) -> AgentSessionHandle:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _begin_dispose(self) -> None:
        """The synchronous half: nothing is delivered any more and the status entry goes away."""
        self._disposed = True
        self._stop_quiescence()
        for request in list(self._pending_permissions.values()):
            request._settle(None)
        self._service._unregister(self.id)
        for listeners in (
            self._update_listeners,
            self._permission_listeners,
            self._config_listeners,
            self._command_listeners,
        ):
            listeners.clear()

    async def _close(self) -> None:
        connection = self._connection
        try:
            if connection is not None and connection.is_open and self.can_close and self._session_id:
                with anyio.move_on_after(SESSION_CLOSE_TIMEOUT_SECONDS), contextlib.suppress(Exception):
                    await connection.rpc.request("session/close", {"sessionId": self.session_id})
            if connection is not None:
                await connection.aclose()
        finally:
            self._release_journal()

    def _release_journal(self) -> None:
        if self._writer is not None:
            self._writer.flush()
            self._service.sessions._release_writer(self._writer)

    # -- agent → client ---------------------------------------------------------------------------

    def _on_session_update(self, params: Any) -> None:
        if not isinstance(params, Mapping):
            return
        update_raw = params.get("update")
        if not isinstance(update_raw, Mapping):
            return
        sent_for = params.get("sessionId")
        if self._session_id is not None and sent_for is not None and sent_for != self._session_id:
            log.warning("dropped an update for another session (%s) from %s", sent_for, self.label)
            return
        update = parse_update(update_raw)
        if update is None:
            return
        update = self._synth.apply(update)
        self._apply_side_effects(update)
        if self._writer is not None:
            self._writer.append(update)
        else:
            self._early_updates.append(update)
        if self._disposed:
            return
        self._track_agent_turn(update)
        self._update_listeners.emit(update)

    # -- agent-initiated turns (Silo §4.3) ----------------------------------------------------------

    def _track_agent_turn(self, update: AgentSessionUpdate) -> None:
        call = update.tool_call
        if call is not None:
            if call.status in SETTLED_TOOL_STATUSES:
                self._tools_in_flight.discard(call.tool_call_id)
            elif call.status is not None or update.kind == "tool_call":
                self._tools_in_flight.add(call.tool_call_id)
        marker = _is_turn_end_marker(update)
        if marker:
            self._marks_turn_ends = True
            self._stop_quiescence()
        if self._handshaking or self._prompts_in_flight:
            return
        if marker:
            if self._agent_turn_open:
                self._end_agent_turn("finished")
            return
        if update.kind in WORK_KINDS:
            self._open_agent_turn()

    def _open_agent_turn(self) -> None:
        if not self._agent_turn_open:
            self._agent_turn_open = True
            self._service._begin_turn(self.id)
        if not self._marks_turn_ends:
            self._arm_quiescence()

    def _arm_quiescence(self) -> None:
        self._stop_quiescence()
        self._quiescence = asyncio.get_running_loop().call_later(
            self.turn_quiescence_seconds, self._quiescence_fired
        )

    def _stop_quiescence(self) -> None:
        if self._quiescence is not None:
            self._quiescence.cancel()
            self._quiescence = None

    def _quiescence_fired(self) -> None:
        self._quiescence = None
        if not self._agent_turn_open or self._disposed:
            return
        if self._tools_in_flight:
            self._arm_quiescence()
            return
        self._end_agent_turn("finished")

    def _end_agent_turn(self, outcome: TurnOutcome) -> None:
        self._stop_quiescence()
        self._agent_turn_open = False
        self._tools_in_flight.clear()
        if self._writer is not None:
            self._writer.flush()
        self._service._end_turn(self.id, outcome)

    def _apply_side_effects(self, update: AgentSessionUpdate) -> None:
        raw = update.raw
        if update.kind == "available_commands_update":
            self._commands = parse_commands(raw.get("availableCommands"))
            self._command_listeners.emit()
        elif update.kind == "current_mode_update":
            mode = next(
                (
                    v
                    for key in ("currentModeId", "currentValue", "modeId")
                    if isinstance(v := raw.get(key), str) and v
                ),
                None,
            )
            option = next((o for o in self._config_options if o.category == "mode"), None)
            if mode is not None and option is not None and option.current_value != mode:
                self._config_options = tuple(
                    o.model_copy(update={"current_value": mode}) if o is option else o
                    for o in self._config_options
                )
                self._config_listeners.emit()
        elif update.kind == "config_option_update":
            # Improvement over Silo (which ignores it): agent-side changes replace the list.
            fresh = parse_config_options(raw.get("configOptions"))
            if fresh or isinstance(raw.get("configOptions"), list):
                self._config_options = fresh
                self._synthesized_option_ids.clear()
                self._config_listeners.emit()
        elif update.kind == "session_info_update":
            title = _first_title(raw)
            if title is not None:
                self._title = title
                self._service._patch(self.id, title=title)

    async def _on_permission_request(self, params: Any) -> dict[str, Any]:
        raw = dict(params) if isinstance(params, Mapping) else {}
        tool_call_raw = raw.get("toolCall") if isinstance(raw.get("toolCall"), Mapping) else {}
        assert isinstance(tool_call_raw, Mapping)
        request = AgentPermissionRequest(
            tool_call_id=str(tool_call_raw.get("toolCallId") or raw.get("toolCallId") or ""),
            title=str(
                tool_call_raw.get("title") or raw.get("title") or "The agent is requesting permission."
            ),
            options=parse_permission_options(raw.get("options")),
            tool_call=parse_tool_call(tool_call_raw),
            raw=raw,
        )
        if self._disposed or not self._permission_listeners:
            return {"outcome": {"outcome": "cancelled"}}
        answered = anyio.Event()
        request._responder = lambda _option: answered.set()
        self._pending_permissions[id(request)] = request
        try:
            self._permission_listeners.emit(request)
            if not request.answered:
                self._service._blocked(self.id)
            await answered.wait()
        finally:
            self._pending_permissions.pop(id(request), None)
            request._settle(None)
            self._journal_decision(request)
            if not self._disposed:
                self._service._unblocked(self.id)
                if not self._prompts_in_flight and not self._handshaking:
                    self._open_agent_turn()
        choice = request.answer
        if choice is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": choice}}

    def _journal_decision(self, request: AgentPermissionRequest) -> None:
        """Journal what was answered (improvement: Silo keeps no record), so a transcript painted from
        the journal shows the decision as the live one did. Like the synthesized prompt, it is not an
        ``on_update`` event, and readers that do not know the kind skip it."""
        if self._writer is None:
            return
        self._writer.append(
            AgentSessionUpdate(
                kind=PERMISSION_DECISION_KIND,
                tool_call=request.tool_call,
                raw={
                    "synthesized": True,
                    "toolCallId": request.tool_call_id,
                    "title": request.title,
                    "options": [option.to_json() for option in request.options],
                    "optionId": request.answer,
                },
            )
        )

    def _on_connection_closed(self, reason: str) -> None:
        if self._disposed:
            return
        log.info("%s closed: %s", self.label, reason.splitlines()[0] if reason else "")
        for request in list(self._pending_permissions.values()):
            request._settle(None)
        if self._writer is not None:
            self._writer.flush()
        self._stop_quiescence()
        self._agent_turn_open = False
        if not self._handshaking and self._prompts_in_flight == 0:
            self._service._end_turn(self.id, "failed")

    # -- used by the sessions service ---------------------------------------------------------------

    def _attach_writer(self, writer: JournalWriter) -> None:
        self._writer = writer
        for update in self._early_updates:
            writer.append(update)
        self._early_updates.clear()

    def _set_config_options(
        self, options: tuple[AgentSessionConfigOption, ...], synthesized: Iterable[str] = ()
    ) -> None:
        self._config_options = options
        self._synthesized_option_ids = set(synthesized)

    async def _resume_in_place(self) -> None:
        await self._service.sessions._resume_in_place(self)


def _is_turn_end_marker(update: AgentSessionUpdate) -> bool:
    """Claude's explicit turn end: a ``usage_update`` whose ``_meta["_claude/origin"].kind`` is a string."""
    if update.kind != "usage_update":
        return False
    meta = update.raw.get("_meta")
    origin = meta.get("_claude/origin") if isinstance(meta, Mapping) else None
    return isinstance(origin, Mapping) and isinstance(origin.get("kind"), str)


def _first_title(raw: Mapping[str, Any]) -> str | None:
    for candidate in (
        raw.get("title"),
        (raw.get("info") or {}).get("title") if isinstance(raw.get("info"), Mapping) else None,
        (raw.get("sessionInfo") or {}).get("title") if isinstance(raw.get("sessionInfo"), Mapping) else None,
    ):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    return None
