"""The one turn splitter (``updates/journal_turns.py``): prompts, the turn's head, agent-initiated parts."""

from __future__ import annotations

from silo_nb.model.models import AgentSessionUpdate
from silo_nb.updates.journal_turns import split_turns, starts_prompt, until_turn_end
from tests.support.updates import prompt, say, wire


def end(outcome: str = "finished") -> AgentSessionUpdate:
    return AgentSessionUpdate(kind="turn_end", raw={"synthesized": True, "outcome": outcome})


def test_split_turns_cuts_at_prompts_and_replayed_user_messages() -> None:
    banner, reply = say("Welcome", "b0"), say("ok", "m1")
    p1, p2, p3 = prompt("one", 1), prompt("two", 2), prompt("three", 3)
    tool = wire("tool_call", toolCallId="c1")
    turns = split_turns([banner, p1, reply, tool, p2, p3, reply])
    assert [list(t.updates) for t in turns] == [[banner], [p1, reply, tool], [p2], [p3, reply]]
    assert [t.number for t in turns] == [None, 1, 2, 3]
    replay = [say("q1", "u1", "user_message_chunk"), say("more", "u1", "user_message_chunk"), reply]
    second = [say("q2", "u2", "user_message_chunk"), wire("usage_update", used=1, size=2)]
    assert [list(t.updates) for t in split_turns(replay + second)] == [replay, second]
    assert split_turns([]) == []


def test_the_rule_a_synthesized_prompt_always_starts_a_turn_and_a_replayed_one_only_after_other_content() -> (
    None
):
    replayed = say("q", "u1", "user_message_chunk")
    assert starts_prompt(prompt("p"), after_user=True)
    assert not starts_prompt(replayed, after_user=True)
    assert starts_prompt(replayed, after_user=False)
    assert not starts_prompt(say("a"), after_user=False)


def test_the_head_ends_at_the_first_turn_end_and_late_work_is_the_rest() -> None:
    p1, reply, late = prompt("one"), say("ok"), say("late reply", "m2")
    (turn,) = split_turns([p1, reply, end("cancelled"), late, end()])
    assert list(turn.head) == [p1, reply, turn.updates[2]]
    assert list(turn.late) == [late, turn.updates[4]]
    assert until_turn_end([p1, reply]) == [p1, reply]


def test_parts_a_work_kind_after_a_turn_end_opens_an_agent_turn_other_lines_join_the_part_before() -> None:
    p1, reply = prompt("one"), say("ok")
    usage = wire("usage_update", used=1, size=2)
    late = say("on my own", "m2")
    lines = [p1, reply, end(), usage, late, end(), usage]
    (turn,) = split_turns(lines)
    assert turn.part_spans() == [(0, 4), (4, 7)]


def test_parts_before_the_first_prompt_start_at_the_first_work_kind() -> None:
    commands = wire("available_commands_update", availableCommands=[])
    banner = say("Welcome", "b0")
    lead, first = split_turns([commands, banner, end(), prompt("one")])
    assert lead.number is None and lead.part_spans() == [(1, 3)]
    assert first.number == 1 and first.part_spans() == [(0, 1)]
    (only_announcements,) = split_turns([commands])
    assert only_announcements.part_spans() == []
