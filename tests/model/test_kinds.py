"""The one table of update kinds (``model/kinds.py``) covers every kind, and every part reads it."""

from __future__ import annotations

import typing

import acp.schema as sdk_schema
import pytest

from silo_nb.model import journal_lines
from silo_nb.model.kinds import (
    KINDS,
    METADATA_KINDS,
    SHOWN_KINDS,
    SILO_NB_KINDS,
    TEXT_KINDS,
    TOOL_KINDS,
    kind_of,
)
from silo_nb.model.models import AgentSessionUpdate
from silo_nb.notebook.render.cards import CARDS
from silo_nb.updates.entries import Entry
from silo_nb.updates.parse import MessageIdSynthesizer, parse_update
from silo_nb.updates.transcript import HANDLED_KINDS, TranscriptBuilder

# Kinds of ACP schema v1.25 (the official SDK 2.4.0, issue 31) that the pinned Python SDK 0.12.1 predates.
# subagent_update and session_message(_chunk) are of its unstable schema (issue 31 part 2, subagents).
V125_KINDS = {
    "notice",
    "compaction_update",
    "compaction_summary_chunk",
    "subagent_update",
    "session_message",
    "session_message_chunk",
}


def sdk_session_update_kinds() -> set[str]:
    kinds: set[str] = set()
    for value in vars(sdk_schema).values():
        fields = getattr(value, "model_fields", None)
        if isinstance(value, type) and fields and "session_update" in fields:
            kinds |= set(typing.get_args(fields["session_update"].annotation))
    return kinds


def test_every_acp_kind_of_the_official_sdk_is_in_the_table() -> None:
    acp_kinds = {name for name, kind in KINDS.items() if kind.origin == "acp"}
    assert sdk_session_update_kinds() | V125_KINDS == acp_kinds


def test_the_reducer_handles_every_kind_it_shows_and_only_kinds_of_the_table() -> None:
    assert SHOWN_KINDS <= HANDLED_KINDS <= set(KINDS)
    assert set(KINDS) == SHOWN_KINDS | METADATA_KINDS


def test_every_entry_type_has_exactly_one_card() -> None:
    assert set(CARDS) == set(typing.get_args(Entry))


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_shown_kind_makes_an_entry_and_each_other_kind_none(name: str) -> None:
    """What the table says a kind shows is what the reducer does with a minimal line of it."""
    raw: dict[str, typing.Any] = {
        "toolCallId": "c1",
        "options": [],
        "title": "t",
        "compactionId": "k1",
        "planId": "p1",
        "steerId": "s1",
        "text": "t",
        "plan": {"type": "markdown", "planId": "p1", "content": "x"},
        "synthesized": True,
    }
    raw |= {"sessionId": "child-1", "messageId": "m1"}  # a subagent_update's child, a session message's id
    update = AgentSessionUpdate(
        kind=name,
        text="hi" if name in TEXT_KINDS else None,
        content={"type": "text", "text": "hi"} if name in TEXT_KINDS else None,  # type: ignore[arg-type]
        message_id="m1" if name in TEXT_KINDS else None,
        tool_call={"tool_call_id": "c1"} if name in TOOL_KINDS else None,  # type: ignore[arg-type]
        plan=() if name == "plan" else None,
        raw=raw,
    )
    builder = TranscriptBuilder()
    builder.apply(update)
    state = builder.state
    assert bool(state.entries) == (name in SHOWN_KINDS)
    assert state.other == ()  # a kind of the table is never counted as unknown


def test_the_session_s_own_kinds_are_never_believed_from_the_wire() -> None:
    # Each of silo_nb's own kinds has its line model, and each model's kind is one of them.
    models = [getattr(journal_lines, name) for name in journal_lines.__all__]
    kinds_of_models = {model.KIND for model in models if model is not journal_lines.SiloLine}
    assert kinds_of_models == SILO_NB_KINDS
    assert {"permission_request", "turn_end", "kernel_tool"} <= SILO_NB_KINDS
    for name in SILO_NB_KINDS:
        assert parse_update({"sessionUpdate": name, "outcome": "finished", "optionId": "x"}) is None
    assert parse_update({"sessionUpdate": "vendor_thing"}) is not None  # unknown kinds are kept


def test_run_breakers_in_the_table_are_what_message_ids_follow() -> None:
    ids = MessageIdSynthesizer()
    first = ids.message_id("agent_message_chunk", None)
    assert ids.message_id("usage_update", None) is None  # metadata does not break a run
    assert ids.message_id("agent_message_chunk", None) == first
    for name, kind in KINDS.items():
        if kind.breaks_run:
            ids.message_id(name, None)
            assert ids.message_id("agent_message_chunk", None) != first
            first = ids.message_id("agent_message_chunk", None)
    assert kind_of("no such kind") is None
