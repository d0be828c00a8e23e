"""The one fold of session facts (issue 29): what frame rows and the agents list read of a journal."""

from __future__ import annotations

from silo_nb.model import (
    AgentContentBlock,
    AgentSessionUpdate,
    TurnEndLine,
)
from silo_nb.updates import (
    SessionFacts,
)
from silo_nb.updates.parse import parse_update


def wire(kind: str, **fields: object) -> AgentSessionUpdate:
    update = parse_update({"sessionUpdate": kind, **fields})
    assert update is not None
    return update


def prompt(at: str) -> AgentSessionUpdate:
    return AgentSessionUpdate(
        kind="user_message_chunk",
        text="hi",
        content=AgentContentBlock(type="text", text="hi"),
        timestamp=at,
        raw={"synthesized": True},
    )


def test_the_facts_follow_the_journal_in_order() -> None:
    facts = SessionFacts()
    updates = [
        prompt("2026-12-04T10:00:00.000Z"),
        wire("current_mode_update", currentModeId="code"),
        wire(
            "config_option_update",
            configOptions=[
                {
                    "id": "model",
                    "name": "Model",
                    "type": "select",
                    "currentValue": "fast",
                    "options": [{"value": "fast", "name": "Fast"}],
                },
            ],
        ),
        wire("session_info_update", title="Penguins"),
        TurnEndLine(
            outcome="finished",
            profile="demo",
            agent="Silo demo agent",
            config={"model": "smart"},
            ended_at="2026-12-04T10:00:05.000Z",
        ).update(),
        wire("agent_message_chunk", content={"type": "text", "text": "later"}),  # changes nothing
    ]
    for update in updates:
        facts.apply(update)
    assert facts.config == {"mode": "code", "model": "smart"}  # the turn end's values are the last word
    assert (facts.title, facts.profile, facts.agent) == ("Penguins", "demo", "Silo demo agent")
    assert (facts.prompts, facts.last_time) == (1, "2026-12-04T10:00:05.000Z")


def test_malformed_facts_change_nothing() -> None:
    facts = SessionFacts(config={"mode": "ask"}, title="Kept")
    for update in (
        wire("current_mode_update", currentModeId=7),
        AgentSessionUpdate(kind="turn_end", raw={"synthesized": True, "profile": ["not", "a", "name"]}),
        AgentSessionUpdate(kind="user_message_chunk", raw={}),  # an agent's echo, not our prompt
    ):
        facts.apply(update)
    assert facts == SessionFacts(config={"mode": "ask"}, title="Kept")
