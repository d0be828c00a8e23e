"""The transcript reducer's rules, pinned directly (``silo_nb/updates/transcript.py``, ``live.py``).

- Agent traffic is built with ``parse_update`` (as the client parses it); silo_nb's own lines (the user
  prompt, permission requests and decisions) as ``AgentSessionUpdate``s shaped like the session's.
- Each rule has its own test; a seeded random loop checks the fold against a tiny independent model.
"""

from __future__ import annotations

import copy
import logging
import random
import weakref
from dataclasses import FrozenInstanceError, replace
from dataclasses import fields as dataclass_fields
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from silo_nb.model.kinds import SILO_NB_KINDS
from silo_nb.model.models import AgentSessionUpdate
from silo_nb.notebook.live_transcript import LiveTranscript
from silo_nb.sessions.journal import encode_line, parse_lines
from silo_nb.sessions.session.permission_desk import PermissionDesk
from silo_nb.updates.entries import made
from silo_nb.updates.journal_turns import split_turns
from silo_nb.updates.parse import METADATA_KINDS, session_title
from silo_nb.updates.transcript import (
    MessageEntry,
    PermissionEntry,
    PlanView,
    ToolEntry,
    TranscriptState,
    fold,
    fold_all,
)
from tests.support.updates import prompt, say, wire
from tests.work import calls

OPTIONS = [
    {"optionId": "once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


def asked(request_id: str | None, tool_call_id: str = "c1", **extra: Any) -> AgentSessionUpdate:
    raw = {
        "synthesized": True,
        "toolCallId": tool_call_id,
        "title": f"Edit {tool_call_id}",
        "options": OPTIONS,
    }
    if request_id is not None:
        raw["requestId"] = request_id
    return AgentSessionUpdate(kind="permission_request", raw={**raw, **extra})


def decided(request_id: str | None, option_id: str | None, tool_call_id: str = "c1") -> AgentSessionUpdate:
    line = asked(request_id, tool_call_id, optionId=option_id)
    return line.model_copy(update={"kind": "permission_decision"})


def permissions(state: TranscriptState) -> list[tuple[str | None, str, bool, str | None]]:
    return [
        (e.request_id, e.tool_call_id, e.answered, e.choice)
        for e in state.permissions  # standalone, and inside their tool call's card
    ]


# -- messages ---------------------------------------------------------------------------------------


def test_chunks_join_only_when_same_role_and_same_message_id() -> None:
    first, second = (say(t).model_copy(update={"timestamp": ts}) for t, ts in (("Hel", "T1"), ("lo", "T2")))
    stream = [first, second, say(" again", "m2"), say("hmm", "m2", "agent_thought_chunk"), say("!", "m2")]
    state = fold_all([*stream, say("a", None), say("b", None)])
    assert [(e.role, e.text, e.message_id) for e in state.entries if isinstance(e, MessageEntry)] == [
        ("agent", "Hello", "m1"),
        ("agent", " again", "m2"),
        ("thought", "hmm", "m2"),
        ("agent", "!", "m2"),
        ("agent", "ab", None),
    ]
    assert state.reply_text == "Hello again!ab"
    assert isinstance(state.entries[0], MessageEntry) and state.entries[0].timestamp == "T1"  # the first one


def test_metadata_does_not_break_a_message_but_a_tool_call_or_an_unknown_kind_does() -> None:
    joined = fold_all([say("a"), wire("usage_update", used=1, size=9), say("b")])
    assert [e.text for e in joined.entries if isinstance(e, MessageEntry)] == ["ab"]
    split = fold_all([say("a"), wire("tool_call", toolCallId="t1"), say("b")])
    assert [type(e).__name__ for e in split.entries] == ["MessageEntry", "ToolEntry", "MessageEntry"]
    shown = fold_all([say("a"), wire("mystery"), say("b")])  # shown where it came (issue 31 item 7)
    assert [type(e).__name__ for e in shown.entries] == ["MessageEntry", "UnknownEntry", "MessageEntry"]
    assert shown.reply_text == "ab"


def test_non_text_blocks_are_listed_and_add_no_text() -> None:
    state = fold_all(
        [
            say("see"),
            wire("agent_message_chunk", messageId="m1", content={"type": "image", "data": "AAAA"}),
            wire(
                "agent_message_chunk",
                messageId="m1",
                content={"type": "resource", "resource": {"uri": "file:///a", "text": "secret"}},
            ),
        ]
    )
    (entry,) = state.entries
    assert isinstance(entry, MessageEntry)
    assert (entry.text, entry.non_text) == ("see", ("image", "resource"))


@pytest.mark.parametrize("content", [None, {"text": "no type"}, "not a block"])
def test_a_chunk_without_content_is_ignored(content: Any) -> None:
    state = fold_all([say("a")])
    fields = {} if content is None else {"content": content}
    assert fold(state, wire("agent_message_chunk", messageId="m1", **fields)) is state


# -- tool calls and the plan ------------------------------------------------------------------------


def test_tool_calls_upsert_by_id_absent_fields_unchanged_lists_replaced() -> None:
    diff = {"type": "diff", "path": "/a.py", "oldText": "x", "newText": "y"}
    state = fold_all(
        [
            wire(
                "tool_call",
                toolCallId="c1",
                title="Edit a.py",
                kind="edit",
                status="pending",
                content=[diff],
                locations=[{"path": "/a.py", "line": 3}],
                rawInput={"path": "/a.py"},
            ),
            wire("tool_call", toolCallId="c2", title="Read b.py", kind="read"),
            wire("tool_call_update", toolCallId="c1", status="in_progress"),
            wire("tool_call_update", toolCallId="c1", status="completed", locations=[], rawOutput="ok"),
        ]
    )
    assert [e.tool_call_id for e in state.entries if isinstance(e, ToolEntry)] == ["c1", "c2"]
    c1 = state.tool("c1")
    assert c1 is not None
    assert (c1.title, c1.kind, c1.status) == ("Edit a.py", "edit", "completed")
    assert [(c.type, c.new_text) for c in c1.content] == [("diff", "y")]
    assert c1.locations == ()  # an empty list is present: it replaces
    assert (c1.raw_input, c1.raw_output) == ({"path": "/a.py"}, "ok")
    text = {"type": "content", "content": {"type": "text", "text": "done"}}
    replaced = fold(state, wire("tool_call_update", toolCallId="c1", content=[text]))
    c1_after = replaced.tool("c1")
    assert c1_after is not None
    assert [(c.type, c.content.text if c.content else None) for c in c1_after.content] == [
        ("content", "done")
    ]
    assert c1_after.title == "Edit a.py"


def test_an_update_for_an_unknown_tool_call_creates_it() -> None:
    state = fold_all([say("a"), wire("tool_call_update", toolCallId="late", status="failed")])
    assert state.entries[-1] == ToolEntry(tool_call_id="late", status="failed")


def test_a_tool_call_without_an_id_is_ignored() -> None:
    state = fold_all([say("a")])
    assert fold(state, wire("tool_call_update", status="completed")) is state


def test_the_plan_is_one_entry_replaced_in_place() -> None:
    state = fold_all(
        [
            say("a"),
            wire("plan", entries=[{"content": "step 1", "status": "pending"}]),
            wire("tool_call", toolCallId="c1"),
            wire("plan", entries=[{"content": "step 1", "status": "completed"}, {"content": "step 2"}]),
        ]
    )
    assert [type(e).__name__ for e in state.entries] == ["MessageEntry", "PlanView", "ToolEntry"]
    assert state.plan is state.entries[1]
    assert [(p.content, p.status) for p in state.plan.entries] == [("step 1", "completed"), ("step 2", None)]


# -- permissions ------------------------------------------------------------------------------------


def test_a_request_then_its_decision_is_one_answered_entry() -> None:
    requested = fold_all([asked("r1")])
    (entry,) = requested.entries
    assert isinstance(entry, PermissionEntry)
    assert (entry.title, entry.answered, entry.choice, entry.choice_name) == ("Edit c1", False, None, None)
    assert entry.options == (("once", "Allow once", "allow_once"), ("no", "Reject", "reject_once"))
    (answered,) = fold(requested, decided("r1", "once")).entries
    assert isinstance(answered, PermissionEntry)
    assert (answered.answered, answered.choice, answered.choice_name) == (True, "once", "Allow once")


def test_a_decision_with_a_null_option_means_cancelled() -> None:
    (entry,) = fold_all([asked("r1"), decided("r1", None)]).entries
    assert isinstance(entry, PermissionEntry) and (entry.answered, entry.choice) == (True, None)


def test_two_requests_for_one_tool_call_stay_two_entries() -> None:
    state = fold_all([asked("r1"), asked("r2"), decided("r2", "no")])
    assert permissions(state) == [("r1", "c1", False, None), ("r2", "c1", True, "no")]
    assert permissions(fold(state, decided("r1", "once"))) == [
        ("r1", "c1", True, "once"),
        ("r2", "c1", True, "no"),
    ]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([decided(None, "once")], [(None, "c1", True, "once")]),
        ([asked("r1"), decided(None, "once")], [(None, "c1", True, "once")]),
        ([asked("r1"), decided(None, "once", "c2")], [("r1", "c1", False, None), (None, "c2", True, "once")]),
        (
            [asked("r1"), asked("r2"), decided(None, "no")],
            [("r1", "c1", False, None), (None, "c1", True, "no")],
        ),
        (
            [decided(None, "once"), decided(None, "no")],
            [(None, "c1", True, "once"), (None, "c1", True, "no")],
        ),
    ],
    ids=["alone", "attaches", "other-tool-call", "last-unanswered", "answered-never-reused"],
)
def test_a_legacy_decision_without_request_id(lines: list[AgentSessionUpdate], expected: list[Any]) -> None:
    assert permissions(fold_all(lines)) == expected


async def test_a_request_answered_inside_a_listener_shows_once() -> None:
    lines: list[AgentSessionUpdate] = []
    desk = PermissionDesk(record=lines.append, on_blocked=lambda: None, on_answered=lambda: None)
    desk.listeners.add(lambda request: request.respond("once"))
    params = {"toolCall": {"toolCallId": "c7", "title": "Edit c7"}, "options": OPTIONS}
    assert await desk.ask(params, open_=True) == {"outcome": {"outcome": "selected", "optionId": "once"}}
    assert [line.kind for line in lines] == ["permission_request", "permission_decision"]
    assert permissions(fold_all(lines)) == [("silo-permission-1", "c7", True, "once")]


async def test_reading_ten_thousand_options_lets_other_tasks_run_between_steps() -> None:
    """The desk reads a long options list a slice per loop step: a task that counts its turns runs while
    one request is read (once the options are in, the listener sees all of them)."""
    lines: list[AgentSessionUpdate] = []
    desk = PermissionDesk(record=lines.append, on_blocked=lambda: None, on_answered=lambda: None)
    turns: list[int] = []
    seen: list[int] = []

    def listen(request: Any) -> None:
        seen.append(len(turns))
        request.respond("o9999")

    async def count_turns() -> None:
        while True:
            turns.append(1)
            await anyio.lowlevel.checkpoint()

    desk.listeners.add(listen)
    many = [{"optionId": f"o{i}", "name": f"Option {i}", "kind": "allow_once"} for i in range(10_000)]
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(count_turns)
        await anyio.lowlevel.checkpoint()
        before = len(turns)
        answer = await desk.ask({"toolCall": {"toolCallId": "c"}, "options": many}, open_=True)
        tasks.cancel_scope.cancel()
    assert answer == {"outcome": {"outcome": "selected", "optionId": "o9999"}}
    assert seen[0] - before >= 10  # ten slices of 1,000, a turn of the counter after each


async def test_the_desk_lets_a_request_go_once_its_decision_is_recorded() -> None:
    """A late look asks the answer, not the request: the desk keeps the outcome and lets the request (and
    its 10,000 options) go, so a session of such requests does not grow the heap each full collection
    walks."""
    lines: list[AgentSessionUpdate] = []
    desk = PermissionDesk(record=lines.append, on_blocked=lambda: None, on_answered=lambda: None)
    held: list[weakref.ref[Any]] = []

    def listen(request: Any) -> None:
        held.append(weakref.ref(request))
        request.respond("o5")

    desk.listeners.add(listen)
    many = [{"optionId": f"o{i}", "name": f"Option {i}", "kind": "allow_once"} for i in range(10_000)]
    await desk.ask({"toolCall": {"toolCallId": "c"}, "options": many}, open_=True)
    lines.clear()  # the recorded lines carry the request's tool call and options, not the request
    assert held[0]() is None
    assert desk.outcome("silo-permission-1") == (True, "o5") and desk.pending == ()


async def test_a_request_that_comes_while_a_long_one_is_read_gets_its_own_id() -> None:
    """The desk numbers a request before it reads its options (a few loop steps for 10,000): a short
    request that arrives meanwhile gets the next number, and each answer reaches its own request."""
    lines: list[AgentSessionUpdate] = []
    desk = PermissionDesk(record=lines.append, on_blocked=lambda: None, on_answered=lambda: None)
    seen: list[str] = []

    def listen(request: Any) -> None:
        seen.append(request.request_id)
        request.respond(request.options[-1].option_id)

    desk.listeners.add(listen)
    many = [{"optionId": f"o{i}", "name": f"Option {i}", "kind": "allow_once"} for i in range(10_000)]
    answers: dict[str, Any] = {}

    async def ask(name: str, options: list[dict[str, Any]]) -> None:
        answers[name] = await desk.ask({"toolCall": {"toolCallId": name}, "options": options}, open_=True)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask, "long", many)
            await anyio.lowlevel.checkpoint()
            tasks.start_soon(ask, "short", OPTIONS)
    assert sorted(seen) == ["silo-permission-1", "silo-permission-2"]
    assert answers["long"]["outcome"]["optionId"] == "o9999"
    assert answers["short"]["outcome"]["optionId"] == OPTIONS[-1]["optionId"]


def test_an_entry_keeps_a_bounded_number_of_options_and_always_the_chosen_one() -> None:
    many = [{"optionId": f"o{i}", "name": f"Option {i}", "kind": "allow_once"} for i in range(10_000)]
    request = asked("r1", options=many)
    # A decision line as journals before the decision kept only the chosen option wrote it: all of them.
    decision = decided("r1", "o9999").model_copy(
        update={"raw": {**asked("r1").raw, "options": many, "optionId": "o9999"}}
    )
    (waiting,) = fold_all([request]).entries
    (answered,) = fold_all([request, decision]).entries
    assert isinstance(waiting, PermissionEntry) and isinstance(answered, PermissionEntry)
    assert len(waiting.options) == 64 and not waiting.answered
    assert answered.choice_name == "Option 9999" and len(answered.options) == 65


# -- titles, usage, metadata, unknown kinds ---------------------------------------------------------

TITLES: list[tuple[dict[str, Any], str | None]] = [
    ({"title": "A"}, "A"),
    ({"info": {"title": "B"}}, "B"),
    ({"sessionInfo": {"title": "C"}}, "C"),
    ({"title": "  padded  "}, "padded"),
    ({"title": 42, "info": {"title": "D"}}, "D"),
    ({"title": " ", "sessionInfo": {"title": "E"}}, "E"),
    ({"title": "", "info": "not a mapping"}, None),
    ({"sessionInfo": {"title": None}}, None),
    ({"updatedAt": "2025-01-01"}, None),
]


@pytest.mark.parametrize(("raw", "expected"), TITLES)
def test_titles_follow_the_session_rule(raw: dict[str, Any], expected: str | None) -> None:
    update = wire("session_info_update", **raw)
    assert session_title(update) == expected
    before = TranscriptState(title="old")
    after = fold(before, update)
    assert after.title == (expected or "old")
    if expected is None:
        assert after is before  # blank or absent: no change at all
    assert after.entries == ()


def test_usage_is_kept_and_a_malformed_one_ignored() -> None:
    state = fold_all([wire("usage_update", used=10, size=100, cost={"amount": 0.5, "currency": "USD"})])
    assert state.usage is not None and (state.usage.used, state.usage.size) == (10, 100)
    assert state.usage.cost is not None and state.usage.cost.amount == 0.5
    assert fold(state, wire("usage_update", used="lots")) is state
    assert state.entries == () and state.other == ()


# The agent's metadata kinds (silo_nb's own lines never come from the wire; turn_end sets the status).
@pytest.mark.parametrize("kind", sorted(METADATA_KINDS - SILO_NB_KINDS))
def test_metadata_makes_no_entry_and_is_not_other(kind: str) -> None:
    state = fold_all([say("a")])
    assert fold(state, wire(kind, availableCommands=[], currentModeId="x", configOptions=[])) is state


def test_unknown_kinds_are_counted_in_order() -> None:
    state = fold_all([wire("vendor_x"), say("a"), wire("vendor_y"), wire("vendor_x"), asked("r1")])
    assert state.other == (("vendor_x", 2), ("vendor_y", 1))  # first-arrival order, counted
    assert state.other_count == 3
    names = [type(e).__name__ for e in state.entries]
    assert names == ["UnknownEntry", "MessageEntry", "UnknownEntry", "UnknownEntry", "PermissionEntry"]


# -- purity -----------------------------------------------------------------------------------------

EVERYTHING = [
    prompt("fix it"),
    say("On it"),
    wire(
        "tool_call", toolCallId="c1", title="Edit", content=[{"type": "diff", "path": "/a", "newText": "y"}]
    ),
    wire("plan", entries=[{"content": "one"}]),
    asked("silo-permission-1"),
    decided("silo-permission-1", "once"),
    wire("tool_call_update", toolCallId="c1", status="completed"),
    wire("session_info_update", sessionInfo={"title": "Fixing"}),
    wire("usage_update", used=5, size=50),
    wire("vendor_x"),
    say("thinking", "m2", "agent_thought_chunk"),
    say("Done.", "m3"),
]


@pytest.mark.parametrize("n", range(len(EVERYTHING)), ids=[u.kind for u in EVERYTHING])
def test_fold_never_mutates_its_input_and_shares_what_it_did_not_touch(n: int) -> None:
    state = fold_all(EVERYTHING[:n])
    snapshot, entries = copy.deepcopy(state), state.entries
    new = fold(state, EVERYTHING[n])
    assert state == snapshot and state.entries is entries
    assert new is not state and new != state  # each line changes the transcript built before it
    kept = [e for e, f in zip(state.entries, new.entries, strict=False) if e is f]
    assert len(kept) >= len(state.entries) - 1  # the render cache is keyed by entry identity


def test_fold_returns_the_same_object_when_nothing_changes() -> None:
    state = fold_all(EVERYTHING)
    for update in [
        wire("available_commands_update", availableCommands=[{"name": "help"}]),
        wire("current_mode_update", currentModeId="plan"),
        wire("agent_message_chunk", messageId="m3"),
        wire("session_info_update", title="   "),
    ]:
        assert fold(state, update) is state, update.kind


def test_fold_all_of_nothing_new_is_the_state_it_was_given() -> None:
    state = fold_all(EVERYTHING)
    assert fold_all([], state) is state
    assert (
        fold_all([wire("current_mode_update", currentModeId="plan"), wire("agent_message_chunk")], state)
        is state
    )
    assert fold_all([say("more", "m3")], state).reply_text == state.reply_text + "more"


def test_entries_made_without_init_equal_constructed_ones() -> None:
    fields: dict[str, Any] = {
        "role": "agent", "text": "x", "message_id": "m", "timestamp": None, "non_text": (), "dropped": 0,
        "attachments": (),
    }  # fmt: skip
    fast, slow = made(MessageEntry, **fields), MessageEntry(**fields)
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert fast.with_text("y") == replace(slow, text="y")
    with pytest.raises(FrozenInstanceError):
        fast.text = "z"  # type: ignore[misc]
    tool = made(ToolEntry, **{f.name: getattr(ToolEntry("c"), f.name) for f in dataclass_fields(ToolEntry)})
    assert tool == ToolEntry("c") and hash(tool) == hash(ToolEntry("c"))


def test_a_repeated_title_or_usage_is_no_change() -> None:
    state = fold_all(EVERYTHING)
    assert fold(state, wire("session_info_update", sessionInfo={"title": "Fixing"})) is state
    assert fold(state, wire("usage_update", used=5, size=50)) is state


# -- journals and turns -----------------------------------------------------------------------------


def test_folding_the_journal_equals_folding_live() -> None:
    live = LiveTranscript()
    for update in EVERYTHING:
        live.apply(update)
    journal = parse_lines(encode_line(update) for update in EVERYTHING)
    assert fold_all(journal) == live.state == fold_all(EVERYTHING)
    assert live.state.title == "Fixing" and live.state.prompt_text == "fix it"
    assert permissions(live.state) == [("silo-permission-1", "c1", True, "once")]


# -- LiveTranscript ---------------------------------------------------------------------------------


def test_live_watchers_are_called_on_change_only_in_order() -> None:
    live, calls = LiveTranscript(), []
    live.watch(lambda: calls.append("first"))
    second = live.watch(lambda: calls.append(f"second:{live.state.reply_text}"))
    live.apply(say("a"))
    live.apply(wire("current_mode_update", currentModeId="x"))
    live.apply(wire("agent_message_chunk"))
    assert calls == ["first", "second:a"]
    second.dispose()
    live.apply(say("b"))
    assert calls == ["first", "second:a", "first"]


def test_a_raising_watcher_is_logged_and_the_others_still_run(caplog: pytest.LogCaptureFixture) -> None:
    live, calls = LiveTranscript(), []

    def broken() -> None:
        raise RuntimeError("boom")

    live.watch(broken)
    live.watch(lambda: calls.append(live.state.reply_text))
    with caplog.at_level(logging.ERROR, logger="silo_nb"):
        live.apply(say("a"))
    assert calls == ["a"]
    assert any(r.exc_info and "boom" in str(r.exc_info[1]) for r in caplog.records)


def test_set_status_notifies() -> None:
    live, calls = LiveTranscript(fold_all([say("a")])), []
    live.watch(lambda: calls.append(live.state.status))
    live.set_status("finished", stop_reason="end_turn")
    assert calls == ["finished"]
    assert (live.state.stop_reason, live.state.reply_text) == ("end_turn", "a")


# -- a whole journal over two connections (request and prompt ids restart per connection) ----------


def test_a_stale_unanswered_request_is_not_taken_over_by_a_later_connection() -> None:
    first = [prompt("edit a", 1), asked("silo-permission-1", "c1")]  # the kernel died while it was asked
    second = [prompt("edit b", 1), asked("silo-permission-1", "c9"), decided("silo-permission-1", "no", "c9")]
    state = fold_all(first + second)
    assert [entry[1:] for entry in permissions(state)] == [("c1", False, None), ("c9", True, "no")]
    assert isinstance(state.entries[-1], PermissionEntry)  # after the second prompt, not in the first turn


def test_each_synthesized_prompt_is_its_own_message() -> None:
    # Connection A's only prompt got no reply; connection B's first prompt reuses silo-journal-user-1.
    state = fold_all([prompt("hello", 1), prompt("hello again", 1)])
    assert [e.text for e in state.entries if isinstance(e, MessageEntry)] == ["hello", "hello again"]


# -- a property: random streams ---------------------------------------------------------------------


def random_update(rng: random.Random) -> AgentSessionUpdate:
    roll = rng.random()
    if roll < 0.4:
        kind = rng.choice(["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"])
        return say(rng.choice("abc"), rng.choice(["m1", "m2", None]), kind)
    if roll < 0.75:
        choices = {"title": ["T", "U"], "status": ["pending", "completed"]}
        fields = {k: rng.choice(v) for k, v in choices.items() if rng.random() < 0.5}
        kind = rng.choice(["tool_call", "tool_call_update"])
        return wire(kind, toolCallId=rng.choice(["c1", "c2", "c3"]), **fields)
    if roll < 0.85:
        return wire("plan", entries=[{"content": rng.choice("xyz")}])
    if roll < 0.9:
        return prompt(rng.choice("pq"), rng.randint(1, 2))
    return rng.choice([wire("usage_update", used=rng.randint(1, 9), size=10), wire("vendor_x"), asked("r1")])


def test_random_streams_fold_like_a_simple_model() -> None:
    rng = random.Random(7)
    for _ in range(300):
        updates = [random_update(rng) for _ in range(rng.randint(0, 30))]
        whole, cut = fold_all(updates), rng.randint(0, len(updates))
        assert fold_all(updates[cut:], fold_all(updates[:cut])) == whole
        assert [u for turn in split_turns(updates) for u in turn.updates] == updates
        # tool calls: first-appearance order, and each field is its last value sent
        calls = [u.tool_call for u in updates if u.tool_call is not None]
        ids = list(dict.fromkeys(c.tool_call_id for c in calls))
        assert [e.tool_call_id for e in whole.entries if isinstance(e, ToolEntry)] == ids
        for tool_call_id in ids:
            mine = [c for c in calls if c.tool_call_id == tool_call_id]
            entry = whole.tool(tool_call_id)
            assert entry is not None
            assert entry.title == next((c.title for c in reversed(mine) if c.title is not None), None)
            assert entry.status == next((c.status for c in reversed(mine) if c.status is not None), None)
        agent = "".join(u.text or "" for u in updates if u.kind == "agent_message_chunk")
        assert whole.reply_text == agent
        said = "".join(u.text or "" for u in updates if u.kind.endswith("_chunk"))
        assert "".join(e.text for e in whole.entries if isinstance(e, MessageEntry)) == said
        assert sum(isinstance(e, PlanView) for e in whole.entries) == min(
            1, sum(u.kind == "plan" for u in updates)
        )
        vendor = sum(u.kind == "vendor_x" for u in updates)
        assert whole.other == ((("vendor_x", vendor),) if vendor else ())


# -- cost and bounds (issue 10 item 2, issue 8 item 6) ----------------------------------------------


def workload(count: int) -> list[AgentSessionUpdate]:
    """``count`` distinct tool calls, each then completed, and ``count`` updates of unknown kinds."""
    updates = [wire("tool_call", toolCallId=f"t{i}", title=f"Step {i}") for i in range(count)]
    updates += [wire("tool_call_update", toolCallId=f"t{i}", status="completed") for i in range(count)]
    return updates + [wire(f"vendor_{i}") for i in range(count)]


def test_the_builder_is_linear_in_tool_calls_and_unknown_kinds() -> None:
    """20,000 distinct tool calls, each updated, plus 20,000 unknown kinds: quadratic work took minutes.
    The work is counted in calls (issue 21: no wall-clock bound in a test): four times the updates, about
    four times the calls."""
    state = fold_all(workload(20_000))
    assert len(state.entries) == 20_000 + 32  # the first 32 unknown kinds shown, the rest counted
    tools = state.entries[:20_000]
    assert all(isinstance(e, ToolEntry) and e.status == "completed" for e in tools)
    # Unknown kinds: a bounded number of names, every update counted.
    assert len(state.other) <= 33 and state.other_count == 20_000
    assert state.other[-1][0] == "…"
    small, large = workload(1_000), workload(4_000)
    assert calls(fold_all, large) < 5 * calls(fold_all, small)


def test_a_message_is_joined_once_per_snapshot_and_bounded() -> None:
    from silo_nb.updates import transcript

    builder = transcript.TranscriptBuilder()
    for i in range(50_000):
        builder.apply(say(f"token {i} "))
    (entry,) = builder.state.entries
    assert isinstance(entry, MessageEntry) and entry.text.endswith("token 49999 ") and entry.dropped == 0
    room = transcript.MESSAGE_CHAR_LIMIT - len(entry.text) + 10
    piece = 500_000  # below the per-field cut of the wire layer (parse.MAX_FIELD_CHARS)
    for start in range(0, room, piece):
        builder.apply(say("x" * min(piece, room - start)))
    builder.apply(say("more"))
    (entry,) = builder.state.entries
    assert len(entry.text) == transcript.MESSAGE_CHAR_LIMIT and entry.dropped == 14  # said, not silent


def test_builder_reports_which_entries_changed() -> None:
    from silo_nb.updates.transcript import TranscriptBuilder

    builder = TranscriptBuilder()
    builder.apply(prompt("go"))
    builder.apply(wire("tool_call", toolCallId="a"))
    cursor = builder.change_cursor
    builder.apply(say("hi"))
    builder.apply(wire("tool_call_update", toolCallId="a", status="completed"))
    assert builder.changes_since(cursor) == {1, 2}
    assert builder.changes_since(builder.change_cursor) == set()
    before = builder.state
    builder.apply(say(" there"))
    after = builder.state
    assert before.entries[:2] == after.entries[:2] and before.entries[0] is after.entries[0]
    assert after.reply_text == "hi there" and before.reply_text == "hi"  # a snapshot never changes


def test_a_decision_answers_by_request_id_in_constant_time() -> None:
    updates = [asked(f"r{i}", f"c{i}") for i in range(5_000)]
    updates += [decided(f"r{i}", "once", f"c{i}") for i in range(5_000)]
    state = fold_all(updates)
    assert len(state.entries) == 5_000 and all(e.answered for e in state.entries)
