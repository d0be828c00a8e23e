"""The hand-written journal JSON (issue 10) against pydantic, which is its specification.

- ``encode_line`` (orjson over ``update_json``) gives the values of ``model_dump(mode="json", by_alias=True,
  exclude_none=True)`` for every update of the golden wire fixture and for updates built by validation.
- ``journal_line_to_update`` gives the models ``AgentSessionUpdate.model_validate`` gives.
- Models built without validation (``models.built``) behave as validated ones: equal, hashable where
  frozen models are, serialized without pydantic's type warnings, copied with ``model_copy``.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from silo_nb.acp.framing import decode_line
from silo_nb.model.models import AgentContentBlock, AgentSessionUpdate, AgentToolCall, AgentToolCallContent
from silo_nb.sessions.journal import encode_line, journal_line_to_update, parse_lines
from silo_nb.updates.parse import MessageIdSynthesizer, parse_update
from tests.golden.journal_wire import WIRE, read_journal_file


def wire_updates() -> list[AgentSessionUpdate]:
    synth = MessageIdSynthesizer()
    updates: list[AgentSessionUpdate] = []
    for line in read_journal_file(WIRE):
        try:
            message = decode_line(line.encode())
        except ValueError:
            continue
        update = parse_update(message["params"]["update"])
        if update is not None:
            updates.append(synth.apply(update))
    return updates


VALIDATED = [
    AgentSessionUpdate(kind="vendor"),
    AgentSessionUpdate(
        kind="user_message_chunk",
        text="hi",
        content=AgentContentBlock(type="text", text="hi", mime_type="", uri="", name=""),
        message_id="silo-journal-user-1",
        timestamp="2026-01-01T00:00:00.000Z",
        raw={"synthesized": True, "cellId": "c1"},
    ),
    AgentSessionUpdate(
        kind="tool_call",
        tool_call=AgentToolCall(
            tool_call_id="t",
            content=(AgentToolCallContent(type="diff", path="/a", old_text="", new_text="x"),),
            locations=(),
            raw_input={"a": None},
            raw_output=0,
        ),
        raw={"k": [None, 1.5]},
    ),
]
UPDATES = wire_updates() + VALIDATED


def test_the_fixture_has_every_shape() -> None:
    kinds = {u.kind for u in UPDATES}
    assert {"agent_message_chunk", "tool_call", "tool_call_update", "plan", "usage_update"} <= kinds
    assert len(UPDATES) > 60


@pytest.mark.parametrize("update", UPDATES, ids=range(len(UPDATES)))
def test_the_journal_line_is_pydantic_s_dump(update: AgentSessionUpdate) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a built model holding a value of the wrong type warns here
        expected = update.to_json()
    line = encode_line(update)
    assert "\n" not in line
    assert json.loads(line) == expected


@pytest.mark.parametrize("update", UPDATES, ids=range(len(UPDATES)))
def test_reading_a_line_back_is_what_validation_gives(update: AgentSessionUpdate) -> None:
    value = json.loads(encode_line(update))
    read = journal_line_to_update(value)
    assert read == AgentSessionUpdate.model_validate(value)
    assert read is not None and read.to_json() == value == update.to_json()  # NaN in raw: null both ways


# Lines shaped almost like a text chunk's (five keys, a two-key content): the fast path for chunks must
# not drop the fields these carry instead.
NEAR_CHUNKS: list[dict[str, Any]] = [
    {"kind": "agent_message_chunk", "text": "a", "content": {"type": "text", "text": "a"}, "timestamp": "t",
     "raw": {"x": 1}},
    {"kind": "agent_message_chunk", "text": "a", "content": {"type": "text", "text": "a"}, "messageId": "m",
     "timestamp": "t", "raw": {"x": 1}},
    {"kind": "tool_call", "text": "a", "content": {"type": "text", "text": "a"},
     "toolCall": {"toolCallId": "c"}, "raw": {"x": 1}},
    {"kind": "agent_message_chunk", "text": "a", "content": {"type": "image", "text": "a"}, "messageId": "m",
     "raw": {"x": 1}},
    {"kind": "agent_message_chunk", "text": "a", "content": {"type": "text", "text": "a"}, "messageId": "m",
     "raw": {}},
    {"kind": "plan", "content": {"type": "text", "mimeType": "x"}, "plan": [{"content": "p"}],
     "usage": {"used": 1, "size": 2}, "raw": {}},
]  # fmt: skip


@pytest.mark.parametrize("value", NEAR_CHUNKS, ids=range(len(NEAR_CHUNKS)))
def test_a_line_almost_like_a_chunk_s_keeps_every_field(value: dict[str, Any]) -> None:
    read = journal_line_to_update(value)
    assert read == AgentSessionUpdate.model_validate(value)
    assert read is not None and read.to_json() == value


def test_parse_lines_reads_what_encode_line_wrote_in_one_go() -> None:
    lines = [encode_line(u) for u in UPDATES]
    expected = [AgentSessionUpdate.model_validate(json.loads(line)) for line in lines]
    assert parse_lines(lines) == expected
    assert parse_lines(iter(lines)) == expected
    pretty = [json.dumps(json.loads(lines[0]), indent=2), "", "not json", '{"kind": 5}']
    assert parse_lines(pretty) == expected[:1]


def test_built_models_behave_like_validated_ones() -> None:
    built = parse_update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}})
    assert built is not None
    validated = AgentSessionUpdate.model_validate(built.to_json())
    assert built == validated and repr(built) == repr(validated)
    assert hash(built.content) == hash(validated.content)
    copy = built.model_copy(update={"message_id": "m"})
    assert copy.message_id == "m" and built.message_id is None
    with pytest.raises(ValueError):
        built.text = "changed"  # type: ignore[misc]


def test_a_value_orjson_refuses_takes_the_slow_path_with_the_same_values() -> None:
    raw: dict[str, Any] = {"sessionUpdate": "vendor", "big": 2**80, "lone": "\ud800", "t": (1, 2)}
    update = AgentSessionUpdate(kind="vendor", raw=raw)
    assert json.loads(encode_line(update)) == update.to_json()
