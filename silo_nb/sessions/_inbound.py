"""What the agent sends to a session, in arrival order: the handle's inbound half (a mixin).

- ``session/update``: parse (with the message id; the decoded wire dict becomes ``raw``, uncopied) →
  side effects (commands, config options, title: only for those kinds) → *record* (journal +
  ``on_transcript``) → turn tracking → ``on_update`` listeners. Once the session is set up,
  updates for another session id are dropped with a warning (during setup they are the load's replay).
- ``session/request_permission``: served by the session's ``PermissionDesk``.
- The connection going away: pending permissions are cancelled and an open agent turn fails.
- ``_record`` is the one way into the transcript; the prompt and permission lines go through it too.
"""

from __future__ import annotations

import logging
from typing import Any

from silo_nb.acp import AgentConnection
from silo_nb.sessions._host import SessionRegistry
from silo_nb.sessions._options import ConfigOptions
from silo_nb.sessions._permissions import PermissionDesk
from silo_nb.sessions._turns import TurnTracker
from silo_nb.sessions.capabilities import AgentCapabilities
from silo_nb.sessions.journal import JournalWriter, parse_lines
from silo_nb.sessions.kinds import SIDE_EFFECT_KINDS
from silo_nb.sessions.models import AgentCommand, AgentSessionUpdate
from silo_nb.sessions.parse import (
    MAX_FIELD_CHARS,
    MAX_RAW_DEPTH,
    MessageIdSynthesizer,
    parse_commands,
    parse_session_update,
    session_title,
)
from silo_nb.sessions.profiles import AgentProfile
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
    _connection: AgentConnection | None
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
    _journal_released = False  # set once the handle let its writer go (disposed): no more lines

    _journal_at_setup: tuple[AgentSessionUpdate, ...] | list[str]
    _profile: AgentProfile
    _caps: AgentCapabilities

    def _turn_context(self) -> dict[str, object]:
        """What a ``turn_end`` line records of the session (``silo_nb.frame`` reads it)."""
        config = {option.id: option.current_value for option in self._options.options}
        return {"profile": self._profile.id, "agent": self._caps.agent_name, "config": config}

    @property
    def journal(self) -> tuple[AgentSessionUpdate, ...]:
        """The journal as it stood when the session was set up (a resumed session's transcript so far);
        parsed on first use, so a restore that never asks costs no parse of a long journal."""
        if isinstance(self._journal_at_setup, list):
            self._journal_at_setup = tuple(parse_lines(self._journal_at_setup))
        return self._journal_at_setup

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

    def _record(self, update: AgentSessionUpdate, value: dict[str, Any] | None = None) -> None:
        """The one way into the transcript: the journal (``value``: the line's JSON, when the parser made
        it), then ``on_transcript`` listeners."""
        if self._writer is not None:
            if not self._journal_released:
                self._writer.append(update, value)
        else:
            self._keep_early(update)
        if not self._disposed:
            self._transcript_listeners.emit(update)

    def _keep_early(self, update: AgentSessionUpdate) -> None:
        """Before the session exists (no journal yet) updates wait for it, up to a bound: an agent
        flooding while it never answers initialize must not grow the kernel. What is beyond it belongs
        to no session yet; said once."""
        if len(self._early) < MAX_EARLY_UPDATES:
            self._early.append(update)
        elif len(self._early) == MAX_EARLY_UPDATES:
            log.warning(
                "%s sent over %d updates before its session existed; the rest are not kept",
                self.label,
                MAX_EARLY_UPDATES,
            )
            self._early.append(update)  # one past the bound: the warning is not repeated

    def _on_session_update(self, params: Any) -> None:
        if type(params) is not dict:  # what the reader decoded: always a plain dict or not a message
            return
        update_raw = params.get("update")
        if type(update_raw) is not dict:
            return
        sent_for = params.get("sessionId")
        # While the session is being set up, updates under another id are this session's: an agent that
        # adopts a new id on session/load replays under it before answering (claude-agent-acp does).
        if (
            sent_for != self._session_id
            and sent_for is not None
            and self._session_id is not None
            and not self._turns.handshaking
        ):
            log.warning("dropped an update for another session (%s) from %s", sent_for, self.label)
            return
        # The decoded dict itself becomes the update's raw: the reader hands it over and keeps nothing;
        # what the reader knows of the line (how deep, how long) spares the parser its walks.
        rpc = self._connection.rpc if self._connection is not None else None
        if rpc is not None:
            parsed = parse_session_update(
                update_raw,
                self._synth,
                shallow=rpc.nesting_bound <= MAX_RAW_DEPTH,
                short=rpc.line_bytes <= MAX_FIELD_CHARS,
            )
        else:
            parsed = parse_session_update(update_raw, self._synth)
        if parsed is None:
            return
        update, value = parsed
        if update.kind in SIDE_EFFECT_KINDS:
            self._apply_side_effects(update)
        # _record's steps, written out: this runs for every update.
        if self._writer is not None:
            if not self._journal_released:  # as in _record: the file is no longer ours
                self._writer.append(update, value)
        else:
            self._keep_early(update)
        if self._disposed:
            return
        self._transcript_listeners.emit(update)
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
