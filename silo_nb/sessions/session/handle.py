"""``AgentSessionHandle``: one live chat session, with Silo's semantics — the public handle only.

- ``connect`` (``sessions/connecting/connector.py``) builds the session's parts (``core.SessionCore``: the
  wiring, the journal slot, inbound traffic, turns, permissions, options, Stop) and hands back this handle,
  their public face: prompts, cancel, permissions, config options, listeners, dispose.
- The handle keeps no state of its own; prompts go through ``prompt_blocks`` (validation, the wire shape,
  the synthesized prompt line) and ``prompt_call`` (the call and how the turn ended).
- ``dispose`` is synchronous (it schedules :meth:`aclose`); ``aclose`` returns once the process group is
  gone and the journal is flushed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio

from silo_nb.acp import AcpConnectionClosed, AcpRpcError
from silo_nb.model import (
    AgentCommand,
    AgentElicitationRequest,
    AgentPermissionRequest,
    AgentPromptBlock,
    AgentPromptCapabilities,
    AgentPromptResult,
    AgentSessionConfigOption,
    AgentSessionError,
    AgentSessionInputError,
    AgentSessionSummary,
    AgentSessionUpdate,
    ResumeOutcome,
    StaleTurn,
    TurnUndoneLine,
    UndoItem,
    UndoReport,
    no_answer,
)
from silo_nb.sessions.auth_status import AgentAuthStatus
from silo_nb.sessions.journal import parse_lines
from silo_nb.sessions.mcp_servers import McpServerConfig
from silo_nb.sessions.session.client_tool_calls import ClientToolCalls
from silo_nb.sessions.session.core import SessionCore
from silo_nb.sessions.session.file_checkpoints import FileCheckpoints
from silo_nb.sessions.session.permission_desk import RuleAnswerer
from silo_nb.sessions.session.prompt_blocks import prompt_line, validate_prompt_blocks
from silo_nb.sessions.session.prompt_call import TurnEnd, list_sessions, send_prompt
from silo_nb.sessions.session.question_desk import QuestionPolicyLike
from silo_nb.sessions.session.steering import send_steer
from silo_nb.sessions.session.turn_undo import (
    TurnUndoPart,
    forked_before,
    rewind_conversation,
    turns_to_undo,
    undo_with,
)
from silo_nb.sessions.status import now_iso
from silo_nb.util import Disposable

__all__ = ["AgentSessionHandle"]

log = logging.getLogger("silo_nb.sessions")

RESOURCE_NOT_FOUND = -32002  # ACP: session/status of a session the agent does not know


class AgentSessionHandle:
    """A connected chat session. Get one from ``AgentSessionsService.connect``."""

    def __init__(self, core: SessionCore) -> None:
        self._core = core

    @property
    def core(self) -> SessionCore:
        """The session's parts (``session/core.py``): for silo_nb's own layers and tests, not a stable API."""
        return self._core

    # -- read-only surface ------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The status entry's id (``chat:<session id>``), as ``AgentsService.get_state`` lists it."""
        return self._core.id

    @property
    def session_id(self) -> str:
        """The agent's own session id (changes on a load that adopts a new id, or ``start_fresh``)."""
        return self._core.session_id

    @property
    def workspace_id(self) -> str:
        return self._core.workspace_id

    @property
    def cwd(self) -> str:
        return self._core.cwd

    @property
    def agent_id(self) -> str | None:
        return self._core.agent_id

    @property
    def resume_outcome(self) -> ResumeOutcome:
        """How the session was opened: ``new``, ``resumed`` or ``journal-only``."""
        return self._core.wiring.resume_outcome

    @property
    def label(self) -> str:
        return self._core.label

    @property
    def profile_id(self) -> str:
        return self._core.profile.id

    @property
    def agent_name(self) -> str:
        return self._core.wiring.caps.agent_name

    @property
    def can_resume(self) -> bool:
        return self._core.wiring.caps.can_resume

    @property
    def can_list(self) -> bool:
        return self._core.wiring.caps.can_list

    @property
    def prompt_capabilities(self) -> AgentPromptCapabilities:
        return self._core.wiring.caps.prompt

    @property
    def init_result(self) -> Mapping[str, Any]:
        return self._core.wiring.caps.init_result

    @property
    def config_options(self) -> tuple[AgentSessionConfigOption, ...]:
        return self._core.options.options

    @property
    def commands(self) -> tuple[AgentCommand, ...]:
        return self._core.commands

    @property
    def prompts_sent(self) -> int:
        """How many prompts this connection journaled (the ``n`` of ``silo-journal-user-<n>``)."""
        return self._core.user_prompts

    @property
    def current_turn(self) -> int:
        """The number of the running or latest turn, as the journal counts turns (turns a resumed or
        forked journal carried included); 0 before the first. ``undo(turn=N)`` takes these numbers."""
        return self._core.turn_number

    @property
    def file_checkpoints(self) -> FileCheckpoints | None:
        """The checkpoints of the session's folders taken at each turn's start and end (issue 32), whose
        ``undo_turn(n)`` puts back the files turn ``n`` changed; None when the profile's
        ``checkpoint_files`` is off."""
        return self._core.file_checkpoints

    @property
    def pending_permissions(self) -> tuple[AgentPermissionRequest, ...]:
        """Permission requests nobody has answered yet."""
        return self._core.permissions.pending

    @property
    def turn_quiescence_seconds(self) -> float:
        return self._core.turns.quiescence_seconds

    @turn_quiescence_seconds.setter
    def turn_quiescence_seconds(self, seconds: float) -> None:
        self._core.turns.quiescence_seconds = seconds

    @property
    def title(self) -> str:
        info = self._core.registry.get(self.id)
        return info.title if info else (self._core.title or self.label)

    @property
    def journal(self) -> tuple[AgentSessionUpdate, ...]:
        """The journal as it stood when the session was set up (a resumed session's transcript so far);
        parsed on first use, so a restore that never asks costs no parse of a long journal."""
        return self._core.journal.lines_at_setup

    def journal_lines(self) -> list[str]:
        """Every line journaled so far, those not on disk yet included (``[]`` before the journal opens)."""
        return self._core.journal.snapshot_lines()

    def journal_updates(self) -> tuple[AgentSessionUpdate, ...]:
        """:meth:`journal_lines` as updates; the journal at setup when there is no writer."""
        if self._core.journal.writer is None:
            return self.journal
        return tuple(parse_lines(self.journal_lines()))

    @property
    def journal_path(self) -> tuple[Path, Path] | None:
        """This session's journal file and the data folder it lives under (None before it has an id)."""
        if not self.session_id:
            return None
        journals = self._core.journal.journals
        return journals.path(self.workspace_id, self.session_id), journals.data_dir

    @property
    def turn_running(self) -> bool:
        """A prompt of this session is in flight (its turn has not ended)."""
        return self._core.turns.prompts_in_flight > 0

    @property
    def is_live(self) -> bool:
        """True while the agent process is connected and the handle is not disposed."""
        return not self.disposed and self.resume_outcome != "journal-only" and self._core.wiring.is_open

    @property
    def journal_in_use(self) -> bool:
        """Connected or connecting and not disposed: the journal lock's notion of "open in this kernel"."""
        return self._core.journal_in_use

    @property
    def journal_problem(self) -> str | None:
        """Why the journal cannot be written right now (accepted lines wait in memory), else None."""
        return self._core.journal.problem

    @property
    def disposed(self) -> bool:
        return self._core.disposed

    def stderr_tail(self, lines: int = 5) -> list[str]:
        connection = self._core.wiring.connection
        return connection.stderr_tail(lines) if connection is not None else []

    def __repr__(self) -> str:
        state = "disposed" if self.disposed else ("live" if self.is_live else self.resume_outcome)
        return f"<AgentSessionHandle {self.label!r} session_id={self.session_id!r} {state}>"

    # -- listeners --------------------------------------------------------------------------------

    def on_update(self, listener: Callable[[AgentSessionUpdate], None]) -> Disposable:
        """Every update the agent sends, in and outside turns. Added before the first prompt, the listener
        is first handed what the session got so far (pi's banner comes before anyone could listen)."""
        disposable = self._core.update_listeners.add(listener)
        self._core.replay_opening(listener)
        return disposable

    def on_transcript(self, listener: Callable[[AgentSessionUpdate], None]) -> Disposable:
        """Every update as it is journaled: the wire updates plus silo_nb's synthesized lines (the user
        prompt, permission requests and decisions). A transcript view fed from here shows exactly what a
        view repainted from the journal shows (improvement: Silo's UI appends its prompt locally). Added
        before the first prompt, it is first handed the session's opening, as :meth:`on_update` is."""
        disposable = self._core.transcript_listeners.add(listener)
        self._core.replay_opening(listener)
        return disposable

    def on_permission(self, listener: Callable[[AgentPermissionRequest], None] | RuleAnswerer) -> Disposable:
        """A listener (answer with ``request.respond``), or a policy that answers by rule (journaled)."""
        return self._core.permissions.add(listener, self.cwd)

    def on_elicitation(
        self, listener: Callable[[AgentElicitationRequest], None] | QuestionPolicyLike
    ) -> Disposable:
        """A listener for the agent's questions (answer with ``request.accept(values)``, ``decline()`` or
        ``cancel()``), or a policy that answers by rule (journaled). With none, questions are cancelled."""
        return self._core.questions.add(listener)

    @property
    def client_tool_calls(self) -> ClientToolCalls:
        """The tools silo_nb runs for the agent in this session's turns (the kernel tools' MCP server):
        each call journaled as ``kernel_tool`` lines and asking through :meth:`on_permission`'s flow."""
        return self._core.client_tools

    @property
    def pending_questions(self) -> tuple[AgentElicitationRequest, ...]:
        """Questions nobody has answered yet."""
        return self._core.questions.pending

    def on_config_options_changed(self, listener: Callable[[], None]) -> Disposable:
        return self._core.options.listeners.add(listener)

    def on_commands_changed(self, listener: Callable[[], None]) -> Disposable:
        return self._core.command_listeners.add(listener)

    # -- stale answers (issue 32) -------------------------------------------------------------------

    def add_stale_source(self, source: Callable[[], Iterable[StaleTurn]]) -> Disposable:
        """Register what tells this session's stale turns (the kernel tools' tracker of what each turn
        read registers itself); dispose of the result to take it back."""
        sources = self._core.stale_sources
        sources.append(source)

        def remove() -> None:
            if source in sources:
                sources.remove(source)

        return Disposable(remove)

    def stale_turns(self) -> list[StaleTurn]:
        """The turns whose answer was based on a variable or a cell that changed since (what changed, one
        phrase each: ``df changed``, ``df was deleted``, ``cell 3 changed``), oldest first. Empty where
        nothing tracks what the turns read (no kernel tools)."""
        changed: dict[int, list[str]] = {}
        for source in list(self._core.stale_sources):
            try:
                found = list(source())
            except Exception:
                log.exception("%s: a stale-answer source raised", self.label)
                continue
            for stale in found:
                said = changed.setdefault(stale.turn, [])
                said += [phrase for phrase in stale.changed if phrase not in said]
        return [StaleTurn(turn, tuple(said)) for turn, said in sorted(changed.items()) if said]

    # -- prompt / cancel --------------------------------------------------------------------------

    async def prompt(
        self, blocks: Iterable[AgentPromptBlock | Mapping[str, Any]], *, cell_id: str | None = None
    ) -> AgentPromptResult:
        """Send one turn and wait for it to end. Drive one turn at a time.

        ``cell_id`` (the notebook cell the prompt came from) is recorded with the journaled prompt.
        """
        core = self._core
        accepts = self.prompt_capabilities
        parsed = validate_prompt_blocks(
            blocks,
            embedded_context=accepts.embedded_context,
            image=accepts.image,
            audio=accepts.audio,
            label=self.label,
        )
        self._check_live()
        connection = core.wiring.connection
        assert connection is not None
        core.turns.prompt_started()
        line = prompt_line(parsed, core.user_prompts + 1, cell_id, core.cwd)
        if line is not None:
            core.user_prompts += 1
            core.record(line)
        files = core.file_checkpoints if line is not None else None  # a turn the journal counts
        turn = core.turn_number if files is not None else 0
        end = TurnEnd(core.stop)
        try:
            if files is not None:
                await files.capture(turn, "start")
            if line is not None and core.profile.checkpoint_conversation == "fork" and self.can_fork:
                await core.conversation_forks.before_turn(self._request, self.session_id, core.cwd)
            result = await send_prompt(
                connection,
                self.session_id,
                parsed,
                on_cancelled=self._cancel_if_live,
                stop=core.stop,
                sign_in=(core.wiring.caps.auth_methods, self.profile_id),
            )
            return end.answered(result)
        except BaseException as exc:
            end.raised(exc)
            raise
        finally:
            core.turns.prompt_ended(end.outcome, **end.details)
            if files is not None:
                with anyio.CancelScope(shield=True):  # a Stop or an interrupt still leaves the turn's end
                    await files.capture(turn, "end")

    def _cancel_if_live(self) -> None:
        if not self.disposed:
            self.cancel()

    def cancel(self) -> None:
        """Cancel the running turn: ``session/cancel``; pending permissions are answered ``cancelled``.

        The turn then ends within the profile's ``cancel_timeout``; if the agent had not stopped by then,
        calling this again ends the agent's processes and closes the session (``stop_control.py``)."""
        core = self._core
        connection = core.wiring.connection
        if self.resume_outcome == "journal-only" or connection is None:
            return
        if core.stop.overdue and connection.is_open:
            core.stop.kill(connection)
            return
        connection.rpc.notify("session/cancel", {"sessionId": self.session_id})
        core.permissions.cancel_all()
        core.questions.cancel_all()
        core.stop.requested()

    def cancel_child(self, child_session_id: str) -> bool:
        """Stop one subagent's current work (ACP v1.25): ``session/cancel`` with the child's session id,
        only for a child the agent announced with ``capabilities.cancel``; its pending permissions and
        questions are answered ``cancelled``. True if it was sent; the parent's turn goes on."""
        core = self._core
        connection = core.wiring.connection
        child = core.subagents.get(child_session_id)
        if child is None or not child.cancel or connection is None or not connection.is_open:
            return False
        connection.rpc.notify("session/cancel", {"sessionId": child.session_id})
        for request in core.permissions.pending:
            if request.child_session_id == child.session_id:
                request.respond("")  # an id no option has: answered cancelled
        for question in core.questions.pending:
            if question.child_session_id == child.session_id:
                question.cancel()
        return True

    @property
    def can_steer(self) -> bool:
        """The agent takes input during a turn (``_session/steering``; its ``initialize`` ``_meta``)."""
        return self._core.wiring.caps.can_steer

    async def steer(self, text: str) -> str:
        """Add ``text`` to the turn that is running, without waiting for it to end (the agent reads it
        mid-turn); returns the agent's outcome (``injected``, or ``startedNewTurn``). The text is shown
        and journaled in the turn. An agent that does not take it, or no turn running: AgentSessionError."""
        if not isinstance(text, str) or not text.strip():
            raise AgentSessionInputError("steer() takes the text to add to the running turn, as a string.")
        if not self.can_steer:
            raise AgentSessionError(
                f"{self.label} does not take input during a turn (its initialize offers no _meta.steering) "
                "— wait for the turn to end and prompt it."
            )
        self._check_live()
        if self._core.turns.prompts_in_flight == 0:
            raise AgentSessionError(
                f"No turn of {self.label} is running — send it with prompt() or %%prompt."
            )
        return await send_steer(
            text,
            session_id=self.session_id,
            label=self.label,
            record=self._core.record,
            request=self._request,
        )

    @property
    def stop_overdue(self) -> bool:
        """A Stop went unanswered: the agent may still work on that turn; Stop again ends it."""
        return self._core.stop.overdue

    def _check_live(self) -> None:
        if self.resume_outcome == "journal-only":
            raise AgentSessionError(
                f"{self.label} is journal-only — reconnect with resume={{'session_id': "
                f"'{self.session_id}', 'start_fresh': True}} to continue."
            )
        if self.disposed:
            raise AgentSessionError(
                f"This {self.label} session was disconnected — connect again to continue."
            )
        connection = self._core.wiring.connection
        if connection is None or not connection.is_open:
            reason = connection.rpc.close_message if connection else None
            raise AgentSessionError(
                f"{self.label} is no longer connected ({(reason or 'connection closed').splitlines()[0]}) — "
                f"connect again with resume={{'session_id': '{self.session_id}'}} to continue."
            )

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        """A request on the live connection; a closed connection becomes ``AgentSessionError``."""
        self._check_live()
        connection = self._core.wiring.connection
        assert connection is not None
        seconds = self._core.profile.request_timeout
        try:
            with anyio.fail_after(seconds):
                return await connection.rpc.request(method, params)
        except TimeoutError:
            raise no_answer(self.label, method, seconds) from None
        except AcpConnectionClosed as exc:
            raise AgentSessionError(f"{self.label} is no longer connected: {exc}") from exc

    # -- config options and sessions list -----------------------------------------------------------

    async def set_config_option(self, option_id: str, value: Any) -> None:
        """Set a session control; ``on_config_options_changed`` fires before this returns."""
        await self._core.options.set(option_id, value, self._request, self.session_id)

    async def list_sessions(self) -> list[AgentSessionSummary]:
        """``session/list`` on this live connection (no caching, no pagination)."""
        if not self.can_list:
            raise AgentSessionError(f"{self.label} does not support session/list.")
        if self.resume_outcome == "journal-only":
            raise AgentSessionError(f"{self.label} is journal-only — there is no live connection to ask.")
        self._check_live()
        connection = self._core.wiring.connection
        assert connection is not None
        return await list_sessions(connection, self.label, self._core.profile.request_timeout)

    @property
    def can_delete(self) -> bool:
        """The agent takes ``session/delete`` (its ``sessionCapabilities.delete``)."""
        return self._core.wiring.caps.can_delete

    async def delete(self, *, journal: bool = False) -> bool:
        """Forget this session: ``session/delete`` where the agent takes it, then the session is closed
        (as :meth:`aclose`). The journal stays (read it, export it) unless ``journal=True``. True when
        the agent deleted it; False when it does not take ``session/delete`` (only silo_nb let it go).
        An agent that refuses raises ``AgentSessionError`` with its message, and nothing is closed."""
        deleted = False
        if self.can_delete and self.is_live:
            try:
                await self._request("session/delete", {"sessionId": self.session_id})
            except AcpRpcError as exc:
                raise AgentSessionError(
                    f"{self.label} would not delete session {self.session_id}: {exc.agent_message()}"
                ) from exc
            deleted = True
        path = self._core.journal.journals.path(self.workspace_id, self.session_id)
        await self.aclose()
        if journal:
            self._core.journal.journals.remove(path, self.session_id)
        return deleted

    # -- undo (issue 32) ----------------------------------------------------------------------------

    def add_undo_part(self, part: TurnUndoPart) -> Disposable:
        """Register something that holds what turns changed (the notebook's cells, the kernel's variables):
        :meth:`undo` asks it for each turn it takes back (``turn_undo.py``)."""
        return self._core.undo_parts.add(part)

    async def undo(self, turn: int | None = None) -> UndoReport:
        """Take back the last turn, or go back to before turn ``turn`` (it and every later turn not undone
        yet, newest first): its files, cells and kernel variables, and the agent's memory of it where the
        agent can rewind. Journaled, so a restore shows those turns undone; the report says exactly what was
        restored and what could not be. Refused (one line) while a turn runs, or for a turn undone already."""
        core = self._core
        updates = self.journal_updates()
        targets = turns_to_undo(updates, turn, label=self.label, running=core.turns.prompts_in_flight > 0)

        async def conversation(number: int) -> UndoItem:
            subject = f"session {self.session_id}"
            if not self.is_live:
                said = f"the session is not connected: the agent will still remember turn {number}"
                return UndoItem("conversation", subject, False, said)
            if core.profile.checkpoint_conversation == "off":
                said = (
                    "not rewound (the profile's checkpoint_conversation is off): the agent still remembers "
                    f"turn {number}"
                )
                return UndoItem("conversation", subject, False, said)
            try:
                item = await rewind_conversation(self._request, self.session_id, updates, number)
            except AgentSessionError as exc:
                item = UndoItem("conversation", subject, False, str(exc).splitlines()[0])
            return item if item.restored else (forked_before(targets[-1], self.profile_id) or item)

        parts = core.undo_parts.ordered()
        files = core.file_checkpoints
        items = await undo_with([files, *parts] if files is not None else parts, targets, conversation)
        # The fork an item points at (``forked_before``: its subject is "fork <id>").
        fork = next(
            (
                i.subject.removeprefix("fork ")
                for i in items
                if i.part == "conversation" and i.subject.startswith("fork ")
            ),
            None,
        )
        report = UndoReport(tuple(t.number for t in targets if t.number is not None), tuple(items), fork)
        line = TurnUndoneLine(
            turns=list(report.turns), items=[item.wire() for item in items], fork_session_id=fork
        )
        core.record(line.update(timestamp=now_iso()))
        return report

    # -- fork, title, status (ACP v1.25, unstable) --------------------------------------------------

    @property
    def can_fork(self) -> bool:
        """The agent takes ``session/fork`` (its ``sessionCapabilities.fork``)."""
        return self._core.wiring.caps.can_fork

    @property
    def can_set_title(self) -> bool:
        """The agent takes ``session/set_title`` (its ``sessionCapabilities.title``)."""
        return self._core.wiring.caps.can_set_title

    @property
    def system_prompt(self) -> dict[str, Any] | None:
        """The ``systemPrompt`` this session sends on session/new, load, resume and fork (None: none, or
        the agent does not take one)."""
        return self._core.system_prompt.wire(self._core.wiring.caps)

    async def fork(
        self,
        *,
        title: str | None = None,
        mcp_servers: Iterable[Any] = (),
        system_prompt: str | None = None,
        system_prompt_mode: str | None = None,
        notebook_guidance: bool = False,
        cwd: str | None = None,
    ) -> AgentSessionHandle:
        """A new session forked from this one (``session/fork``, where the agent offers it), in a new
        agent process: its own handle and journal, the journal starting as a copy of this one's, so a
        restore shows this session's turns and then the fork's. Raises ``AgentSessionError`` where the
        agent does not offer fork. The fork keeps this session's system prompt unless told otherwise;
        ``mcp_servers`` are offered to it besides the profile's (the kernel tools of ``%silo fork``); ``cwd``
        (an absolute folder) is where the fork works, by default this session's."""
        if cwd is not None and not (isinstance(cwd, str) and os.path.isabs(cwd)):
            raise AgentSessionInputError(f"fork(cwd={cwd!r}) takes an absolute folder path.")
        forker = self._core.forker
        if forker is None:
            raise AgentSessionError(f"{self.label}: this session was not opened by connect — it cannot fork.")
        servers = [
            s if isinstance(s, McpServerConfig) else McpServerConfig.model_validate(s) for s in mcp_servers
        ]
        forked: AgentSessionHandle = await forker(
            self,
            title=title,
            mcp_servers=servers,
            system_prompt=system_prompt,
            system_prompt_mode=system_prompt_mode,
            notebook_guidance=notebook_guidance,
            cwd=cwd,
        )
        return forked

    async def set_title(self, title: str) -> None:
        """Name the session on the agent's side (``session/set_title``, where it offers
        ``sessionCapabilities.title``); the agents list shows it at once, as the agent stored it (its answer's
        ``title``: it may normalize it)."""
        if not isinstance(title, str) or not title.strip():
            raise AgentSessionInputError(
                "set_title() takes a non-empty text, e.g. handle.set_title('Cleaning')."
            )
        if not self.can_set_title:
            raise AgentSessionError(
                f"{self.label} does not offer session/set_title (its sessionCapabilities.title) — the title "
                "stays the agent's own."
            )
        title = " ".join(title.split())
        try:
            answer = await self._request("session/set_title", {"sessionId": self.session_id, "title": title})
        except AcpRpcError as exc:
            raise AgentSessionError(f"{self.label} would not take the title: {exc.agent_message()}") from exc
        stored = answer.get("title") if isinstance(answer, dict) else None
        if isinstance(stored, str) and stored.strip():
            title = " ".join(stored.split())[:500]
        self._core.title = title
        self._core.registry.patch(self.id, title=title)

    @property
    def can_status(self) -> bool:
        """The agent takes ``session/status`` (its ``sessionCapabilities.status``)."""
        return self._core.wiring.caps.can_status

    async def session_status(self, session_id: str | None = None) -> str | None:
        """``session/status`` of this session (or of ``session_id``, another of this agent's: the request
        has no side effects), where the agent offers ``sessionCapabilities.status``: ``"open"`` (in the
        agent's memory), ``"saved"`` (it can be resumed), ``"unknown"`` (the agent does not know it,
        -32002), or the agent's own word (ACP: to be treated as ``saved``); None where not offered."""
        if not self.can_status:
            return None
        asked = session_id or self.session_id
        try:
            result = await self._request("session/status", {"sessionId": asked})
        except AcpRpcError as exc:
            if exc.code == RESOURCE_NOT_FOUND:
                return "unknown"
            raise AgentSessionError(f"{self.label} would not say its status: {exc.agent_message()}") from exc
        status = result.get("status") if isinstance(result, dict) else None
        return status if isinstance(status, str) and status else "saved"

    @property
    def auth_status(self) -> AgentAuthStatus | None:
        """What the agent last said of its sign-in (``_auth/status_update`` or ACP's
        ``auth/status_update``); None until it says."""
        return self._core.wiring.auth_status

    # -- dispose ----------------------------------------------------------------------------------

    def dispose(self) -> None:
        """End the session: the agent's whole process group is killed. Idempotent; returns at once."""
        core = self._core
        if core.close_task is not None or core.disposed:
            return
        core.begin_dispose()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            core.terminals.kill_now()
            if core.wiring.connection is not None:
                core.wiring.connection.kill_now()
            core.journal.release()
            return
        core.close_task = loop.create_task(core.close(), name=f"silo_nb dispose {self.id}")

    async def aclose(self) -> None:
        """Awaitable :meth:`dispose`: returns once the process is gone and the journal is flushed."""
        core = self._core
        if core.close_task is None:
            if core.disposed:
                return
            core.begin_dispose()
            core.close_task = asyncio.get_running_loop().create_task(core.close())
        await asyncio.shield(core.close_task)

    async def __aenter__(self) -> AgentSessionHandle:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
