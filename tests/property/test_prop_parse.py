"""Property tests for update parsing (``silo_nb.updates.parse``): whatever JSON the agent sends, parsing
never raises, and what is parsed survives the journal unchanged (issue 8, item 10)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from silo_nb.model.kinds import SILO_NB_KINDS
from silo_nb.sessions.journal import encode_line, journal_line_to_update
from silo_nb.updates.parse import (
    MessageIdSynthesizer,
    parse_commands,
    parse_config_options,
    parse_content_block,
    parse_permission_options,
    parse_plan,
    parse_session_summary,
    parse_tool_call,
    parse_update,
    synthesize_legacy_options,
)
from tests.property.strategies import examples, json_values, wire_updates, within


@settings(max_examples=examples(300))
@given(st.lists(wire_updates, max_size=6))
def test_parse_update_never_raises_and_the_journal_keeps_every_update(wires: list[dict[str, Any]]) -> None:
    ids = MessageIdSynthesizer()
    with within(5):
        for wire in wires:
            update = parse_update(wire)
            if not isinstance(wire.get("sessionUpdate"), str) or wire["sessionUpdate"] in SILO_NB_KINDS:
                assert update is None  # no kind, or one only the session writes: not believed
                continue
            assert update is not None and update.kind == wire["sessionUpdate"]
            update = ids.apply(update)
            line = encode_line(update)
            # A journal line read back is the same update, written the same way: nothing lost.
            again = journal_line_to_update(json.loads(line))
            assert again is not None
            assert encode_line(again) == line


PARSERS = [
    parse_commands,
    parse_config_options,
    parse_content_block,
    parse_permission_options,
    parse_plan,
    parse_session_summary,
    parse_tool_call,
    journal_line_to_update,
]


@settings(max_examples=examples(200))
@given(json_values, st.sampled_from(PARSERS))
def test_every_parser_takes_any_json_value(value: Any, parser: Any) -> None:
    with within(5):
        parser(value)
        if isinstance(value, dict):
            parse_update(value)
            synthesize_legacy_options(value)


def test_a_bare_nan_or_infinity_as_raw_input_survives_the_journal() -> None:
    # Found by the property above: rawInput Infinity was journaled as null, then read back as absent.
    for value in (float("inf"), float("-inf"), float("nan")):
        for key in ("rawInput", "rawOutput"):
            update = parse_update({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", key: value})
            assert update is not None
            line = encode_line(update)
            again = journal_line_to_update(json.loads(line))
            assert again is not None and encode_line(again) == line
