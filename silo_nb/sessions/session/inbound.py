"""What the agent sends to a session, in arrival order: one composed object per session.

- ``session/update``: parse (with the message id; the decoded wire dict becomes ``raw``, uncopied) →
  side effects (commands, config options, title: only the kinds the table marks, ``kinds.py``) →
  *record* (journal + ``on_transcript``; before a new session's first prompt also its opening,
  ``core.keep_opening``) → turn tracking → ``on_update`` listeners. Once the session is
  set up, an update for another session id is a subagent's (ACP v1.25: its child sessions' traffic comes
  on the parent's connection): the same path with ``child_session_id`` set, its chunks' ids from the
  child's own synthesizer, and no side effects on this session (a child's title or commands are not its
  parent's); a ``subagent_update`` tells ``core.subagents`` who the child is. An id never announced is
  kept all the same (shown as an unannounced child). During setup they are the load's replay.
- ``session/request_permission``: served by the session's ``PermissionDesk``; a child's (its session id
  announced, or seen in updates) goes to the same listeners and buttons, saying which child asks.
- The connection going away: pending permissions are cancelled and an open agent turn fails.
- Hot (tens of thousands of updates a second): the parts it feeds are looked up once, at construction.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from silo_nb.acp import AcpRpcError
from silo_nb.model import (
    SIDE_EFFECT_KINDS,
    AgentCommand,
    AgentSessionUpdate,
)
from silo_nb.sessions.host import SessionRegistry
from silo_nb.sessions.session.client_files import ClientFiles
from silo_nb.sessions.session.config_options import ConfigOptions
from silo_nb.sessions.session.conversation_forks import ConversationForks
from silo_nb.sessions.session.journal_slot import JournalSlot
from silo_nb.sessions.session.permission_desk import PermissionDesk
from silo_nb.sessions.session.question_desk import QuestionDesk
from silo_nb.sessions.session.subagents import Subagents
from silo_nb.sessions.session.terminals import TerminalHost
from silo_nb.sessions.session.turn_tracker import TurnTracker
from silo_nb.sessions.session.wiring import SessionWiring
from silo_nb.updates import (
    MAX_RAW_DEPTH,
    MessageIdSynthesizer,
    parse_commands,
    parse_session_update,
    session_title,
)
from silo_nb.util import ListenerSet

__all__ = ["InboundSession", "InboundTraffic"]

INVALID_PARAMS = -32602
Handler = Callable[[Any], Awaitable[Any]]

log = logging.getLogger("silo_nb.sessions")


class InboundSession(Protocol):
    """The parts of a session the inbound traffic feeds (``core.SessionCore`` has them)."""

    id: str
    disposed: bool
    commands: tuple[AgentCommand, ...]
    title: str | None
    registry: SessionRegistry
    wiring: SessionWiring
    journal: JournalSlot
    turns: TurnTracker
    synth: MessageIdSynthesizer
    options: ConfigOptions
    permissions: PermissionDesk
    questions: QuestionDesk
    files: ClientFiles
    terminals: TerminalHost
    subagents: Subagents
    conversation_forks: ConversationForks
    transcript_listeners: ListenerSet[[AgentSessionUpdate]]
    update_listeners: ListenerSet[[AgentSessionUpdate]]
    command_listeners: ListenerSet[[]]

    @property
    def label(self) -> str: ...

    def keep_opening(self, update: AgentSessionUpdate) -> None: ...


class InboundTraffic:
    """The handlers of what the agent sends to one session (``connect`` registers them)."""

    def __init__(self, core: InboundSession) -> None:
        self._core = core
        self._wiring = core.wiring
        self._journal = core.journal
        self._turns = core.turns
        self._synth = core.synth
        self._transcript = core.transcript_listeners
        self._updates = core.update_listeners
        self._subagents = core.subagents
        self._forks = core.conversation_forks

    def handlers(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(request handlers, notification handlers) for the session's ``AgentConnection``: every request
        an agent may make of a client, each refused when it names another session."""
        core = self._core
        requests = {
            "session/request_permission": self._for_this_session(self.on_permission_request),
            "fs/read_text_file": self._for_this_session(core.files.read),
            "fs/write_text_file": self._for_this_session(core.files.write),
            "terminal/create": self._for_this_session(core.terminals.create),
            "terminal/output": self._for_this_session(core.terminals.output),
            "terminal/wait_for_exit": self._for_this_session(core.terminals.wait_for_exit),
            "terminal/kill": self._for_this_session(core.terminals.kill),
            "terminal/release": self._for_this_session(core.terminals.release),
            "elicitation/create": self._for_this_session(self.on_elicitation, request_scoped=True),
        }
        notifications = {
            "session/update": self.on_session_update,
            "elicitation/complete": core.questions.completed,
            # What the agent says of its sign-in (ACP v1.25's push, and the extension Claude and Codex send).
            "auth/status_update": self._wiring.auth_status_pushed,
            "_auth/status_update": self._wiring.auth_status_pushed,
        }
        return requests, notifications

    def _for_this_session(self, handler: Handler, *, request_scoped: bool = False) -> Handler:
        """``handler``, answering a request that names another session (or none) with an error instead
        (``request_scoped``: one tied to a request instead of a session, ACP's ``requestId`` scope, is
        this connection's)."""

        async def checked(params: Any) -> Any:
            sent_for = params.get("sessionId") if isinstance(params, dict) else None
            if request_scoped and sent_for is None and isinstance(params, dict) and "requestId" in params:
                return await handler(params)
            session_id = self._wiring.session_id
            if (
                sent_for != session_id
                and not (self._turns.handshaking and isinstance(sent_for, str))
                and not self._subagents.knows(sent_for)
            ):
                raise AcpRpcError(
                    INVALID_PARAMS,
                    f"unknown session {str(sent_for)[:80]!r}: this connection's session is {session_id!r}",
                )
            return await handler(params)

        return checked

    def on_session_update(self, params: Any) -> None:
        if type(params) is not dict:  # what the reader decoded: always a plain dict or not a message
            return
        update_raw = params.get("update")
        if type(update_raw) is not dict:
            return
        sent_for = params.get("sessionId")
        session_id = self._wiring.session_id
        # While the session is being set up, updates under another id are this session's: an agent that
        # adopts a new id on session/load replays under it before answering (claude-agent-acp does).
        if (
            sent_for != session_id
            and sent_for is not None
            and session_id is not None
            and not self._turns.handshaking
        ):
            if isinstance(sent_for, str) and sent_for:
                self._on_child_update(sent_for, update_raw)
            else:
                log.warning("dropped an update with a malformed session id from %s", self._core.label)
            return
        # The decoded dict itself becomes the update's raw: the reader hands it over and keeps nothing;
        # what the reader knows of the line (how deep, how long) spares the parser its walks.
        connection = self._wiring.connection
        if connection is not None:
            rpc = connection.rpc
            parsed = parse_session_update(
                update_raw,
                self._synth,
                shallow=rpc.nesting_bound <= MAX_RAW_DEPTH,
            )
        else:
            parsed = parse_session_update(update_raw, self._synth)
        if parsed is None:
            return
        update, value = parsed
        if update.kind in SIDE_EFFECT_KINDS:
            self._apply_side_effects(update)
        elif update.kind == "subagent_update":
            self._subagents.observe(update)
        self._journal.record(update, value)
        if self._turns.opening:
            self._core.keep_opening(update)
        if self._core.disposed:
            return
        self._transcript.emit(update)
        self._turns.observe(update)
        self._updates.emit(update)

    def _on_child_update(self, child_id: str, update_raw: dict[str, Any]) -> None:
        """A subagent's update: journaled and shown under the parent, with the child's id on it (a fork
        taken as the conversation's checkpoint is not a subagent: its traffic is dropped)."""
        if self._forks.is_quiet(child_id):
            return
        child = self._subagents.child(child_id)
        connection = self._wiring.connection
        shallow = connection is not None and connection.rpc.nesting_bound <= MAX_RAW_DEPTH
        parsed = parse_session_update(
            update_raw, self._subagents.synth(child.session_id), shallow=shallow, child=child.session_id
        )
        if parsed is None:
            return
        update, value = parsed
        if update.kind == "subagent_update":
            self._subagents.observe(update)  # a child announcing its own child
        self._journal.record(update, value)
        if self._core.disposed:
            return
        self._transcript.emit(update)
        self._turns.observe(update)
        self._updates.emit(update)

    def _apply_side_effects(self, update: AgentSessionUpdate) -> None:
        core = self._core
        if update.kind == "available_commands_update":
            core.commands = parse_commands(update.raw.get("availableCommands"))
            core.command_listeners.emit()
        elif update.kind in ("current_mode_update", "config_option_update"):
            core.options.apply_update(update)
        elif (title := session_title(update)) is not None:
            core.title = title
            core.registry.patch(core.id, title=title)

    def _child_of(self, params: Any) -> tuple[str, str] | None:
        """(session id, label) of the child a request names; None for this session's own."""
        sent_for = params.get("sessionId") if isinstance(params, dict) else None
        child = self._subagents.get(sent_for) if sent_for != self._wiring.session_id else None
        return (child.session_id, child.label) if child is not None else None

    async def on_permission_request(self, params: Any) -> dict[str, Any]:
        return await self._core.permissions.ask(
            params, open_=not self._core.disposed, child=self._child_of(params)
        )

    async def on_elicitation(self, params: Any) -> dict[str, Any]:
        return await self._core.questions.ask(
            params, open_=not self._core.disposed, child=self._child_of(params)
        )

    def on_connection_closed(self, reason: str) -> None:
        core = self._core
        if core.disposed:
            return
        log.info("%s closed: %s", core.label, reason.splitlines()[0] if reason else "")
        core.permissions.cancel_all()
        core.questions.cancel_all()
        core.turns.connection_lost(reason)
