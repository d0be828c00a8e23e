"""A journal read as a recording: what the replay agent says before the first prompt, then each turn's
steps (updates to send, permissions to ask again), its recorded outcome and duration.

- The journal is read with the client's own reader (``sessions.journal.read_updates``) and cut into turns
  by the one splitter (``sessions.journal_turns.split_turns``); a turn's *head* (up to its ``turn_end``) is
  what is replayed, never what the agent did on its own after a Stop.
- Only what an agent sends is replayed: the ACP kinds, as they came on the wire (``raw``). silo_nb's own
  lines are not (an agent sending them is not believed), except ``permission_request``, which becomes a
  ``session/request_permission`` again, with the recorded answer to compare against (its
  ``permission_decision``). A recorded file write or question is not redone: the tool call shows the diff.
- A tool call that embedded a client terminal (``{"type": "terminal"}``) gets the terminal's recorded
  output as text instead: the terminal is gone, its output is in the journal's ``terminal_output`` lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from silo_nb.model import (
    SILO_NB_KINDS,
    USER_PROMPT_KIND,
    AgentSessionUpdate,
    PermissionDecisionLine,
    PermissionRequestLine,
    TerminalOutputLine,
    TurnEndLine,
    token_counts,
)
from silo_nb.sessions import (
    read_updates,
    update_json,
)
from silo_nb.updates import (
    split_turns,
)

__all__ = ["CHILD_SESSION_KEY", "Permission", "RecordedTurn", "Recording", "read_recording"]


@dataclass(frozen=True)
class Permission:
    """A permission the recorded agent asked: the request's params and the option the recording chose."""

    tool_call: dict[str, Any]
    options: list[dict[str, Any]]
    chosen: str | None  # None: the recording has no answer (cancelled)
    child_session_id: str | None = None  # a subagent's request: asked again under the child's id

    def option_name(self, option_id: str | None) -> str:
        named = {str(o.get("optionId")): str(o.get("name") or o.get("optionId")) for o in self.options}
        return named.get(str(option_id), "no answer") if option_id is not None else "no answer"


# The key a recorded step carries when a subagent sent it (ACP v1.25): the player sends it under that id.
CHILD_SESSION_KEY = "_siloNbChildSessionId"


@dataclass(frozen=True)
class RecordedTurn:
    prompt: str
    steps: list[dict[str, Any] | Permission]  # wire updates (``sessionUpdate`` dicts) and permissions
    stop_reason: str = "end_turn"
    error: str | None = None  # the recorded turn failed with this
    duration_ms: float = 0.0
    usage: dict[str, int] | None = None  # the recorded prompt answer's token counts (its turn_end's)


@dataclass(frozen=True)
class Recording:
    path: Path
    opening: list[dict[str, Any]] = field(default_factory=list)
    turns: list[RecordedTurn] = field(default_factory=list)
    config_options: list[Any] | None = None  # the last config_option_update's, if any


def _terminal_outputs(updates: Sequence[AgentSessionUpdate]) -> dict[str, str]:
    outputs: dict[str, str] = {}
    for update in updates:
        if (line := TerminalOutputLine.read(update)) is not None:
            outputs[line.terminal_id] = line.output
    return outputs


def _wire(update: AgentSessionUpdate, terminals: dict[str, str]) -> dict[str, Any] | None:
    """The update as the agent sent it, or None when it is not the agent's to send."""
    raw = update.raw
    if update.kind in SILO_NB_KINDS or update.kind == USER_PROMPT_KIND or not isinstance(raw, dict):
        return None
    if "sessionUpdate" not in raw:
        return None
    content = raw.get("content")
    if isinstance(content, list) and any(
        isinstance(c, dict) and c.get("type") == "terminal" for c in content
    ):
        shown = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "terminal":
                text = terminals.get(str(block.get("terminalId")), "").rstrip()
                shown.append({"type": "content", "content": {"type": "text", "text": f"```\n{text}\n```"}})
            else:
                shown.append(block)
        return {**raw, "content": shown}
    return dict(raw)


def _turn(updates: Sequence[AgentSessionUpdate], terminals: dict[str, str]) -> RecordedTurn:
    prompt = "".join(u.text or "" for u in updates[:1] if u.kind == USER_PROMPT_KIND)
    steps: list[dict[str, Any] | Permission] = []
    asked: dict[str, int] = {}  # requestId -> index of its step
    end = TurnEndLine()
    for update in updates[1:]:
        if (decision := PermissionDecisionLine.read(update)) is not None:
            index = asked.get(decision.request_id)
            step = steps[index] if index is not None else None
            if index is not None and isinstance(step, Permission):
                steps[index] = Permission(
                    step.tool_call, step.options, decision.option_id, step.child_session_id
                )
        elif (request := PermissionRequestLine.read(update)) is not None:
            tool_call = update_json(update).get("toolCall") or {"toolCallId": request.tool_call_id}
            asked[request.request_id] = len(steps)
            steps.append(Permission(tool_call, list(request.options), None, update.child_session_id))
        elif (ended := TurnEndLine.read(update)) is not None:
            end = ended
        elif (wire := _wire(update, terminals)) is not None:
            if update.child_session_id is not None:  # a subagent's: sent again under the child's id
                wire[CHILD_SESSION_KEY] = update.child_session_id
            steps.append(wire)
    stop, outcome, duration = end.stop_reason, end.outcome, end.duration_ms
    return RecordedTurn(
        prompt=prompt,
        steps=steps,
        stop_reason=stop or ("cancelled" if outcome == "cancelled" else "end_turn"),
        error=(end.error or "the recorded turn failed") if outcome == "failed" else None,
        duration_ms=duration or 0.0,
        usage=token_counts(end.usage) or None,
    )


def read_recording(path: Path) -> Recording:
    """The recording of the journal at ``path``; a ``ValueError`` (one line) when it holds no turn."""
    if not path.is_file():
        raise ValueError(f"{path} is not a journal file")
    updates = read_updates(path)
    terminals = _terminal_outputs(updates)
    opening: list[dict[str, Any]] = []
    turns: list[RecordedTurn] = []
    for turn in split_turns(updates):
        if turn.number is None:
            opening = [w for u in turn.updates if (w := _wire(u, terminals)) is not None]
        else:
            turns.append(_turn(turn.head, terminals))
    if not turns:
        raise ValueError(f"{path} holds no recorded turn (no prompt in it)")
    options = None
    for update in updates:
        if update.kind == "config_option_update" and isinstance(update.raw.get("configOptions"), list):
            options = update.raw["configOptions"]
    return Recording(path, opening, turns, options)
