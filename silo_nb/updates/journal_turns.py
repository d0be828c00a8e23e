"""A journal cut into turns: the one splitter (the notebook's restore and export, experiments' rows).

- A turn starts at a user prompt: a user chunk silo_nb synthesized (``raw.synthesized``) or, in an
  agent's load replay, a user chunk after other content (:func:`starts_prompt`, the rule the restore's
  byte-level index also asks). What comes before the first prompt (a banner, agent-initiated work) is
  a leading group with no number.
- A prompt's share runs to the next prompt. Its *head* ends at the first ``turn_end`` (what the live cell
  showed); after it the agent may have worked on its own (a late reply after a Stop): a work kind after a
  ``turn_end`` opens an agent-initiated turn (:meth:`JournalTurn.parts`, one row each in experiments),
  and the late part never replaces the turn's outcome.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from silo_nb.model import (
    TURN_END_KIND,
    USER_PROMPT_KIND,
    WORK_KINDS,
    AgentSessionUpdate,
)

__all__ = ["JournalTurn", "split_turns", "starts_prompt", "until_turn_end"]


def starts_prompt(update: AgentSessionUpdate, *, after_user: bool) -> bool:
    """Whether ``update`` starts a turn, given whether the update before it was a user chunk (a subagent's
    never does: its user chunks are inside its parent's turn)."""
    return (
        update.kind == USER_PROMPT_KIND
        and update.child_session_id is None
        and (update.raw.get("synthesized") is True or not after_user)
    )


def until_turn_end(updates: Sequence[AgentSessionUpdate]) -> Sequence[AgentSessionUpdate]:
    """``updates`` up to and including the first ``turn_end`` (all of them when there is none)."""
    end = next((i for i, u in enumerate(updates) if u.kind == TURN_END_KIND), None)
    return updates if end is None else updates[: end + 1]


@dataclass(frozen=True)
class JournalTurn:
    """One prompt's share of a journal, from its prompt to the next (``number`` None: before the first)."""

    number: int | None
    updates: Sequence[AgentSessionUpdate]

    @property
    def head(self) -> Sequence[AgentSessionUpdate]:
        """Up to the first ``turn_end``: the turn as it ended live."""
        return until_turn_end(self.updates)

    @property
    def late(self) -> Sequence[AgentSessionUpdate]:
        """What the agent did after the turn ended (agent-initiated turns; empty for most turns)."""
        return self.updates[len(self.head) :]

    def part_spans(self) -> list[tuple[int, int]]:
        """(start, stop) of the turn and of each agent-initiated turn after it: a work kind after a
        ``turn_end`` starts one; other lines join the part before them. In the leading group, lines
        before the first work kind (a handshake's announcements) belong to no part."""
        spans: list[tuple[int, int]] = []
        start: int | None = 0 if self.number is not None else None
        ended = False
        for index, update in enumerate(self.updates):
            kind = update.kind
            if kind in WORK_KINDS and (start is None or ended):
                if start is not None:
                    spans.append((start, index))
                start, ended = index, False
            if kind == TURN_END_KIND and start is not None:
                ended = True
        if start is not None:
            spans.append((start, len(self.updates)))
        return spans


def split_turns(updates: Iterable[AgentSessionUpdate]) -> list[JournalTurn]:
    """The journal's turns in order; every update is in exactly one of them."""
    groups: list[list[AgentSessionUpdate]] = [[]]
    after_user = False
    for update in updates:
        if starts_prompt(update, after_user=after_user) and groups[-1]:
            groups.append([])
        groups[-1].append(update)
        after_user = update.kind == USER_PROMPT_KIND and update.child_session_id is None
    turns: list[JournalTurn] = []
    number = 0
    for group in groups:
        if not group:
            continue
        prompted = starts_prompt(group[0], after_user=False)
        number += prompted
        turns.append(JournalTurn(number if prompted else None, group))
    return turns
