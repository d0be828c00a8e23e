"""The agent's questions (ACP elicitation, ``session/question_desk.py``, ``question_schema.py``): forms
checked before anything is sent, url questions, the first answer wins, withdrawn by the agent, answered by
policy, journaled and restored."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from silo_nb.acp import AcpRpcError
from silo_nb.model.agent_requests import AgentElicitationRequest
from silo_nb.model.models import AgentSessionUpdate
from silo_nb.model.question_schema import (
    CHOICE_LIMIT,
    CHOICE_TOTAL,
    FIELD_LIMIT,
    LABEL_LIMIT,
    check_answer,
    read_fields,
)
from silo_nb.notebook.render import transcript_html, transcript_markdown, transcript_text
from silo_nb.sessions.journal import encode_line, parse_lines
from silo_nb.sessions.session.question_desk import QuestionDesk
from silo_nb.updates.entries import QuestionEntry
from silo_nb.updates.transcript import fold_all
from tests.agents.raw_agent import QUESTION_SCHEMA
from tests.conftest import Workspace, raw_agent


def test_a_schema_is_read_leniently_and_answers_are_checked_naming_the_field() -> None:
    fields, total = read_fields(QUESTION_SCHEMA)
    assert [f.name for f in fields] == ["name", "age", "agree", "colour", "tags"] and total == 5
    good = {"name": "Ada", "age": 36, "agree": True, "colour": "red", "tags": ["a", "c"]}
    assert check_answer(fields, good) == good
    for values, error in (
        ({"agree": True}, "field 'name' is required"),
        ({"name": "A", "agree": "yes"}, "field 'agree': expected true or false"),
        ({"name": "A", "agree": True, "age": 1.5}, "field 'age': expected a whole number"),
        ({"name": "A", "agree": True, "age": 200}, "above the maximum 150"),
        ({"name": "A", "agree": True, "colour": "blue"}, "'blue' is not one of"),
        ({"name": "A", "agree": True, "tags": ["z"]}, "'z' is not one of"),
        ({"name": "", "agree": True}, "at least 1 characters"),
        ({"name": "A", "agree": True, "nickname": "x"}, "field 'nickname' is not in the question"),
    ):
        with pytest.raises(ValueError, match=error):
            check_answer(fields, values)


def test_a_hostile_schema_is_bounded() -> None:
    huge = {"properties": {f"p{i}": {"type": "string", "title": "x" * 10_000} for i in range(10_000)}}
    fields, total = read_fields(huge)
    assert total == 10_000 and len(fields) == FIELD_LIMIT and len(fields[0].title) == 500
    assert read_fields("nonsense") == ((), 0) and read_fields({"properties": [1, 2]}) == ((), 0)


def test_a_pick_of_many_long_choices_is_bounded_with_short_labels_and_full_values() -> None:
    values = [f"{i:06d}-" + "v" * 100 for i in range(200_000)]  # 20 MB of labels, as issue 28 saw
    titled = [{"const": v, "title": "t" * 400} for v in values[:3]]
    schema = {
        "properties": {
            "pick": {"type": "string", "enum": values},
            "many": {"type": "array", "items": {"type": "string", "enum": values}},
            "titled": {"type": "string", "oneOf": titled},
            **{f"more{i}": {"type": "string", "enum": values} for i in range(100)},
        },
        "required": ["pick"],
    }
    fields, _ = read_fields(schema)
    pick, _, titled_field = fields[:3]
    assert len(pick.choices) == CHOICE_LIMIT and pick.choice_count == 200_000
    assert sum(len(f.choices) for f in fields) <= CHOICE_TOTAL  # the whole form is bounded, not each field
    assert all(len(title) <= LABEL_LIMIT for f in fields for _, title in f.choices)
    assert titled_field.choices[0][1].endswith("…") and len(titled_field.choices[0][1]) <= LABEL_LIMIT
    assert pick.choices[0] == (values[0], values[0][: LABEL_LIMIT - 1] + "…")  # the value is kept whole
    answer = check_answer(fields, {"pick": values[1], "many": [values[2]]})
    assert answer == {"pick": values[1], "many": [values[2]]}
    for wrong in ({"pick": values[-1]}, {"pick": "x", "many": []}, {"pick": values[0], "many": ["x"]}):
        with pytest.raises(ValueError) as caught:
            check_answer(fields, wrong)
        message = str(caught.value)
        assert len(message) < 600 and "\n" not in message  # one line, not 1,000 choices spelled out
    with pytest.raises(ValueError, match="200,000"):  # a value past the cap says why it is refused
        check_answer(fields, {"pick": values[-1]})


def desk() -> tuple[QuestionDesk, list[AgentSessionUpdate]]:
    lines: list[AgentSessionUpdate] = []
    return QuestionDesk(record=lines.append, on_blocked=lambda: None, on_answered=lambda: None), lines


FORM = {"sessionId": "s", "mode": "form", "message": "Proceed?", "requestedSchema": QUESTION_SCHEMA}


async def test_a_listener_answers_a_form_and_the_first_answer_wins() -> None:
    questions, lines = desk()
    asked: list[AgentElicitationRequest] = []
    questions.add(asked.append)
    async with anyio.create_task_group() as tg:
        answers: list[Any] = []

        async def ask() -> None:
            answers.append(await questions.ask(FORM, open_=True))

        tg.start_soon(ask)
        with anyio.fail_after(5):
            while not asked:
                await anyio.sleep(0.01)
        (request,) = asked
        with pytest.raises(ValueError, match="'name' is required"):
            request.accept({"agree": True})
        assert not request.answered  # a wrong answer sends nothing
        request.accept({"name": "Ada", "agree": True})
        request.decline()  # too late: the first answer won
    assert answers == [{"action": "accept", "content": {"name": "Ada", "agree": True}}]
    assert request.action == "accept" and request.content == {"name": "Ada", "agree": True}
    restored = fold_all(parse_lines([encode_line(line) for line in lines]))
    (entry,) = restored.entries
    assert (
        isinstance(entry, QuestionEntry) and entry.action == "accept" and dict(entry.content)["name"] == "Ada"
    )
    assert "Ada" in transcript_text(restored) and "Proceed?" in transcript_markdown(restored)


async def test_with_no_listener_a_question_is_cancelled_and_nothing_is_recorded() -> None:
    questions, lines = desk()
    assert await questions.ask(FORM, open_=True) == {"action": "cancel"}
    assert lines == []


async def test_unknown_modes_and_incomplete_url_questions_are_refused() -> None:
    questions, _ = desk()
    questions.add(lambda request: None)
    with pytest.raises(AcpRpcError, match="not supported"):
        await questions.ask({**FORM, "mode": "_telepathy"}, open_=True)
    with pytest.raises(AcpRpcError, match="needs a url"):
        await questions.ask({"mode": "url", "message": "m"}, open_=True)


async def test_a_policy_answers_by_field_name_else_declines() -> None:
    class Policy:
        def answer(self, request: AgentElicitationRequest) -> tuple[str, dict[str, Any] | None, str]:
            if "Proceed" in request.message:
                return "accept", {"name": "bot", "agree": True}, "rule: proceed"
            return "decline", None, "rule: else decline"

    questions, lines = desk()
    questions.add(Policy())
    assert await questions.ask(FORM, open_=True) == {
        "action": "accept",
        "content": {"name": "bot", "agree": True},
    }
    assert await questions.ask({**FORM, "message": "Other"}, open_=True) == {"action": "decline"}
    assert [line.raw.get("by") for line in lines if line.kind == "question_decision"] == [
        "rule: proceed",
        "rule: else decline",
    ]


async def test_hostile_titles_are_inert_in_every_format() -> None:
    questions, lines = desk()
    questions.add(lambda request: request.decline())
    hostile = {
        **FORM,
        "message": "<img src=x onerror=alert(1)>",
        "requestedSchema": {"properties": {"a": {"type": "string", "title": "<script>alert(1)</script>"}}},
        "url": "javascript:alert(1)",
    }
    await questions.ask(hostile, open_=True)
    html = transcript_html(fold_all(lines))
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html


async def test_through_a_real_agent_form_url_and_a_withdrawn_question(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("asks-questions"))
    svc = workspace.service()
    async with await svc.sessions.connect("raw-asks-questions") as handle:
        shown: list[AgentSessionUpdate] = []
        handle.on_transcript(shown.append)

        def answer(request: AgentElicitationRequest) -> None:
            if request.mode == "url":
                request.accept()
            elif request.message.startswith("Before"):
                request.accept({"name": "Ada", "agree": True, "tags": ["b"]})
            # the third is left waiting: the agent withdraws it

        handle.on_elicitation(answer)
        updates: list[AgentSessionUpdate] = []
        handle.on_update(updates.append)
        with anyio.fail_after(60):
            await handle.prompt([{"type": "text", "text": "go"}])
        answers = json.loads(next(u.text for u in updates if u.text))
        assert answers["form"] == {
            "action": "accept",
            "content": {"name": "Ada", "agree": True, "tags": ["b"]},
        }
        assert answers["url"] == {"action": "accept"}
        assert answers["withdrawn"]["code"] == -32800
        entries = [e for e in fold_all(shown).entries if isinstance(e, QuestionEntry)]
        assert [(e.mode, e.action, e.by) for e in entries] == [
            ("form", "accept", "user"),
            ("url", "accept", "user"),
            ("form", "cancel", "agent"),
        ]
        assert entries[1].completed  # elicitation/complete arrived
        assert handle.pending_questions == ()
