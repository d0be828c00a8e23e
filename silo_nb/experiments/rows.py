"""Turns as data: a journal's lines folded into one row (a plain dict) per turn — no pandas here.

- Turns are cut by the one splitter (``updates/journal_turns.py``): a turn starts at the user's prompt
  (a run of ``user_message_chunk`` lines; Silo and silo_nb both journal it, synthesized) and ends at the
  next prompt. silo_nb's ``turn_end`` line (stop reason, timing, profile, config; see
  ``sessions/session/turn_tracker.py``) closes it early; work the agent does after that with no prompt
  (an agent-initiated turn) becomes a row of its own with no prompt text.
- Lines before the first prompt (the handshake's commands, config) only update what the session is
  known to be (mode from ``current_mode_update``, usage); they make no row.
- Counts: ``updates`` is the agent's own updates in the turn (synthesized lines — prompt, permission
  request/decision, turn end — are not counted, nor the start-up command list); tool calls are
  counted once per ``toolCallId`` with their last kind and status; permissions by the chosen
  option's kind (``allow_*``, ``reject_*``, cancelled when no option was chosen); the agent's questions
  by how they were answered (accepted, declined, cancelled).
- ``notices``: the agent's notices in the turn (ACP v1.25); ``compactions``: the context compactions it
  reported (distinct ``compactionId``s), which explain a turn that "forgot"; ``undone``: an undo took the
  turn back (``handle.undo``: its ``turn_undone`` line, wherever it is in the journal).
- Tokens and cost come from the turn's last ``usage_update`` (ACP: ``used`` tokens in context,
  ``size`` the window, ``cost`` the session's running total); ``cost`` is this turn's part of it.
  ``tokens_in``/``_out``/``_thought``/``_cached_read``/``_cached_write`` are the prompt answer's own
  counts (ACP ``usage`` on the ``session/prompt`` answer, journaled on ``turn_end``), None when not sent.
- A journal written by Silo itself has no ``turn_end``: stop reason, duration, profile and config are
  then empty (None), everything else is the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from silo_nb.model import (
    KINDS,
    TURN_UNDONE_KIND,
    USER_PROMPT_KIND,
    AgentSessionUpdate,
    PermissionDecisionLine,
    QuestionDecisionLine,
    TurnEndLine,
    TurnUndoneLine,
    token_counts,
)
from silo_nb.updates import (
    SessionFacts,
    split_turns,
)

__all__ = ["COLUMNS", "turn_rows"]

# The prompt answer's token counts (ACP ``Usage``, journaled on ``turn_end``): column → field.
_TOKEN_COLUMNS = (
    ("tokens_in", "inputTokens"),
    ("tokens_out", "outputTokens"),
    ("tokens_thought", "thoughtTokens"),
    ("tokens_cached_read", "cachedReadTokens"),
    ("tokens_cached_write", "cachedWriteTokens"),
)

# The fixed columns, in order; a column per config key (``mode``, ``model``, …) and per tool kind and
# status (``tool_kind_read``, ``tool_status_completed``) follow them in the frame.
COLUMNS = (
    "session",
    "turn",
    "profile",
    "agent",
    "config",
    "prompt",
    "stop_reason",
    "error",
    "started",
    "duration_s",
    "updates",
    "tool_calls",
    "tools_by_kind",
    "tools_by_status",
    "permissions_asked",
    "permissions_allowed",
    "permissions_rejected",
    "permissions_cancelled",
    "questions_asked",
    "questions_accepted",
    "questions_declined",
    "questions_cancelled",
    "notices",
    "compactions",
    "undone",
    "tokens_in",
    "tokens_out",
    "tokens_thought",
    "tokens_cached_read",
    "tokens_cached_write",
    "tokens_used",
    "context_size",
    "cost",
    "cost_total",
    "currency",
    "text",
)


@dataclass
class _Turn:
    prompt: str | None
    started: str | None
    config: dict[str, Any]
    updates: int = 0
    tools: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)  # id -> (kind, status)
    asked: int = 0
    questions: dict[str, int] = field(default_factory=dict)  # "asked" and each answer's action -> count
    allowed: int = 0
    rejected: int = 0
    cancelled: int = 0
    text: list[str] = field(default_factory=list)
    notices: int = 0
    compactions: set[str] = field(default_factory=set)  # compaction ids seen in the turn
    end: TurnEndLine | None = None
    usage: tuple[float, float, float | None, str | None] | None = None  # used, size, cost total, currency


@dataclass
class _Session:
    """What the journal has said about the session so far (carried from turn to turn)."""

    facts: SessionFacts = field(default_factory=SessionFacts)  # the one fold of session facts
    cost_total: float | None = None


def turn_rows(updates: Iterable[AgentSessionUpdate], *, session: str = "") -> list[dict[str, Any]]:
    """One dict per turn of one session's journal (see the module docstring for each column)."""
    state = _Session()
    rows: list[dict[str, Any]] = []
    updates = list(updates)
    undone = {n for u in updates if u.kind == TURN_UNDONE_KIND for n in _undone_numbers(u)}
    for journal_turn in split_turns(updates):
        lines = journal_turn.updates
        position = 0
        for start, stop in journal_turn.part_spans():
            for update in lines[position:start]:  # before any work: they only say what the session is
                state.facts.apply(update)
            prompted = journal_turn.number is not None and start == 0
            first = lines[start]
            turn = _Turn(
                prompt="" if prompted else None,
                started=first.timestamp if prompted else None,
                config=dict(state.facts.config),
            )
            in_prompt = prompted
            for update in lines[start:stop]:
                state.facts.apply(update)
                in_prompt = in_prompt and update.kind == USER_PROMPT_KIND
                if in_prompt:  # the prompt: the run of user chunks the turn starts with
                    turn.prompt = (turn.prompt or "") + (update.text or "")
                _fold(turn, update, state)
            row = _row(turn, state, session, len(rows) + 1)
            row["undone"] = prompted and journal_turn.number in undone
            rows.append(row)
            position = stop
        for update in lines[position:]:
            state.facts.apply(update)
    return rows


def _undone_numbers(update: AgentSessionUpdate) -> list[int]:
    line = TurnUndoneLine.read(update)
    return list(line.turns) if line is not None else []


_PARENT_ONLY = frozenset({"text", "tool", "usage", "end"})


def _fold(turn: _Turn, update: AgentSessionUpdate, state: _Session) -> None:
    kind, raw = update.kind, update.raw
    known = KINDS.get(kind)
    if raw.get("synthesized") is not True and (known is None or known.counted):
        turn.updates += 1
    part = known.row if known is not None else None
    if update.child_session_id is not None and part in _PARENT_ONLY:
        return  # a subagent's words, tools and usage are its own (its permissions and questions count)
    if part == "text" and update.text:
        turn.text.append(update.text)
    elif part == "tool" and update.tool_call is not None:
        call = update.tool_call
        old_kind, old_status = turn.tools.get(call.tool_call_id, (None, None))
        status = call.status or old_status or ("pending" if kind == "tool_call" else None)
        turn.tools[call.tool_call_id] = (call.kind or old_kind, status)
    elif part == "asked":
        turn.asked += 1
    elif part == "decided" and (decision := PermissionDecisionLine.read(update)) is not None:
        _count_decision(turn, decision)
    elif part == "question":
        turn.questions["asked"] = turn.questions.get("asked", 0) + 1
    elif part == "answered" and (answer := QuestionDecisionLine.read(update)) is not None:
        action = answer.action if answer.action in ("accept", "decline") else "cancel"
        turn.questions[action] = turn.questions.get(action, 0) + 1
    elif part == "notice":
        turn.notices += 1
    elif part == "compaction" and isinstance(compaction_id := raw.get("compactionId"), str):
        turn.compactions.add(compaction_id)
    elif part == "usage" and update.usage is not None:
        usage = update.usage
        cost = usage.cost
        turn.usage = (usage.used, usage.size, cost.amount if cost else None, cost.currency if cost else None)
    elif part == "end" and (end := TurnEndLine.read(update)) is not None:
        turn.end = end
        turn.config = dict(state.facts.config)


def _count_decision(turn: _Turn, decision: PermissionDecisionLine) -> None:
    """A permission decision by the chosen option's kind (``allow_*``, ``reject_*``; none: cancelled)."""
    option_kind = decision.chosen_kind()
    if decision.option_id is None:
        turn.cancelled += 1
    elif option_kind.startswith("allow"):
        turn.allowed += 1
    elif option_kind.startswith("reject"):
        turn.rejected += 1


def _row(turn: _Turn, state: _Session, session: str, number: int) -> dict[str, Any]:
    end = turn.end or TurnEndLine()
    used, size, cost_total, currency = turn.usage or (None, None, None, None)
    cost: float | None = None
    if cost_total is not None:
        cost = round(cost_total - (state.cost_total or 0.0), 9)
        state.cost_total = cost_total
    by_kind: dict[str, int] = {}
    by_status: dict[str, int] = {}
    for tool_kind, status in turn.tools.values():
        by_kind[tool_kind or "other"] = by_kind.get(tool_kind or "other", 0) + 1
        by_status[status or "pending"] = by_status.get(status or "pending", 0) + 1
    duration = end.duration_ms
    tokens = token_counts(end.usage)
    return {
        "session": session,
        "turn": number,
        "profile": end.profile or state.facts.profile,
        "agent": end.agent or state.facts.agent,
        "config": turn.config,
        "prompt": turn.prompt,
        "stop_reason": end.stop_reason,
        "error": end.error,
        "started": turn.started or end.started_at,
        "duration_s": duration / 1000 if duration is not None else None,
        "updates": turn.updates,
        "tool_calls": len(turn.tools),
        "tools_by_kind": by_kind,
        "tools_by_status": by_status,
        "permissions_asked": turn.asked,
        "permissions_allowed": turn.allowed,
        "permissions_rejected": turn.rejected,
        "permissions_cancelled": turn.cancelled,
        "questions_asked": turn.questions.get("asked", 0),
        "questions_accepted": turn.questions.get("accept", 0),
        "questions_declined": turn.questions.get("decline", 0),
        "questions_cancelled": turn.questions.get("cancel", 0),
        "notices": turn.notices,
        "compactions": len(turn.compactions),
        "undone": False,
        **{column: tokens.get(field) for column, field in _TOKEN_COLUMNS},
        "tokens_used": used,
        "context_size": size,
        "cost": cost,
        "cost_total": cost_total,
        "currency": currency,
        "text": "".join(turn.text),
    }
