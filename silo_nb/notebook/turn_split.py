"""A journal cut into turns (restores, the turn index, the export page)."""

from __future__ import annotations

from collections.abc import Iterable

from silo_nb.sessions.models import AgentSessionUpdate

__all__ = ["split_turns"]


def split_turns(updates: Iterable[AgentSessionUpdate]) -> list[list[AgentSessionUpdate]]:
    """A journal cut into turns: each starts at a user prompt silo_nb synthesized (``raw.synthesized``)
    or, in an agent's load replay, at a user message that follows other content. Anything before the
    first prompt (a banner, agent-initiated work) is its own leading group."""
    turns: list[list[AgentSessionUpdate]] = [[]]
    for update in updates:
        starts_turn = update.kind == "user_message_chunk" and (
            update.raw.get("synthesized") is True
            or (turns[-1] and turns[-1][-1].kind != "user_message_chunk")
        )
        if starts_turn and turns[-1]:
            turns.append([])
        turns[-1].append(update)
    return [turn for turn in turns if turn]
