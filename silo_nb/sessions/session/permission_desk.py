"""The permission desk of one session: pending requests, their answers, and their transcript lines.

- Each ``session/request_permission`` gets a session-local id (``silo-permission-<n>``). The desk keeps
  the answer (the first one wins; kept for the session's life, so a late look still sees it) and wakes
  the agent's request; the ``AgentPermissionRequest`` handed
  to listeners only refers to the desk, so the frozen model carries no hidden mutable state.
- Improvement over Silo (which keeps no record): the request and its decision are both *recorded* as
  synthesized updates (``permission_request``, ``permission_decision``, keyed by ``requestId``), which go
  to the journal and to the session's transcript stream alike. The transcript reducer upserts by that
  id, so a request answered inside a listener shows once, live and after a restore. With no listener
  the request is answered ``cancelled`` at once and nothing is recorded (Silo's rule).
- A *policy* (any object with ``decide(request, cwd) -> (option_id | None, why)``, e.g.
  ``silo_nb.experiments.PermissionPolicy``) can stand in for a listener: it answers at once, and its
  decision line also carries ``decidedBy`` (the rule that chose), so unattended answers are auditable
  beside human ones. Nothing is approved unless a listener or a policy says so.
- A request that cannot be answered truthfully — no options, or one option id offered twice (a button
  "Reject" that sends the id of "Allow") — is answered ``cancelled`` at once, asking nobody; a listener
  or a policy that raises answers it ``cancelled`` at once too. The decision line's ``note`` says why,
  so the turn shows it (issue 21).
- silo_nb can ask for itself (:meth:`PermissionDesk.ask_for_client`: a kernel tool's ``run_code``, an
  agent's write through the client to a file that runs code, ``client_files.py``): the same request,
  listeners, policies, buttons and journal lines as an agent's request; ``raw.origin`` is ``silo_nb``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import anyio
import anyio.lowlevel

from silo_nb.model import (
    PERMISSION_REQUEST_KIND,
    AgentPermissionOption,
    AgentPermissionRequest,
    AgentSessionUpdate,
    PermissionDecisionLine,
    PermissionRequestLine,
)
from silo_nb.sessions.journal import parse_lines
from silo_nb.updates import (
    parse_permission_options,
    parse_tool_call,
)
from silo_nb.util import Disposable, ListenerSet, gc_paused

__all__ = ["PermissionDesk", "RuleAnswerer"]


@dataclass
class _Pending:
    # None once the decision is recorded: what a late look asks (``outcome``) is the answer, and the
    # request itself (10,000 options, if the agent sent them) is let go with whoever else held it.
    request: AgentPermissionRequest | None
    answered: anyio.Event = field(default_factory=anyio.Event)
    settled: bool = False
    choice: str | None = None
    by: str | None = None
    note: str | None = None


@runtime_checkable
class RuleAnswerer(Protocol):
    """What answers permission requests by rule (``silo_nb.PermissionPolicy`` is one): the option id to
    choose (None: cancel) and why."""

    def decide(self, request: AgentPermissionRequest, cwd: str) -> tuple[str | None, str]: ...


class PermissionDesk:
    """Pending permission requests of one session (see the module docstring)."""

    def __init__(
        self,
        *,
        record: Callable[[AgentSessionUpdate], None],
        on_blocked: Callable[[], None],
        on_answered: Callable[[], None],
    ) -> None:
        self.listeners: ListenerSet[[AgentPermissionRequest]] = ListenerSet("on_permission")
        self._record = record
        self._on_blocked = on_blocked
        self._on_answered = on_answered
        self._count = 0
        self._requests: dict[str, _Pending] = {}

    # -- PermissionAnswers (what a request asks of the desk) ----------------------------------------------

    def settle(
        self, request_id: str, option_id: str | None, *, by: str | None = None, note: str | None = None
    ) -> None:
        pending = self._requests.get(request_id)
        if pending is None or pending.settled:
            return
        pending.settled = True
        pending.choice = option_id
        pending.by = by
        pending.note = note
        pending.answered.set()

    def add(self, listener: Callable[[AgentPermissionRequest], None] | RuleAnswerer, cwd: str) -> Disposable:
        """Register a listener, or a policy (answered at once, ``decidedBy`` journaled)."""
        if not isinstance(listener, RuleAnswerer):
            return self.listeners.add(listener)
        policy = listener

        def answer(request: AgentPermissionRequest) -> None:
            try:
                option_id, why = policy.decide(request, cwd)
            except Exception as exc:
                note = f"the permission policy raised {type(exc).__name__}: {exc}; answered cancelled"
                self.settle(request.request_id, None, by=type(policy).__name__, note=note)
                return
            known = any(option.option_id == option_id for option in request.options)
            self.settle(request.request_id, option_id if known else None, by=why)

        return self.listeners.add(answer)

    def outcome(self, request_id: str) -> tuple[bool, str | None]:
        pending = self._requests.get(request_id)
        return (pending.settled, pending.choice) if pending is not None else (False, None)

    # -- the session's side ----------------------------------------------------------------------------

    def continue_after(self, lines: Iterable[str]) -> None:
        """Number new requests after the highest a resumed journal already holds, so ids stay unique (only
        the lines that can hold a request are parsed)."""
        for update in parse_lines([line for line in lines if PERMISSION_REQUEST_KIND in line]):
            request_id = update.raw.get("requestId") if update.kind == PERMISSION_REQUEST_KIND else None
            number = request_id.rpartition("-")[2] if isinstance(request_id, str) else ""
            if number.isdigit():
                self._count = max(self._count, int(number))

    @property
    def pending(self) -> tuple[AgentPermissionRequest, ...]:
        """Requests nobody has answered yet, in arrival order."""
        return tuple(p.request for p in self._requests.values() if not p.settled and p.request is not None)

    def cancel_all(self) -> None:
        """Answer every pending request ``cancelled`` (a cancel, dispose or the agent going away)."""
        for request_id in list(self._requests):
            self.settle(request_id, None)

    async def ask(self, params: Any, *, open_: bool, child: tuple[str, str] | None = None) -> dict[str, Any]:
        """Serve one ``session/request_permission``; ``open_`` False (disposed) answers cancelled.
        ``child``: the subagent that asks (its session id and label), named on the request and its lines."""
        raw = dict(params) if isinstance(params, Mapping) else {}
        call_raw = raw.get("toolCall") if isinstance(raw.get("toolCall"), Mapping) else {}
        assert isinstance(call_raw, Mapping)
        if not open_ or not self.listeners:
            return {"outcome": {"outcome": "cancelled"}}  # Silo's rule; nothing is recorded
        self._count += 1
        request_id = f"silo-permission-{self._count}"  # taken now: another request may come meanwhile
        options = await _options_stepwise(raw.get("options"))
        request = AgentPermissionRequest(
            tool_call_id=str(call_raw.get("toolCallId") or raw.get("toolCallId") or ""),
            title=str(call_raw.get("title") or raw.get("title") or "The agent is requesting permission."),
            options=options,
            tool_call=parse_tool_call(call_raw),
            raw=raw,
            request_id=request_id,
            child_session_id=child[0] if child else None,
            child_title=child[1] if child else None,
        ).attach_answers(self)
        # Reading 10,000 options, recording them and showing the request are each one step of the loop,
        # with the kernel's other work (a cell's 1+1) between them, not one long step.
        await anyio.lowlevel.checkpoint()
        pending = _Pending(request)
        self._requests[request.request_id] = pending
        self._record(_line(request))
        try:
            await anyio.lowlevel.checkpoint()
            unanswerable = _unanswerable(request)
            if pending.settled:
                pass  # cancelled meanwhile: nothing to show
            elif unanswerable is not None:
                self.settle(request.request_id, None, note=f"{unanswerable}; answered cancelled")
            elif (failed := self.listeners.emit_checked(request)) is not None:
                note = (
                    f"the on_permission listener raised {type(failed).__name__}: {failed}; answered cancelled"
                )
                self.settle(request.request_id, None, note=note)
            if not pending.settled:
                self._on_blocked()
            await pending.answered.wait()
        finally:
            self.settle(request.request_id, None)
            decision = _line(
                request,
                decided=True,
                choice=pending.choice,
                by=pending.by,
                note=pending.note,
            )
            self._record(decision)
            pending.request = None
            self._on_answered()
        if pending.choice is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": pending.choice}}

    async def ask_for_client(
        self, tool_call: Mapping[str, Any], options: Sequence[Mapping[str, Any]], *, open_: bool
    ) -> str | None:
        """A permission silo_nb asks for itself, before a tool call of its own (``tool_call`` and
        ``options`` in ACP's shape): served exactly like an agent's request. The chosen option id, or
        None (cancelled, or nobody to ask)."""
        params = {"toolCall": dict(tool_call), "options": [dict(o) for o in options], "origin": "silo_nb"}
        outcome = (await self.ask(params, open_=open_))["outcome"]
        choice = outcome.get("optionId") if outcome.get("outcome") == "selected" else None
        return choice if isinstance(choice, str) else None


# Options read per step of the loop: 10,000 options are ten steps of a few milliseconds, with the kernel's
# other work (a cell's 1+1) between them, instead of one step of 25 ms.
OPTIONS_PER_STEP = 1000


async def _options_stepwise(value: Any) -> tuple[AgentPermissionOption, ...]:
    """:func:`parse_permission_options` of ``value``, :data:`OPTIONS_PER_STEP` at a time. A long list's
    models go straight to the collector's oldest generation (``util.gc_paused``'s promotion): they live
    until the request is answered, and through the young collections meanwhile they would count towards
    a full one (10,000 options made the kernel walk its whole heap, 0.1 s, every few requests)."""
    if not isinstance(value, list) or len(value) <= OPTIONS_PER_STEP:
        return parse_permission_options(value)
    parsed: list[AgentPermissionOption] = []
    with gc_paused(promote=True):
        for start in range(0, len(value), OPTIONS_PER_STEP):
            parsed.extend(parse_permission_options(value[start : start + OPTIONS_PER_STEP]))
            await anyio.lowlevel.checkpoint()
    return tuple(parsed)


def _unanswerable(request: AgentPermissionRequest) -> str | None:
    """Why no answer could be sent truthfully (no option to send; an id that names two), or None."""
    if not request.options:
        return "the agent offered no options"
    ids: set[str] = set()
    for option in request.options:
        if option.option_id in ids:
            return f"the agent offered option id {option.option_id!r} twice"
        ids.add(option.option_id)
    return None


def _line(
    request: AgentPermissionRequest,
    *,
    decided: bool = False,
    choice: str | None = None,
    by: str | None = None,
    note: str | None = None,
) -> AgentSessionUpdate:
    raw: dict[str, Any] = {
        "requestId": request.request_id,
        "toolCallId": request.tool_call_id,
        "title": request.title,
        # to_json's shape, written out: a request can carry 10,000 options. The request line keeps them all
        # (the record); a decision only the chosen one, all a reader of it needs (its name and kind).
        "options": [
            {"optionId": option.option_id, "name": option.name, "kind": option.kind}
            for option in (
                request.options
                if not decided
                else [next((o for o in request.options if o.option_id == choice), None)]
                if choice is not None
                else []
            )
            if option is not None
        ],
    }
    if decided:
        raw["optionId"] = choice
        if by is not None:
            raw["decidedBy"] = by
        if note is not None:
            raw["note"] = note
    line = PermissionDecisionLine if decided else PermissionRequestLine
    written = line.written(raw, tool_call=request.tool_call)
    child = request.child_session_id  # a subagent's: shown in the child's transcript
    return written if child is None else written.model_copy(update={"child_session_id": child})
