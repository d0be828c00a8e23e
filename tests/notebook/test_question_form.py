"""``QuestionForm``: one control per field, Submit / Decline and their Python twins, errors under the form,
bounded and inert whatever the agent sends; inside a ``TurnView``, a waiting question makes it blocked."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio

from silo_nb.model.agent_requests import AgentElicitationRequest
from silo_nb.model.question_schema import CHOICE_LIMIT, LABEL_LIMIT
from silo_nb.notebook.widgets import TurnView
from silo_nb.notebook.widgets.question_form import SHOWN_FIELDS, QuestionForm
from silo_nb.sessions.session.question_desk import QuestionDesk
from tests.agents.raw_agent import QUESTION_SCHEMA
from tests.notebook.widget_utils import Sent, frontend_click, frontend_update


async def asked(schema: dict[str, Any] | None = None, **extra: Any) -> tuple[AgentElicitationRequest, Any]:
    """A question really asked of a desk (its answer awaited in the background)."""
    desk = QuestionDesk(record=lambda line: None, on_blocked=lambda: None, on_answered=lambda: None)
    got: list[AgentElicitationRequest] = []
    desk.add(got.append)
    params = {"mode": "form", "message": "Proceed?", "requestedSchema": schema or QUESTION_SCHEMA, **extra}
    answer: list[Any] = []

    async def ask() -> None:
        answer.append(await desk.ask(params, open_=True))

    task = asyncio.get_running_loop().create_task(ask())
    while not got:
        await anyio.sleep(0.01)
    return got[0], (task, answer)


async def done(state: Any) -> Any:
    task, answer = state
    with anyio.fail_after(5):
        await task
    return answer[0]


async def test_a_form_has_a_control_per_field_and_a_click_submits_what_they_hold(comms: list[Sent]) -> None:
    request, state = await asked()
    form = QuestionForm(request)
    assert list(form.controls) == ["name", "age", "agree", "colour", "tags"]
    frontend_update(form.controls["name"], value="Ada")
    frontend_update(form.controls["agree"], value=True)
    frontend_click(form.submit_button)
    assert await done(state) == {"action": "accept", "content": {"name": "Ada", "age": 0, "agree": True}}
    assert form.submit_button.disabled and "answered" in form.status_html.value
    assert form.submit({"name": "late"}) is False  # the first answer won


async def test_a_wrong_value_shows_its_error_and_sends_nothing(comms: list[Sent]) -> None:
    request, state = await asked()
    form = QuestionForm(request)
    assert form.submit({"agree": True}) is False
    assert "name" in form.error_html.value and "required" in form.error_html.value
    assert not request.answered
    assert form.decline() is True
    assert await done(state) == {"action": "decline"}


async def test_a_hostile_question_is_bounded_and_inert(comms: list[Sent]) -> None:
    schema = {
        "properties": {
            f"p{i}": {"type": "string", "title": "<img src=x onerror=alert(1)>"} for i in range(10_000)
        }
    }
    request, state = await asked(schema, message="<script>alert(1)</script>")
    form = QuestionForm(request)
    assert len(form.controls) == SHOWN_FIELDS
    texts = [
        child.value for child in form.children if hasattr(child, "value") and isinstance(child.value, str)
    ]
    assert any("10,000" in text or "9,950" in text for text in texts)
    assert all("<script>" not in text and "<img" not in text for text in texts)
    form.decline()
    await done(state)


async def test_a_pick_of_200k_long_choices_builds_a_bounded_dropdown_and_answers_the_full_value(
    comms: list[Sent],
) -> None:
    values = [f"{i:06d}-" + "v" * 100 for i in range(200_000)]
    schema = {
        "properties": {
            "pick": {"type": "string", "enum": values},
            "many": {"type": "array", "items": {"type": "string", "enum": values}},
        }
    }
    request, state = await asked(schema)
    form = QuestionForm(request)
    pick, many = form.controls["pick"], form.controls["many"]
    assert len(pick.options) == CHOICE_LIMIT and len(many.options) <= CHOICE_LIMIT
    assert all(len(label) <= LABEL_LIMIT for label in (*pick._options_labels, *many._options_labels))
    assert len(json.dumps([data for _, _, data in comms])) < 1_000_000  # not 20 MB to the browser
    texts = json.dumps(
        [
            child.value
            for row in form.children
            for child in getattr(row, "children", ())
            if isinstance(getattr(child, "value", None), str)
        ]
    )
    assert "200,000" in texts  # the cut is said next to the control
    frontend_update(pick, index=3)
    assert form.submit() is True
    assert await done(state) == {"action": "accept", "content": {"pick": values[3]}}


async def test_a_waiting_question_makes_the_turn_blocked_until_answered(comms: list[Sent]) -> None:
    request, state = await asked()
    view = TurnView(label="Demo")
    view.add_question(request)
    assert view.forms and "blocked" in view.badge.value
    view.forms[0].submit({"name": "Ada", "agree": False})
    assert "working" in view.badge.value
    await done(state)
    view.close_all()


async def test_an_answer_after_the_turn_ended_sends_nothing_and_says_so(comms: list[Sent]) -> None:
    request, state = await asked()
    form = QuestionForm(request)
    request.cancel()  # the turn ended (a Stop): the desk answered the question for it
    assert await done(state) == {"action": "cancel"}
    form.submit({"name": "Ada", "agree": True})  # too late: the first answer stands, nothing raises
    assert request.action == "cancel" and form.submit_button.disabled
    frontend_click(form.submit_button)  # a click on the stale form's button is as harmless
    assert request.action == "cancel"
