"""The parts of one chat session, composed: what the handle (``handle.py``) is the public face of.

- Built by ``connect`` (``sessions/connecting/connector.py``) with a :class:`~.wiring.SessionWiring` (the
  agent connection, its capabilities, the session id) and a :class:`~.journal_slot.JournalSlot`; the parts
  each own one job: ``inbound`` (what the agent sends, in arrival order), ``turns`` (turn tracking and the
  quiet-period timer), ``permissions`` (pending permissions), ``options`` (config options), ``stop`` (a Stop
  and its bound), ``client_tools`` (tools silo_nb runs for the agent), ``file_checkpoints`` (the session's
  folders at each turn's start and end, for an undo). They reach each other only through this object's
  public attributes.
- :meth:`SessionCore.record` is the one way into the transcript: the journal, then ``on_transcript``.
- Everything the session reports to its service goes to ``registry`` (``host.SessionRegistry``).
- :attr:`SessionCore.opening`: what the agent sent a new session before its first prompt (pi's banner
  and usage, commands), up to :data:`MAX_OPENING_UPDATES`. It mostly arrives while ``connect`` is still
  returning, before anyone could listen, so a listener added before the first prompt is handed it first
  (:meth:`SessionCore.replay_opening`) — as Silo's ``onUpdate`` shows pi's banner.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio

from silo_nb.acp import Sandbox
from silo_nb.model import (
    AgentCommand,
    AgentSessionUpdate,
    StaleTurn,
)
from silo_nb.sessions.host import SessionRegistry
from silo_nb.sessions.journal import JournalFiles
from silo_nb.sessions.mcp_servers import McpServerConfig
from silo_nb.sessions.profiles import AgentProfile
from silo_nb.sessions.session.client_files import ClientFiles
from silo_nb.sessions.session.client_tool_calls import ClientToolCalls
from silo_nb.sessions.session.config_options import ConfigOptions
from silo_nb.sessions.session.conversation_forks import ConversationForks
from silo_nb.sessions.session.file_checkpoints import FileCheckpoints
from silo_nb.sessions.session.inbound import InboundTraffic
from silo_nb.sessions.session.journal_slot import JournalSlot
from silo_nb.sessions.session.permission_desk import PermissionDesk
from silo_nb.sessions.session.question_desk import QuestionDesk
from silo_nb.sessions.session.stop_control import StopControl
from silo_nb.sessions.session.subagents import Subagents
from silo_nb.sessions.session.terminals import TerminalHost
from silo_nb.sessions.session.turn_tracker import TurnTracker
from silo_nb.sessions.session.turn_undo import UndoParts
from silo_nb.sessions.session.wiring import SessionWiring
from silo_nb.sessions.storage import checkpoint_store
from silo_nb.sessions.system_prompt import SystemPrompt
from silo_nb.updates import (
    MessageIdSynthesizer,
)
from silo_nb.util import ListenerSet

__all__ = ["MAX_OPENING_UPDATES", "SESSION_CLOSE_TIMEOUT_SECONDS", "SessionCore"]

log = logging.getLogger("silo_nb.sessions")

SESSION_CLOSE_TIMEOUT_SECONDS = 2.0
MAX_OPENING_UPDATES = 1000


class SessionCore:
    """One session's parts and state (see the module docstring)."""

    def __init__(
        self,
        *,
        registry: SessionRegistry,
        journals: JournalFiles,
        profile: AgentProfile,
        workspace_id: str,
        cwd: str,
        folders: tuple[Path, ...] = (),
        extra_mcp_servers: tuple[McpServerConfig, ...] = (),
        system_prompt: SystemPrompt | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.registry = registry
        self.profile = profile
        self.workspace_id = workspace_id
        self.cwd = cwd
        # The folders the agent may read and write through the client (cwd first), resolved.
        self.folders = folders or (Path(cwd).resolve(),)
        # Where the agent and its terminals run: the sandbox showing this session's folders read-write.
        self.sandbox = sandbox.bound(self.folders) if sandbox is not None else None
        self.extra_mcp_servers = extra_mcp_servers  # offered besides the profile's (the kernel tools)
        # What is sent as ``systemPrompt`` on session/new, load, resume and fork (where the agent takes it).
        self.system_prompt = system_prompt or SystemPrompt(profile.system_prompt, profile.system_prompt_mode)
        # ``handle.fork()``: set by connect (the connector opens the fork as it opens any session).
        self.forker: Callable[..., Awaitable[Any]] | None = None
        self.id = ""  # the status entry's id: "chat:" + the session id, once it is known
        self.disposed = False
        self.close_task: asyncio.Task[None] | None = None
        self.agent_id: str | None = profile.agent_id
        self.user_prompts = 0  # prompts this connection journaled (the n of silo-journal-user-<n>)
        self._turns_at_setup: int | None = None  # numbered turns in the journal at setup (counted once)
        self.commands: tuple[AgentCommand, ...] = ()
        self.opening: list[AgentSessionUpdate] = []  # before the first prompt (see the module docstring)
        self.title: str | None = None
        self.synth = MessageIdSynthesizer()
        self.subagents = Subagents()  # the child sessions the agent announced (ACP v1.25)
        self.wiring = SessionWiring(profile.display_label)
        self.journal = JournalSlot(journals, lambda: self.label)
        self.journal.on_problem = lambda problem: registry.patch(self.id, journal_problem=problem)
        self.update_listeners: ListenerSet[[AgentSessionUpdate]] = ListenerSet("on_update")
        self.transcript_listeners: ListenerSet[[AgentSessionUpdate]] = ListenerSet("on_transcript")
        self.command_listeners: ListenerSet[[]] = ListenerSet("on_commands_changed")
        self.stale_sources: list[Callable[[], Iterable[StaleTurn]]] = []  # handle.add_stale_source
        self.turns = TurnTracker(
            registry, lambda: self.id, self.journal.flush, self.record, self.turn_context
        )
        self.stop = StopControl(profile.cancel_timeout)
        self.permissions = PermissionDesk(
            record=self.record,
            on_blocked=lambda: registry.blocked(self.id),
            on_answered=self._permission_answered,
        )
        self.questions = QuestionDesk(
            record=self.record,
            on_blocked=lambda: registry.blocked(self.id),
            on_answered=self._permission_answered,
        )
        self.options = ConfigOptions(lambda: self.label)
        self.files = ClientFiles(
            folders=self.folders,
            read=profile.fs_read,
            write=profile.fs_write,
            notebooks=profile.fs_write_notebooks,
            max_bytes=profile.fs_max_bytes,
            record=self.record,
            # A write that runs code asks through the same desk as the agent's own requests.
            ask=lambda call, options: self.permissions.ask_for_client(
                call, options, open_=self.journal_in_use
            ),
        )
        self.terminals = TerminalHost(
            enabled=profile.terminal,
            folders=self.folders,
            cwd=cwd,
            max_terminals=profile.max_terminals,
            record=self.record,
            # In the agent's sandbox view: what its own argv and env show, nothing a terminal's names.
            sandbox=self.sandbox.for_terminals(_agent_argv(profile), _agent_env(profile))
            if self.sandbox
            else None,
        )
        # Tools silo_nb runs for the agent (the kernel tools): journaled, asking through the same desk.
        self.client_tools = ClientToolCalls(
            record=self.record,
            desk=self.permissions,
            turn_running=lambda: self.turns.prompts_in_flight > 0,
            is_open=lambda: self.journal_in_use,
        )
        self.conversation_forks = ConversationForks()  # checkpoint_conversation = "fork"
        self.inbound = InboundTraffic(self)
        # What holds a turn's changes for handle.undo (the cells and variables register from above).
        self.undo_parts = UndoParts()
        self._file_checkpoints: FileCheckpoints | None = None

    @property
    def file_checkpoints(self) -> FileCheckpoints | None:
        """The session's file checkpoints (issue 32), kept beside its journal; None while the session has no
        id yet, or when the profile's ``checkpoint_files`` is off. Made again when the id changes (a load
        that adopts a new id, ``start_fresh``): the checkpoints go with the journal they belong to."""
        if not self.profile.checkpoint_files or not self.session_id:
            return None
        journals = self.journal.journals
        store = checkpoint_store(journals.path(self.workspace_id, self.session_id))
        if self._file_checkpoints is None or self._file_checkpoints.store != store:
            self._file_checkpoints = FileCheckpoints(store, self.folders, exclude=(journals.data_dir,))
        return self._file_checkpoints

    @property
    def label(self) -> str:
        return self.profile.display_label

    @property
    def turn_number(self) -> int:
        """The number of this session's latest turn as the journal's splitter counts it (``split_turns``:
        turns carried over from a resumed or forked journal included); 0 before the first."""
        if self._turns_at_setup is None:
            self._turns_at_setup = self.journal.turns_at_setup()
        return self._turns_at_setup + self.user_prompts

    @property
    def session_id(self) -> str:
        return self.wiring.session_id or ""

    @property
    def journal_in_use(self) -> bool:
        """Connected or connecting (its agent connection open) and not disposed: it may still write."""
        return not self.disposed and self.wiring.is_open

    # -- the transcript -----------------------------------------------------------------------------

    def record(self, update: AgentSessionUpdate, value: dict[str, Any] | None = None) -> None:
        """The one way into the transcript: the journal (``value``: the line's JSON, when the parser made
        it), then ``on_transcript`` listeners."""
        self.journal.record(update, value)
        if not self.disposed:
            self.transcript_listeners.emit(update)

    def keep_opening(self, update: AgentSessionUpdate) -> None:
        """An update that came before the first prompt (``turns.opening``): kept for later listeners."""
        if len(self.opening) < MAX_OPENING_UPDATES:
            self.opening.append(update)

    def replay_opening(self, listener: Callable[[AgentSessionUpdate], None]) -> None:
        """Hand a new listener the session's opening, if the first prompt has not been sent yet."""
        if not self.turns.opening or self.disposed:
            return
        for update in tuple(self.opening):
            try:
                listener(update)
            except Exception:
                log.exception("a listener raised on the session's opening updates")

    def turn_context(self) -> dict[str, object]:
        """What a ``turn_end`` line records of the session (``silo_nb.frame`` reads it)."""
        config = {option.id: option.current_value for option in self.options.options}
        context: dict[str, object] = {"profile": self.profile.id, "agent": self.wiring.caps.agent_name}
        fork = self.conversation_forks.take()
        return {**context, "config": config, **({"checkpointFork": fork} if fork else {})}

    def _permission_answered(self) -> None:
        """A permission or a question was answered: the session works again."""
        if not self.disposed:
            self.registry.unblocked(self.id)
            self.turns.permission_answered()

    # -- set up by connect ------------------------------------------------------------------------

    def finish_setup(self, result: Mapping[str, Any]) -> None:
        """The handshake is over: final id, config options, and the journal as it stands."""
        self.turns.handshaking = False
        if self.wiring.resume_outcome != "new":  # a load's replay is the journal's, not an opening
            self.turns.opening = False
            self.opening.clear()
        self.id = "chat:" + self.session_id
        self.options.adopt_result(result, notify=False)
        if self.journal.writer is not None:
            self.permissions.continue_after(self.journal.set_up())

    # -- dispose ----------------------------------------------------------------------------------

    def begin_dispose(self) -> None:
        """The synchronous half: nothing is delivered any more and the status entry goes away."""
        self.disposed = True
        self.turns.closed = True
        self.turns.reset()
        self.permissions.cancel_all()
        self.questions.cancel_all()
        self.registry.unregister(self.id)
        for listeners in (
            self.update_listeners,
            self.transcript_listeners,
            self.permissions.listeners,
            self.questions.listeners,
            self.options.listeners,
            self.command_listeners,
        ):
            listeners.clear()

    async def close(self) -> None:
        """Close the session on the agent's side (when it can), then its process group; the journal last."""
        connection = self.wiring.connection
        try:
            await self.terminals.close_all()  # their output's last lines still reach the journal
            can_close = self.wiring.caps.can_close and self.wiring.session_id
            if connection is not None and connection.is_open and can_close:
                with anyio.move_on_after(SESSION_CLOSE_TIMEOUT_SECONDS), contextlib.suppress(Exception):
                    await connection.rpc.request("session/close", {"sessionId": self.session_id})
            if connection is not None:
                await connection.aclose()
        finally:
            self.journal.release()


def _agent_argv(profile: AgentProfile) -> list[str]:
    return [profile.command, *profile.args]


def _agent_env(profile: AgentProfile) -> dict[str, str]:
    """The agent's environment as its spawn makes it: the kernel's, with the profile's laid over."""
    env = dict(os.environ)
    for name, value in profile.spawn_env.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env
