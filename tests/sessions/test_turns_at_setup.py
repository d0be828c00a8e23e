"""``turns_in_lines`` (what ``handle.current_turn`` starts from on a resumed session: ``JournalSlot.
turns_at_setup``) counts the journal's turns as ``split_turns`` does, without keeping the parsed updates:
synthesized prompts, an agent's replayed user chunks (a run of them is one prompt), user chunks inside a
subagent, a reply that mentions the kind, and damaged lines."""

from __future__ import annotations

import json

from silo_nb.sessions.journal import parse_lines
from silo_nb.sessions.session.journal_slot import turns_in_lines
from silo_nb.updates import split_turns

LINES = [
    {"kind": "available_commands_update", "raw": {}},
    {"kind": "user_message_chunk", "text": "one", "raw": {"synthesized": True}},
    {"kind": "agent_message_chunk", "text": "a mention of user_message_chunk in a reply", "raw": {}},
    {"kind": "user_message_chunk", "text": "replayed", "raw": {}},
    {"kind": "user_message_chunk", "text": "replayed, second chunk", "raw": {}},
    {"kind": "agent_message_chunk", "text": "ok", "raw": {}},
    {"kind": "user_message_chunk", "text": "child", "raw": {}, "childSessionId": "c1"},
    {"kind": "user_message_chunk", "text": "two", "raw": {"synthesized": True}},
]


def test_the_count_agrees_with_split_turns() -> None:
    lines = [json.dumps(line) for line in LINES] + ["{not json", "", json.dumps(LINES[1])]
    expected = sum(1 for turn in split_turns(parse_lines(lines)) if turn.number is not None)
    assert expected == 4
    assert turns_in_lines(lines) == expected
    assert turns_in_lines(line for line in lines if "childSessionId" not in line) == expected
