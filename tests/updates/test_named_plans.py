"""ACP v1.25 (unstable) named plans (issue 31 item 6): ``plan_update`` replaces the plan of its ``planId``
whole — steps, Markdown or a file —, ``plan_removed`` marks it removed (kept, struck through); each is one
entry, restored as shown live, and one with no id is nothing."""

from __future__ import annotations

from silo_nb.acp.client import client_capabilities
from silo_nb.model import AgentSessionUpdate
from silo_nb.notebook.render import transcript_html, transcript_markdown, transcript_text
from silo_nb.sessions.journal import encode_line, parse_lines
from silo_nb.updates import PlanView
from silo_nb.updates.transcript import fold_all
from tests.support.updates import say, wire


def items(plan_id: str, *steps: tuple[str, str]) -> AgentSessionUpdate:
    entries = [{"content": content, "status": status, "priority": "medium"} for content, status in steps]
    return wire("plan_update", plan={"type": "items", "planId": plan_id, "entries": entries})


def test_the_client_advertises_plans() -> None:
    assert client_capabilities()["plan"] == {}


def test_named_plans_are_replaced_whole_and_removed_ones_kept() -> None:
    live = [
        items("p1", ("Load df", "in_progress"), ("Plot", "pending")),
        wire("plan_update", plan={"type": "markdown", "planId": "p2", "content": "1. **Clean** the data"}),
        say("working"),
        items("p1", ("Load df", "completed"), ("Plot", "in_progress")),
        wire("plan_update", plan={"type": "file", "planId": "p3", "uri": "file:///work/PLAN.md"}),
        wire("plan_removed", planId="p2"),
    ]
    state = fold_all(live)
    p1, p2, _message, p3 = state.entries
    assert isinstance(p1, PlanView) and [(e.content, e.status) for e in p1.entries] == [
        ("Load df", "completed"),
        ("Plot", "in_progress"),
    ]
    assert isinstance(p2, PlanView) and p2.removed and p2.markdown == "1. **Clean** the data"
    assert isinstance(p3, PlanView) and p3.uri == "file:///work/PLAN.md"
    html = transcript_html(state)
    assert "Plan p2 (removed)" in html and "line-through" in html and "<strong>Clean</strong>" in html
    assert "📄 file:///work/PLAN.md" in html
    assert "**Plan p1**" in transcript_markdown(state)
    plain = transcript_text(state)
    assert "plan p1:" in plain and "plan p3:" in plain and "  file: file:///work/PLAN.md" in plain
    restored = parse_lines([encode_line(update) for update in live])
    assert transcript_html(fold_all(restored)) == html


def test_a_plan_removed_that_this_turn_never_showed_is_a_line_and_bad_ones_nothing() -> None:
    (entry,) = fold_all([wire("plan_removed", planId="old")]).entries
    assert entry == PlanView(entries=(), plan_id="old", removed=True)
    nothing = [
        wire("plan_removed"),
        wire("plan_update", plan={"type": "items", "entries": []}),
        wire("plan_update", plan="steps"),
    ]
    assert fold_all(nothing).entries == ()
    odd = fold_all([wire("plan_update", plan={"type": "hologram", "planId": "p9"})])
    assert "(empty)" in transcript_html(odd) and "plan p9:" in transcript_text(odd)  # a kind ACP lacks
