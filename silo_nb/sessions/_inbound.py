"""What the agent sends to a session, in arrival order: the handle's inbound half (a mixin).

- ``session/update``: parse → message id → side effects (commands, config options, title) → *record*
  (journal + ``on_transcript``) → turn tracking → ``on_update`` listeners. Once the session is set up,
  updates for another session id are dropped with a warning (during setup they are the load's replay).
- ``session/request_permission``: served by the session's ``PermissionDesk``.
- The connection going away: pending permissions are cancelled and an open agent turn fails.
- ``_record`` is the one way into the transcript; the prompt and permission lines go through it too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from silo_nb.sessions._host import SessionRegistry
from silo_nb.sessions._options import ConfigOptions
from silo_nb.sessions._permissions import PermissionDesk
from silo_nb.sessions._turns import TurnTracker
from silo_nb.sessions.journal import JournalWriter
from silo_nb.sessions.models import AgentCommand, AgentSessionUpdate
from silo_nb.sessions.parse import MessageIdSynthesizer, parse_commands, parse_update, session_title
from silo_nb.util import ListenerSet

__all__ = ["AgentTraffic"]

log = logging.getLogger("silo_nb.sessions")

MAX_EARLY_UPDATES = 10_000  # updates kept from before the session exists (its journal is not open yet)


class AgentTraffic:
    """The inbound half of ``AgentSessionHandle``; the attributes below are set by the handle."""

    id: str

    @property
    def label(self) -> str:
        raise NotImplementedError

    _session_id: str | None
    _disposed: bool
    _writer: JournalWriter | None
    _early: list[AgentSessionUpdate]
    _synth: MessageIdSynthesizer
    _commands: tuple[AgentCommand, ...]
    _title: str | None
    _registry: SessionRegistry
    _turns: TurnTracker
    _permissions: PermissionDesk
    _options: ConfigOptions
    _update_listeners: ListenerSet[[AgentSessionUpdate]]
    _transcript_listeners: ListenerSet[[AgentSessionUpdate]]
    _command_listeners: ListenerSet[[]]

    def _flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def _attach_writer(self, writer: JournalWriter | None) -> None:
        """Journal into ``writer`` from now on; updates that came before it are appended first."""
        self._writer = writer
        if writer is not None:
            writer.on_problem = self._journal_problem_changed
            for update in self._early:
                writer.append(update)
            self._early.clear()

    def _journal_problem_changed(self, problem: str | None) -> None:
        """Shown in the session's status (``AgentInfo.journal_problem``) until writing works again."""
        self._registry._patch(self.id, journal_problem=problem)

    def _record(self, update: AgentSessionUpdate) -> None:
        """The one way into the transcript: the journal, then ``on_transcript`` listeners."""
        if self._writer is not None:
            self._writer.append(update)
        elif len(self._early) < MAX_EARLY_UPDATES:
            self._early.append(update)
        elif len(self._early) == MAX_EARLY_UPDATES:
            # Before the session exists (an agent flooding while it never answers initialize) the
            # buffer is bounded; what is beyond it belongs to no session yet. Said once.
            log.warning(
                "%s sent over %d updates before its session existed; the rest are not kept",
                self.label,
                MAX_EARLY_UPDATES,
            )
            self._early.append(update)
        if not self._disposed:
            self._transcript_listeners.emit(update)

    def _on_session_update(self, params: Any) -> None:
        if not isinstance(params, Mapping):
            return
        update_raw = params.get("update")
        if not isinstance(update_raw, Mapping):
            return
        sent_for = params.get("sessionId")
        # While the session is being set up, updates under another id are this session's: an agent that
        # adopts a new id on session/load replays under it before answering (claude-agent-acp does).
        if (
            not self._turns.handshaking
            and self._session_id is not None
            and sent_for is not None
            and sent_for != self._session_id
        ):
            log.warning("dropped an update for another session (%s) from %s", sent_for, self.label)
            return
        update = parse_update(update_raw)
        if update is None:
            return
        update = self._synth.apply(update)
        self._apply_side_effects(update)
        self._record(update)
        if self._disposed:
            return
        self._turns.observe(update)
        self._update_listeners.emit(update)

    def _apply_side_effects(self, update: AgentSessionUpdate) -> None:
        if update.kind == "available_commands_update":
            self._commands = parse_commands(update.raw.get("availableCommands"))
            self._command_listeners.emit()
        elif update.kind in ("current_mode_update", "config_option_update"):
            self._options.apply_update(update)
        elif (title := session_title(update)) is not None:
            self._title = title
            self._registry._patch(self.id, title=title)

    async def _on_permission_request(self, params: Any) -> dict[str, Any]:
        return await self._permissions.ask(params, open_=not self._disposed)

    def _permission_answered(self) -> None:
        if not self._disposed:
            self._registry._unblocked(self.id)
            self._turns.permission_answered()

    def _on_connection_closed(self, reason: str) -> None:
        if self._disposed:
            return
        log.info("%s closed: %s", self.label, reason.splitlines()[0] if reason else "")
        self._permissions.cancel_all()
        self._turns.connection_lost(reason)
