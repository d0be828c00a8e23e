"""``QuestionPolicy``: the agent's questions answered unattended by field name, else declined; it pickles
(a Dask worker gets it) and a session journals its rule."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.experiments import QuestionPolicy
from silo_nb.model.agent_requests import AgentElicitationRequest
from tests.agents.raw_agent import QUESTION_SCHEMA
from tests.conftest import Workspace


def question(mode: str = "form", **extra: Any) -> AgentElicitationRequest:
    return AgentElicitationRequest(
        request_id="q1", mode=mode, message="Proceed?", requested_schema=QUESTION_SCHEMA, **extra
    )


def test_answers_by_field_name_only_when_the_required_fields_are_covered() -> None:
    policy = QuestionPolicy({"name": "Ada", "agree": True, "unrelated": 3})
    assert policy.answer(question()) == ("accept", {"name": "Ada", "agree": True}, "answers: agree, name")
    action, values, why = QuestionPolicy({"name": "Ada"}).answer(question())
    assert (action, values) == ("decline", None) and why == "decline: no answer for agree"
    assert QuestionPolicy({}, otherwise="cancel").answer(question())[0] == "cancel"
    url = question("url", url="https://example.org/sign-in")
    assert QuestionPolicy({"name": "Ada", "agree": True}).answer(url)[:2] == ("decline", None)


def test_it_is_plain_data_that_pickles_and_refuses_bad_input() -> None:
    policy = QuestionPolicy({"confirm": True})
    again = pickle.loads(pickle.dumps(policy))
    assert again == policy and again.answer(question())[0] == "decline"
    with pytest.raises(ValueError, match="mapping of field names"):
        QuestionPolicy(["confirm"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'decline' or 'cancel'"):
        QuestionPolicy({}, otherwise="accept")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("answers", "said", "by"),
    [
        ({"confirm": True, "reason": "batch run"}, "You said yes (batch run)", "answers: confirm, reason"),
        ({"reason": "no confirm given"}, "You said no (decline)", "decline: no answer for confirm"),
        ({"confirm": "yes"}, "You said no (decline)", "(its values did not fit: field 'confirm'"),
    ],
)
async def test_a_session_answers_by_policy_and_journals_the_rule(
    workspace: Workspace, answers: dict[str, Any], said: str, by: str
) -> None:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        handle.on_elicitation(QuestionPolicy(answers))
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_transcript(updates.append)
        await handle.prompt([{"type": "text", "text": "a risky step"}])
        assert said in "".join(u.text or "" for u in updates if u.kind == "agent_message_chunk")
        (decision,) = [u for u in updates if u.kind == "question_decision"]
        assert by in decision.raw["by"]


@pytest.mark.parametrize(
    ("answers", "column", "said"),
    [
        ({"confirm": True, "reason": "grid"}, "questions_accepted", "You said yes (grid)"),
        (None, "questions_declined", "You said no (decline)"),
    ],
)
def test_run_grid_answers_questions_unattended_and_counts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: dict[str, Any] | None, column: str, said: str
) -> None:
    monkeypatch.setenv("SILO_NB_DEMO_STATE_DIR", str(tmp_path / "demo-state"))
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0")
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)
    df = anyio.run(
        lambda: silo_nb.run_grid(
            ["a risky step"], answers=answers, folder=tmp_path, config_dirs=[], progress=False, timeout=60
        )
    )
    (row,) = df.to_dict("records")
    assert row["questions_asked"] == 1 and row[column] == 1 and said in row["text"]
    others = {"questions_accepted", "questions_declined", "questions_cancelled"} - {column}
    assert all(row[name] == 0 for name in others)
