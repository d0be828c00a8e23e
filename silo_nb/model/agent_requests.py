"""What an agent asks of the user, as silo_nb hands it to listeners: a permission before a tool call, and a
question (ACP elicitation). Frozen requests that point at the session's desk, which keeps the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import Field, PrivateAttr

from silo_nb.model.models import AgentToolCall, FrozenModel

__all__ = [
    "AgentElicitationRequest",
    "AgentPermissionOption",
    "AgentPermissionRequest",
    "PermissionAnswers",
    "QuestionAnswers",
]


# -- permissions -------------------------------------------------------------------------------------


class AgentPermissionOption(FrozenModel):
    """One answer the agent offers (its own id, label and kind: ``allow_once``, ``reject_always``…)."""

    option_id: str
    name: str
    kind: str


class PermissionAnswers(Protocol):
    """Where a session keeps its permission answers (``sessions/session/permission_desk.py``); a request
    only points at it, so the frozen request itself holds no mutable state."""

    def settle(self, request_id: str, option_id: str | None, *, by: str | None = None) -> None: ...

    def outcome(self, request_id: str) -> tuple[bool, str | None]: ...


class AgentPermissionRequest(FrozenModel):
    """The agent asks before a tool call. Answer with :meth:`respond`; the first answer wins.

    ``request_id`` names the request within its session (``silo-permission-<n>``); the answer itself is
    kept by the session's permission desk, which the request refers to.
    """

    tool_call_id: str
    title: str
    options: tuple[AgentPermissionOption, ...]
    tool_call: AgentToolCall | None = None
    raw: dict[str, Any] = Field(default_factory=dict)
    request_id: str = ""
    # A subagent's request (ACP v1.25): the child session that asks, and how it is named (its title).
    child_session_id: str | None = None
    child_title: str | None = None
    _answers: PermissionAnswers | None = PrivateAttr(default=None)

    def respond(self, option_id: str, *, by: str | None = None) -> None:
        """Answer with one of :attr:`options`. Idempotent; an unknown id answers ``cancelled``. ``by``
        names what answered when it is not a person (a rule; journaled as ``decidedBy``)."""
        known = any(option.option_id == option_id for option in self.options)
        if self._answers is None:
            return
        if by is None:  # a person: the call every PermissionAnswers takes (one of a test's own, too)
            self._answers.settle(self.request_id, option_id if known else None)
        else:
            self._answers.settle(self.request_id, option_id if known else None, by=by)

    @property
    def answered(self) -> bool:
        return self._answers is not None and self._answers.outcome(self.request_id)[0]

    @property
    def answer(self) -> str | None:
        """The option id chosen, ``None`` for cancelled (or while unanswered; see :attr:`answered`)."""
        return self._answers.outcome(self.request_id)[1] if self._answers is not None else None

    def attach_answers(self, answers: PermissionAnswers) -> AgentPermissionRequest:
        """Point this request at where its answer is kept (the session's permission desk does, once)."""
        self._answers = answers
        return self


# -- questions (elicitation) -------------------------------------------------------------------------


class QuestionAnswers(Protocol):
    """Where a session keeps its questions' answers (``session/question_desk.py``)."""

    def answer(
        self, request_id: str, action: str, content: dict[str, Any] | None, *, by: str = "user"
    ) -> None: ...

    def outcome(self, request_id: str) -> tuple[bool, str | None, dict[str, Any] | None]: ...

    def check(self, request_id: str, values: Mapping[str, Any]) -> dict[str, Any]: ...


class AgentElicitationRequest(FrozenModel):
    """The agent asks the user something (ACP ``elicitation/create``): fill a form (``mode="form"``:
    ``requested_schema``) or visit a link (``mode="url"``). Answer with :meth:`accept`, :meth:`decline`
    or :meth:`cancel`; the first answer wins; :meth:`accept` checks the values against the schema and
    raises ``ValueError`` naming the field before anything is sent."""

    request_id: str
    mode: str
    message: str
    requested_schema: dict[str, Any] = Field(default_factory=dict)
    url: str | None = None
    elicitation_id: str | None = None
    tool_call_id: str | None = None
    raw: dict[str, Any] = Field(default_factory=dict)
    # A subagent's question (ACP v1.25): the child session that asks, and how it is named (its title).
    child_session_id: str | None = None
    child_title: str | None = None
    _answers: QuestionAnswers | None = PrivateAttr(default=None)

    def accept(self, values: Mapping[str, Any] | None = None, *, by: str | None = None) -> None:
        """Send ``values`` (by field name; a url question takes none). Idempotent once answered. ``by``
        names who answered when it is not the user (a rule), as the decision line records it."""
        if self._answers is None:
            return
        content = self._answers.check(self.request_id, values or {})
        self._answer("accept", content, by)

    def decline(self, *, by: str | None = None) -> None:
        """The user (or ``by``) says no."""
        self._answer("decline", None, by)

    def cancel(self, *, by: str | None = None) -> None:
        """Nobody answers (the turn was stopped, the form was closed)."""
        self._answer("cancel", None, by)

    def _answer(self, action: str, content: dict[str, Any] | None, by: str | None) -> None:
        if self._answers is None:
            return
        if by is None:  # the user: the call every QuestionAnswers takes
            self._answers.answer(self.request_id, action, content)
        else:
            self._answers.answer(self.request_id, action, content, by=by)

    @property
    def answered(self) -> bool:
        return self._answers is not None and self._answers.outcome(self.request_id)[0]

    @property
    def action(self) -> str | None:
        """``accept``, ``decline`` or ``cancel`` once answered, else None."""
        return self._answers.outcome(self.request_id)[1] if self._answers is not None else None

    @property
    def content(self) -> dict[str, Any] | None:
        """The values accepted (None unless accepted)."""
        return self._answers.outcome(self.request_id)[2] if self._answers is not None else None

    def attach_answers(self, answers: QuestionAnswers) -> AgentElicitationRequest:
        """Point this request at where its answer is kept (the session's question desk does, once)."""
        self._answers = answers
        return self
