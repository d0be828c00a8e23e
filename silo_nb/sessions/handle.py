"""``AgentSessionHandle``: one live chat session, with Silo's semantics — the public handle only.

- ``connect`` (``sessions/connect.py``) builds the handle and hands it back finished; the handle serves
  the session: prompts, cancel, permissions, config options, listeners, dispose.
- Private parts, one job each: ``_inbound.AgentTraffic`` (what the agent sends, in arrival order, and
  ``_record``: the one way into the journal and the ``on_transcript`` stream), ``_turns.TurnTracker``
  (turns and the quiet-period timer), ``_permissions.PermissionDesk`` (pending permissions),
  ``_options.ConfigOptions`` (config options), ``_prompts`` (blocks, the synthesized prompt, the call).
  What the handle reports to its registry goes through the ``_host`` protocols.
- ``dispose`` is synchronous (it schedules :meth:`aclose`); ``aclose`` returns once the process group is
  gone and the journal is flushed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio

from silo_nb.acp import AcpConnectionClosed, AgentConnection
from silo_nb.sessions._host import JournalHost, SessionRegistry
from silo_nb.sessions._inbound import AgentTraffic
from silo_nb.sessions._options import ConfigOptions
from silo_nb.sessions._permissions import PermissionDesk, PermissionPolicy
from silo_nb.sessions._prompts import TurnEnd, list_sessions, prompt_line, send_prompt, validate_prompt_blocks
from silo_nb.sessions._stop import StopControl
from silo_nb.sessions._turns import TurnTracker
from silo_nb.sessions.capabilities import AgentCapabilities
from silo_nb.sessions.errors import AgentSessionError
from silo_nb.sessions.journal import JournalWriter
from silo_nb.sessions.models import (
    AgentCommand,
    AgentPermissionRequest,
    AgentPromptBlock,
    AgentPromptCapabilities,
    AgentPromptResult,
    AgentSessionConfigOption,
    AgentSessionSummary,
    AgentSessionUpdate,
    ResumeOutcome,
)
from silo_nb.sessions.parse import MessageIdSynthesizer
from silo_nb.sessions.profiles import AgentProfile
from silo_nb.util import Disposable, ListenerSet

__all__ = ["AgentSessionHandle"]

log = logging.getLogger("silo_nb.sessions")

SESSION_CLOSE_TIMEOUT_SECONDS = 2.0


class AgentSessionHandle(AgentTraffic):
    """A connected chat session. Get one from ``AgentSessionsService.connect``."""

    def __init__(
        self,
        *,
        registry: SessionRegistry,
        journals: JournalHost,
        profile: AgentProfile,
        workspace_id: str,
        cwd: str,
    ) -> None:
        self._registry = registry
        self._journals = journals
        self._profile = profile
        self.workspace_id = workspace_id
        self.cwd = cwd
        self.id = ""
        self._session_id: str | None = None
        self._connection: AgentConnection | None = None
        self._writer: JournalWriter | None = None
        self._early: list[AgentSessionUpdate] = []
        self._disposed = False
        self._close_task: asyncio.Task[None] | None = None
        self._synth = MessageIdSynthesizer()
        self._user_prompts = 0
        self._commands: tuple[AgentCommand, ...] = ()
        self._title: str | None = None
        self._caps = AgentCapabilities(agent_name=profile.display_label)
        self.agent_id: str | None = profile.agent_id
        self.resume_outcome: ResumeOutcome = "new"
        self._journal_at_setup: tuple[AgentSessionUpdate, ...] | list[str] = ()
        self._turns = TurnTracker(registry, lambda: self.id, self._flush, self._record, self._turn_context)
        self._stop = StopControl(profile.cancel_timeout)
        self._permissions = PermissionDesk(
            record=self._record,
            on_blocked=lambda: self._registry._blocked(self.id),
            on_answered=self._permission_answered,
        )
        self._options = ConfigOptions(lambda: self.label)
        self._update_listeners: ListenerSet[[AgentSessionUpdate]] = ListenerSet("on_update")
        self._transcript_listeners: ListenerSet[[AgentSessionUpdate]] = ListenerSet("on_transcript")
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
    def agent_name(self) -> str:
        return self._caps.agent_name

    @property
    def can_resume(self) -> bool:
        return self._caps.can_resume

    @property
    def can_list(self) -> bool:
        return self._caps.can_list

    @property
    def prompt_capabilities(self) -> AgentPromptCapabilities:
        return self._caps.prompt

    @property
    def init_result(self) -> Mapping[str, Any]:
        return self._caps.init_result

    @property
    def config_options(self) -> tuple[AgentSessionConfigOption, ...]:
        return self._options.options

    @property
    def commands(self) -> tuple[AgentCommand, ...]:
        return self._commands

    @property
    def prompts_sent(self) -> int:
        """How many prompts this connection journaled (the ``n`` of ``silo-journal-user-<n>``)."""
        return self._user_prompts

    @property
    def pending_permissions(self) -> tuple[AgentPermissionRequest, ...]:
        """Permission requests nobody has answered yet."""
        return self._permissions.pending

    @property
    def turn_quiescence_seconds(self) -> float:
        return self._turns.quiescence_seconds

    @turn_quiescence_seconds.setter
    def turn_quiescence_seconds(self, seconds: float) -> None:
        self._turns.quiescence_seconds = seconds

    @property
    def title(self) -> str:
        info = self._registry.get(self.id)
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
    def journal_problem(self) -> str | None:
        """Why the journal cannot be written right now (accepted lines wait in memory), else None."""
        return self._writer.problem if self._writer is not None else None

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

    def on_transcript(self, listener: Callable[[AgentSessionUpdate], None]) -> Disposable:
        """Every update as it is journaled: the wire updates plus silo_nb's synthesized lines (the user
        prompt, permission requests and decisions). A transcript view fed from here shows exactly what a
        view repainted from the journal shows (improvement: Silo's UI appends its prompt locally)."""
        return self._transcript_listeners.add(listener)

    def on_permission(
        self, listener: Callable[[AgentPermissionRequest], None] | PermissionPolicy
    ) -> Disposable:
        """A listener (answer with ``request.respond``), or a policy that answers by rule (journaled)."""
        return self._permissions.add(listener, self.cwd)

    def on_config_options_changed(self, listener: Callable[[], None]) -> Disposable:
        return self._options.listeners.add(listener)

    def on_commands_changed(self, listener: Callable[[], None]) -> Disposable:
        return self._command_listeners.add(listener)

    # -- prompt / cancel --------------------------------------------------------------------------

    async def prompt(
        self, blocks: Iterable[AgentPromptBlock | Mapping[str, Any]], *, cell_id: str | None = None
    ) -> AgentPromptResult:
        """Send one turn and wait for it to end. Drive one turn at a time.

        ``cell_id`` (the notebook cell the prompt came from) is recorded with the journaled prompt.
        """
        parsed = validate_prompt_blocks(
            blocks, embedded_context=self.prompt_capabilities.embedded_context, label=self.label
        )
        self._check_live()
        connection = self._connection
        assert connection is not None
        self._turns.prompt_started()
        line = prompt_line(parsed, self._user_prompts + 1, cell_id)
        if line is not None:
            self._user_prompts += 1
            self._record(line)
        end = TurnEnd(self._stop)
        try:
            result = await send_prompt(
                connection,
                self.session_id,
                parsed,
                on_cancelled=self._cancel_if_live,
                stop=self._stop,
                sign_in=(self._caps.auth_methods, self.profile_id),
            )
            return end.answered(result)
        except BaseException as exc:
            end.raised(exc)
            raise
        finally:
            self._turns.prompt_ended(end.outcome, **end.details)

    def _cancel_if_live(self) -> None:
        if not self._disposed:
            self.cancel()

    def cancel(self) -> None:
        """Cancel the running turn: ``session/cancel``; pending permissions are answered ``cancelled``.

        The turn then ends within the profile's ``cancel_timeout``; if the agent had not stopped by then,
        calling this again ends the agent's processes and closes the session (``sessions/_stop.py``)."""
        if self.resume_outcome == "journal-only" or self._connection is None:
            return
        if self._stop.overdue and self._connection.is_open:
            self._stop.kill(self._connection)
            return
        self._connection.rpc.notify("session/cancel", {"sessionId": self.session_id})
        self._permissions.cancel_all()
        self._stop.requested()

    @property
    def stop_overdue(self) -> bool:
        """A Stop went unanswered: the agent may still work on that turn; Stop again ends it."""
        return self._stop.overdue

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

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        """A request on the live connection; a closed connection becomes ``AgentSessionError``."""
        self._check_live()
        assert self._connection is not None
        try:
            return await self._connection.rpc.request(method, params)
        except AcpConnectionClosed as exc:
            raise AgentSessionError(f"{self.label} is no longer connected: {exc}") from exc

    # -- config options and sessions list -----------------------------------------------------------

    async def set_config_option(self, option_id: str, value: Any) -> None:
        """Set a session control; ``on_config_options_changed`` fires before this returns."""
        await self._options.set(option_id, value, self._request, self.session_id)

    async def list_sessions(self) -> list[AgentSessionSummary]:
        """``session/list`` on this live connection (no caching, no pagination)."""
        if not self.can_list:
            raise AgentSessionError(f"{self.label} does not support session/list.")
        if self.resume_outcome == "journal-only":
            raise AgentSessionError(f"{self.label} is journal-only — there is no live connection to ask.")
        self._check_live()
        assert self._connection is not None
        return await list_sessions(self._connection, self.label)

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
        self._turns.closed = True
        self._turns.reset()
        self._permissions.cancel_all()
        self._registry._unregister(self.id)
        for listeners in (
            self._update_listeners,
            self._transcript_listeners,
            self._permissions.listeners,
            self._options.listeners,
            self._command_listeners,
        ):
            listeners.clear()

    async def _close(self) -> None:
        connection = self._connection
        try:
            if connection is not None and connection.is_open and self._caps.can_close and self._session_id:
                with anyio.move_on_after(SESSION_CLOSE_TIMEOUT_SECONDS), contextlib.suppress(Exception):
                    await connection.rpc.request("session/close", {"sessionId": self.session_id})
            if connection is not None:
                await connection.aclose()
        finally:
            self._release_journal()

    def _release_journal(self) -> None:
        if self._writer is not None:
            self._writer.flush()
            self._journals._release_writer(self._writer)
            self._journal_released = True  # nothing more is written (its lock may go to another kernel)

    # -- set up by sessions/connect.py ------------------------------------------------------------

    def _adopt(self, *, session_id: str, outcome: ResumeOutcome) -> None:
        self._session_id = session_id
        self.resume_outcome = outcome

    def _finish_setup(self, result: Mapping[str, Any]) -> None:
        """The handshake is over: final id, config options, and the journal as it stands."""
        self._turns.handshaking = False
        self.id = "chat:" + self.session_id
        self._options.adopt_result(result, notify=False)
        if self._writer is not None:
            lines = self._writer.snapshot_lines()
            self._journal_at_setup = lines  # parsed on first use of ``journal`` (a restore need not)
            self._permissions.continue_after(lines)
