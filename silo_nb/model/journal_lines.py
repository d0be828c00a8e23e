"""silo_nb's own journal lines, one typed model per kind: the contract between the part of a session that
writes a line and every reader of it (restore, ``silo_nb.frame``, the replay agent, the results page).

A line is an ``AgentSessionUpdate`` whose ``raw`` is the model's camelCase dump, with ``synthesized: true``
(what tells it from an agent's update). Writers build the model and call :meth:`SiloLine.update`; readers
call ``Model.read(update)``, which gives the typed line, or None for another kind or a line that does not fit
(a damaged or hand-edited journal: readers then skip it, as Silo's skip kinds they do not know); only the
fields a reader cannot do without are required (a request's id, a terminal's, a written file's path). Fields a
writer did not set are left out of the line, as before the models; unknown fields are kept (a journal
written by a newer silo_nb reads back whole).

Adding a kind: its entry in ``kinds.py`` (how it is shown, counted, restored), its model here, and the
line where the session writes it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from silo_nb.model.kinds import (
    FILE_WRITE_KIND,
    KERNEL_TOOL_KIND,
    PERMISSION_DECISION_KIND,
    PERMISSION_REQUEST_KIND,
    QUESTION_DECISION_KIND,
    QUESTION_REQUEST_KIND,
    STEER_KIND,
    TERMINAL_OUTPUT_KIND,
    TURN_END_KIND,
    TURN_UNDONE_KIND,
)
from silo_nb.model.models import AgentSessionUpdate, AgentToolCall

__all__ = [
    "FileWriteLine",
    "KernelToolLine",
    "PermissionDecisionLine",
    "PermissionRequestLine",
    "QuestionDecisionLine",
    "QuestionRequestLine",
    "SiloLine",
    "SteerLine",
    "TerminalOutputLine",
    "TurnEndLine",
    "TurnUndoneLine",
]


log = logging.getLogger("silo_nb.sessions")
_MISFITS: set[str] = set()  # kinds whose misfit was logged (once each)


class SiloLine(BaseModel):
    """One silo_nb journal line (see the module docstring)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", frozen=True)
    KIND: ClassVar[str]

    def raw(self) -> dict[str, Any]:
        """The line's ``raw``: ``synthesized`` first, then what the writer set, by its camelCase name."""
        return {"synthesized": True, **self.model_dump(by_alias=True, exclude_unset=True)}

    def update(
        self, *, timestamp: str | None = None, tool_call: AgentToolCall | None = None
    ) -> AgentSessionUpdate:
        return AgentSessionUpdate(kind=self.KIND, timestamp=timestamp, tool_call=tool_call, raw=self.raw())

    @classmethod
    def written(
        cls,
        fields: Mapping[str, Any],
        *,
        timestamp: str | None = None,
        tool_call: AgentToolCall | None = None,
    ) -> AgentSessionUpdate:
        """The line for ``fields`` (camelCase or field names). Never raises: fields that do not fit the
        model (a bug of ours) are journaled as given and logged once per kind — a reader then skips the
        line; the session goes on."""
        try:
            return cls.model_validate(fields).update(timestamp=timestamp, tool_call=tool_call)
        except ValidationError as exc:
            if cls.KIND not in _MISFITS:
                _MISFITS.add(cls.KIND)
                log.warning("a %s line does not fit its model (kept as given): %s", cls.KIND, exc)
            raw = {"synthesized": True, **fields}
            return AgentSessionUpdate(kind=cls.KIND, timestamp=timestamp, tool_call=tool_call, raw=raw)

    @classmethod
    def read(cls, update: AgentSessionUpdate) -> Self | None:
        """The line as this model; None for another kind, or a line that does not fit the model."""
        if update.kind != cls.KIND or not isinstance(update.raw, Mapping):
            return None
        try:  # the marker is the line's, not a field: the line read is the line written
            return cls.model_validate({k: v for k, v in update.raw.items() if k != "synthesized"})
        except ValidationError:
            return None


class TurnEndLine(SiloLine):
    """How a turn ended (``turn_tracker``), with the session's profile, agent and config values then."""

    KIND = TURN_END_KIND
    outcome: str | None = None  # finished, cancelled, failed (always written; a hand-made line may lack it)
    stop_reason: str | None = None
    agent_stop_reason: str | None = None  # the agent's own, when a Stop made the turn "cancelled"
    error: str | None = None
    sign_in: list[str] | None = None  # the sign-in method ids, when the agent wants one
    started_at: str | None = None
    ended_at: str | None = None
    duration_ms: float | None = None
    usage: dict[str, Any] | None = None  # the prompt answer's token usage (ACP ``usage``), when it sent one
    checkpoint_fork: str | None = None  # the fork of the session taken before the turn (issue 32), if any
    profile: str | None = None
    agent: str | None = None
    config: dict[str, Any] | None = None


class PermissionRequestLine(SiloLine):
    """A permission the agent (or silo_nb for itself) asked, with every option offered."""

    KIND = PERMISSION_REQUEST_KIND
    request_id: str
    tool_call_id: str | None = None
    title: str | None = None
    options: list[dict[str, Any]] = []  # {optionId, name, kind}: plain dicts, a request can carry 10,000


class PermissionDecisionLine(PermissionRequestLine):
    """How it was answered: the chosen option (None: cancelled), who chose, and why when not a person."""

    KIND = PERMISSION_DECISION_KIND
    option_id: str | None = None
    decided_by: str | None = None
    note: str | None = None

    def chosen_kind(self) -> str:
        """The chosen option's kind (``allow_once``, ``reject_always``…); "" when cancelled or not listed."""
        return next(
            (str(o.get("kind") or "") for o in self.options if o.get("optionId") == self.option_id), ""
        )


class QuestionRequestLine(SiloLine):
    """A question the agent asked (``session/elicitation``): a form's fields, or a url to open."""

    KIND = QUESTION_REQUEST_KIND
    request_id: str
    mode: str | None = None
    message: str | None = None
    url: str | None = None
    tool_call_id: str | None = None
    fields: list[dict[str, Any]] | None = None
    field_count: int | None = None


class QuestionDecisionLine(QuestionRequestLine):
    """Its answer: accept (with the content), decline or cancel; ``completed`` when a url flow ended."""

    KIND = QUESTION_DECISION_KIND
    action: str = "cancel"
    by: str | None = None
    content: dict[str, Any] | None = None
    completed: bool | None = None


class SteerLine(SiloLine):
    """Input the user gave a running turn (``handle.steer``): written when sent (``outcome`` None), again
    with the agent's answer — ``injected``, ``startedNewTurn``, or ``refused`` with a ``note`` saying why."""

    KIND = STEER_KIND
    steer_id: str
    text: str
    outcome: str | None = None
    note: str | None = None


class TurnUndoneLine(SiloLine):
    """An undo of turns (``handle.undo``): the turns taken back, newest first, and every item it restored or
    could not (``UndoItem.wire()``); a restore after a restart shows those turns undone."""

    KIND = TURN_UNDONE_KIND
    turns: list[int]
    items: list[dict[str, Any]] = []
    fork_session_id: str | None = None
    notes: list[str] | None = None


class FileWriteLine(SiloLine):
    """A file silo_nb wrote for the agent (``fs/write_text_file``): both texts, unless too large to keep."""

    KIND = FILE_WRITE_KIND
    path: str
    created: bool = False
    old_text: str | None = None
    new_text: str | None = None
    too_large: bool | None = None
    sizes: list[int] | None = None


class TerminalOutputLine(SiloLine):
    """New output of a terminal silo_nb runs for the agent (``replace``: the tail replaces what was kept)."""

    KIND = TERMINAL_OUTPUT_KIND
    terminal_id: str
    output: str = ""
    replace: bool | None = None
    truncated: bool | None = None
    exit_status: dict[str, Any] | None = None


class KernelToolLine(SiloLine):
    """A call of the kernel tools (the notebook MCP server): its tool, arguments, status and output."""

    KIND = KERNEL_TOOL_KIND
    call_id: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    status: str | None = None
    title: str | None = None
    output: str | None = None
    images: list[str] | None = None
    images_left_out: int | None = None
    # A change to a notebook cell (the cell tools): the cell and its source before and after.
    cell_id: str | None = None
    old_source: str | None = None
    new_source: str | None = None
    # The notebook-channel request that takes an applied cell change back (``%silo undo-cells``).
    undo: dict[str, Any] | None = None
