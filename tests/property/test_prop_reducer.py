"""Property tests for the transcript reducer, through its public functions only (``fold_all``,
``split_turns``, ``TranscriptState``'s accessors): any stream of updates folds without raising, folding
is incremental, no text or tool call is lost, and turns partition the journal (issue 8, item 10)."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from silo_nb.model.models import AgentSessionUpdate
from silo_nb.updates.journal_turns import split_turns
from silo_nb.updates.parse import MessageIdSynthesizer
from silo_nb.updates.transcript import fold_all
from tests.property.strategies import as_update, examples, wire_updates, within

KNOWN_KINDS = {
    "agent_message_chunk",
    "agent_thought_chunk",
    "user_message_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "usage_update",
    "session_info_update",
    "permission_request",
    "permission_decision",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
}


def parsed(wires: list[dict[str, Any]], synthesized: list[bool]) -> list[AgentSessionUpdate]:
    ids = MessageIdSynthesizer()
    updates = []
    for wire, prompt in zip(wires, synthesized + [False] * len(wires), strict=False):
        marked = (
            {**wire, "synthesized": True}
            if prompt and wire.get("sessionUpdate") == "user_message_chunk"
            else wire
        )
        update = as_update(marked)
        if update is not None:
            updates.append(ids.apply(update))
    return updates


updates_strategy = st.builds(
    parsed, st.lists(wire_updates, max_size=12), st.lists(st.booleans(), max_size=12)
)


@settings(max_examples=examples(300))
@given(updates_strategy, st.integers(min_value=0, max_value=12))
def test_folding_is_incremental_and_loses_nothing(updates: list[AgentSessionUpdate], cut: int) -> None:
    with within(5):
        whole = fold_all(updates)
        assert fold_all(updates[cut:], fold_all(updates[:cut])) == whole
    for update in updates:
        if update.kind == "agent_message_chunk" and update.text:
            assert update.text in whole.reply_text
        if update.kind == "user_message_chunk" and update.text:
            assert update.text in whole.prompt_text
        if update.kind in ("tool_call", "tool_call_update") and update.tool_call is not None:
            assert whole.tool(update.tool_call.tool_call_id) is not None
        if update.kind not in KNOWN_KINDS:
            assert update.kind in dict(whole.other)  # an unknown kind is counted, never silently dropped


@settings(max_examples=examples(200))
@given(updates_strategy)
def test_turns_partition_the_journal_in_order(updates: list[AgentSessionUpdate]) -> None:
    with within(5):
        turns = split_turns(updates)
    assert [u for turn in turns for u in turn.updates] == updates
    assert all(turn.updates for turn in turns)
    for turn in turns[1:]:
        assert turn.updates[0].kind == "user_message_chunk"  # every later turn starts at a prompt
        assert turn.number is not None
    for turn in turns:  # the parts of a turn are in order, inside it, and never overlap
        spans = turn.part_spans()
        assert all(0 <= a < b <= len(turn.updates) for a, b in spans)
        assert all(b <= c for (_, b), (c, _) in itertools.pairwise(spans))
