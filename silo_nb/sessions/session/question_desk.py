"""The question desk of one session: the agent's ``elicitation/create`` requests, their answers and their
transcript lines (the permission desk's twin, ``permission_desk.py``).

- Each request gets a session-local id (``silo-question-<n>``) and an :class:`AgentElicitationRequest`
  pointing here; listeners (``handle.on_elicitation``) or a policy answer it; the first answer wins.
  With no listener it is answered ``cancel`` at once and nothing is recorded (as for permissions).
- Form questions are read leniently (``question_schema.py``: bounded fields, cut titles); ``accept``
  checks the values first. A url question is answered ``accept`` once the user has the link;
  ``elicitation/complete`` later marks it done. Unknown modes are refused (-32602), as ACP asks.
- The request and its answer are both recorded (``question_request``, ``question_decision``, keyed by
  ``requestId``; the answer says by whom: ``user``, a policy's rule, ``agent`` when the agent withdrew it
  with ``$/cancel_request``): journaled, shown, restored.
- A policy is any object with ``answer(request) -> (action, values, why)``
  (``silo_nb.experiments.QuestionPolicy`` answers by field name, else declines).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import anyio

from silo_nb.acp import AcpRpcError
from silo_nb.model import (
    TEXT_LIMIT,
    AgentElicitationRequest,
    AgentSessionUpdate,
    QuestionDecisionLine,
    QuestionField,
    QuestionRequestLine,
    check_answer,
    read_fields,
)
from silo_nb.util import Disposable, ListenerSet

__all__ = ["QuestionDesk", "QuestionPolicyLike"]

log = logging.getLogger("silo_nb.sessions")

INVALID_PARAMS = -32602
MODES = ("form", "url")
ACTIONS = ("accept", "decline", "cancel")


@runtime_checkable
class QuestionPolicyLike(Protocol):
    """Answers questions by rule: (``accept``/``decline``/``cancel``, the values, why)."""

    def answer(self, request: AgentElicitationRequest) -> tuple[str, Mapping[str, Any] | None, str]: ...


@dataclass
class _Pending:
    request: AgentElicitationRequest
    fields: tuple[QuestionField, ...]
    answered: anyio.Event = field(default_factory=anyio.Event)
    action: str | None = None
    content: dict[str, Any] | None = None
    by: str = "user"
    completed: bool = False


class QuestionDesk:
    """Pending questions of one session (see the module docstring)."""

    def __init__(
        self,
        *,
        record: Callable[[AgentSessionUpdate], None],
        on_blocked: Callable[[], None],
        on_answered: Callable[[], None],
    ) -> None:
        self.listeners: ListenerSet[[AgentElicitationRequest]] = ListenerSet("on_elicitation")
        self._record, self._on_blocked, self._on_answered = record, on_blocked, on_answered
        self._count = 0
        self._requests: dict[str, _Pending] = {}
        self._by_elicitation: dict[str, str] = {}  # url questions' elicitationId → request id

    # -- QuestionAnswers (what a request asks of the desk) -----------------------------------------

    def check(self, request_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
        pending = self._requests.get(request_id)
        if pending is None or pending.request.mode != "form":
            if values:
                raise ValueError("this question takes no values (it is not a form)")
            return {}
        return check_answer(pending.fields, values)

    def answer(
        self, request_id: str, action: str, content: dict[str, Any] | None, *, by: str = "user"
    ) -> None:
        pending = self._requests.get(request_id)
        if pending is None or pending.answered.is_set() or action not in ACTIONS:
            return
        pending.action, pending.content, pending.by = action, content, by
        pending.answered.set()

    def outcome(self, request_id: str) -> tuple[bool, str | None, dict[str, Any] | None]:
        pending = self._requests.get(request_id)
        if pending is None:
            return False, None, None
        return pending.answered.is_set(), pending.action, pending.content

    # -- the session's side ------------------------------------------------------------------------

    def add(self, listener: Callable[[AgentElicitationRequest], None] | QuestionPolicyLike) -> Disposable:
        """Register a listener, or a policy (answered at once, its rule journaled)."""
        if not isinstance(listener, QuestionPolicyLike):
            return self.listeners.add(listener)
        policy = listener

        def answer(request: AgentElicitationRequest) -> None:
            action, values, why = policy.answer(request)
            try:
                content = self.check(request.request_id, values or {}) if action == "accept" else None
            except ValueError as exc:
                log.warning("a question policy's answer did not fit the question (%s); declined", exc)
                action, content, why = "decline", None, f"{why} (its values did not fit: {exc})"
            self.answer(request.request_id, action, content, by=why)

        return self.listeners.add(answer)

    @property
    def pending(self) -> tuple[AgentElicitationRequest, ...]:
        return tuple(p.request for p in self._requests.values() if not p.answered.is_set())

    def cancel_all(self) -> None:
        """Answer every pending question ``cancel`` (a Stop, dispose, the agent going away)."""
        for request_id in list(self._requests):
            self.answer(request_id, "cancel", None, by="stopped")

    def fields(self, request_id: str) -> tuple[QuestionField, ...]:
        pending = self._requests.get(request_id)
        return pending.fields if pending is not None else ()

    async def ask(self, params: Any, *, open_: bool, child: tuple[str, str] | None = None) -> dict[str, Any]:
        """Serve one ``elicitation/create``; ``open_`` False (disposed) answers cancel. ``child``: the
        subagent that asks (its session id and label), named on the request and its journal lines."""
        raw = dict(params) if isinstance(params, Mapping) else {}
        mode = raw.get("mode")
        if mode not in MODES:
            raise AcpRpcError(
                INVALID_PARAMS, f"elicitation mode {str(mode)[:40]!r} is not supported (form, url)"
            )
        if mode == "url" and not (
            isinstance(raw.get("url"), str) and isinstance(raw.get("elicitationId"), str)
        ):
            raise AcpRpcError(INVALID_PARAMS, "a url elicitation needs a url and an elicitationId")
        if not open_ or not self.listeners:
            return {"action": "cancel"}  # nobody to ask: nothing is recorded (as for permissions)
        self._count += 1
        message = raw.get("message")
        tool_call_id = raw.get("toolCallId")
        request = AgentElicitationRequest(
            request_id=f"silo-question-{self._count}",
            mode=mode,
            message=message[: TEXT_LIMIT * 8] if isinstance(message, str) else "",
            requested_schema=raw.get("requestedSchema")
            if isinstance(raw.get("requestedSchema"), dict)
            else {},
            url=raw.get("url") if mode == "url" else None,
            elicitation_id=raw.get("elicitationId") if mode == "url" else None,
            tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
            raw=raw,
            child_session_id=child[0] if child else None,
            child_title=child[1] if child else None,
        ).attach_answers(self)
        fields, total = read_fields(request.requested_schema) if mode == "form" else ((), 0)
        pending = _Pending(request, fields)
        self._requests[request.request_id] = pending
        if request.elicitation_id is not None:
            self._by_elicitation[request.elicitation_id] = request.request_id
        self._record(_as_child(_request_line(request, fields, total), request))
        try:
            self.listeners.emit(request)
            if not pending.answered.is_set():
                self._on_blocked()
            await pending.answered.wait()
        except BaseException:  # the agent withdrew it ($/cancel_request) or the session went away
            self.answer(request.request_id, "cancel", None, by="agent")
            raise
        finally:
            self._record(_as_child(_decision_line(pending), pending.request))
            self._on_answered()
        if pending.action == "accept":
            return (
                {"action": "accept", "content": pending.content or {}}
                if mode == "form"
                else {"action": "accept"}
            )
        return {"action": pending.action or "cancel"}

    def completed(self, params: Any) -> None:
        """``elicitation/complete``: a url question's flow is done (unknown ids are ignored, as ACP asks)."""
        elicitation_id = params.get("elicitationId") if isinstance(params, dict) else None
        request_id = self._by_elicitation.get(elicitation_id) if isinstance(elicitation_id, str) else None
        pending = self._requests.get(request_id) if request_id is not None else None
        if pending is None or pending.completed:
            return
        pending.completed = True
        self._record(_as_child(_decision_line(pending), pending.request))


def _as_child(line: AgentSessionUpdate, request: AgentElicitationRequest) -> AgentSessionUpdate:
    """A subagent's question's line carries the child's id (the transcript shows it in the child's)."""
    child = request.child_session_id
    return line if child is None else line.model_copy(update={"child_session_id": child})


def _base(request: AgentElicitationRequest) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "requestId": request.request_id,
        "mode": request.mode,
        "message": request.message,
    }
    if request.url is not None:
        raw["url"] = request.url
    if request.tool_call_id is not None:
        raw["toolCallId"] = request.tool_call_id
    return raw


def _request_line(
    request: AgentElicitationRequest, fields: tuple[QuestionField, ...], total: int
) -> AgentSessionUpdate:
    raw = _base(request)
    if request.mode == "form":
        raw["fields"] = [
            {"name": f.name, "title": f.title, "type": f.type, "required": f.required} for f in fields
        ]
        raw["fieldCount"] = total
    return QuestionRequestLine.written(raw)


def _decision_line(pending: _Pending) -> AgentSessionUpdate:
    raw = _base(pending.request)
    raw.update(action=pending.action or "cancel", by=pending.by)
    if pending.content is not None:
        raw["content"] = pending.content
    if pending.completed:
        raw["completed"] = True
    return QuestionDecisionLine.written(raw)
