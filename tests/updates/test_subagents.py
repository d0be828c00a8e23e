"""ACP v1.25 subagents in the transcript (issue 31, part 2): a ``subagent_update`` announces a child, the
child's traffic (``child_session_id``) folds into its own nested transcript, messages between sessions show
sender → recipient; bad input (never announced, 1,000 children, announced twice, deep nesting) is bounded
and nothing is lost; the journal restores it as shown live."""

from __future__ import annotations

from typing import Any

from silo_nb.acp.client import client_capabilities
from silo_nb.model import AgentSessionUpdate
from silo_nb.notebook.render import transcript_html, transcript_markdown, transcript_text
from silo_nb.sessions.journal import encode_line, parse_lines
from silo_nb.updates import (
    MessageEntry,
    MoreSubagentsEntry,
    SessionMessageEntry,
    SubagentEntry,
    TranscriptBuilder,
    UnknownEntry,
)
from silo_nb.updates.parse import parse_update
from silo_nb.updates.transcript import SUBAGENT_DEPTH, SUBAGENTS_SHOWN, fold, fold_all


def wire(child: str | None = None, **fields: Any) -> AgentSessionUpdate:
    update = parse_update(fields)
    assert update is not None
    return update.model_copy(update={"child_session_id": child}) if child else update


def announce(child: str, by: str | None = None, **fields: Any) -> AgentSessionUpdate:
    return wire(by, sessionUpdate="subagent_update", sessionId=child, **fields)


def say(child: str | None, text: str, message_id: str = "m1") -> AgentSessionUpdate:
    content = {"type": "text", "text": text}
    return wire(child, sessionUpdate="agent_message_chunk", content=content, messageId=message_id)


def scene() -> list[AgentSessionUpdate]:
    return [
        say(None, "I will ask a helper.", "p1"),
        announce(
            "child-1",
            title="Explore the repo",
            description="reads files",
            capabilities={"cancel": {}},
            state={"state": "running"},
            cwd="/work",
        ),
        wire(
            sessionUpdate="session_message",
            messageId="t1",
            senderSessionId="parent-1",
            recipientSessionId="child-1",
            content=[{"type": "text", "text": "List the "}],
        ),
        wire(
            sessionUpdate="session_message_chunk", messageId="t1", content={"type": "text", "text": "files"}
        ),
        say("child-1", "Reading "),
        say("child-1", "the files."),
        wire("child-1", sessionUpdate="tool_call", toolCallId="c1", title="ls", status="in_progress"),
        announce("child-1", state={"state": "idle", "stopReason": "end_turn"}),
        say(None, "The helper is done.", "p2"),
    ]


def test_the_client_advertises_subagents() -> None:
    assert client_capabilities()["subagents"] == {}


def test_a_child_s_traffic_is_nested_under_its_entry_with_its_title_and_state() -> None:
    state = fold_all(scene())
    first, child, message, last = state.entries
    assert isinstance(first, MessageEntry) and isinstance(last, MessageEntry)
    assert last.text == "The helper is done."  # the child's chunks never joined the parent's message
    assert isinstance(child, SubagentEntry)
    assert (child.session_id, child.title, child.state, child.stop_reason) == (
        "child-1",
        "Explore the repo",
        "idle",
        "end_turn",
    )
    assert child.cancel and child.cwd == "/work" and child.description == "reads files" and child.announced
    inner_message, inner_tool = child.entries
    assert isinstance(inner_message, MessageEntry) and inner_message.text == "Reading the files."
    assert getattr(inner_tool, "tool_call_id", None) == "c1"
    assert message == SessionMessageEntry("t1", "main agent", "Explore the repo", "List the files")
    assert state.subagents == (child,)


def test_the_renderers_show_the_nested_transcript() -> None:
    state = fold_all(scene())
    html = transcript_html(state)
    assert 'class="silo-subagent" data-session-id="child-1"' in html
    where = [html.index(text) for text in ("Explore the repo", "Reading the files.", "The helper is done.")]
    assert where == sorted(where)
    assert "main agent → Explore the repo" in html and "List the files" in html
    markdown = transcript_markdown(state)
    assert "> ↳ **Explore the repo** · _idle (end\\_turn)_" in markdown
    assert "> Reading the files." in markdown
    text = transcript_text(state)
    assert "subagent [idle (end_turn)]> Explore the repo (reads files · in /work · child-1)" in text
    assert "    agent> Reading the files." in text
    assert "message main agent → Explore the repo> List the files" in text


def test_restored_from_the_journal_as_it_was_live() -> None:
    live = scene()
    lines = [encode_line(update) for update in live]
    assert '"childSessionId":"child-1"' in lines[4]
    restored = parse_lines(lines)
    assert [update.child_session_id for update in restored] == [update.child_session_id for update in live]
    assert transcript_html(fold_all(restored)) == transcript_html(fold_all(live))
    assert transcript_text(fold_all(restored)) == transcript_text(fold_all(live))


def test_the_builder_step_by_step_and_fold_agree_with_fold_all() -> None:
    updates = scene()
    builder = TranscriptBuilder()
    folded = None
    for update in updates:
        builder.apply(update)
        folded = fold(folded, update) if folded is not None else fold_all([update])
        assert builder.state == fold_all(updates[: updates.index(update) + 1]) == folded


def test_a_view_is_told_which_top_level_entry_a_child_changed() -> None:
    builder = TranscriptBuilder()
    for update in scene()[:4]:
        builder.apply(update)
    cursor = builder.change_cursor
    builder.apply(say("child-1", "more"))
    assert builder.changes_since(cursor) == {1}


def test_a_child_never_announced_is_shown_as_unannounced_not_dropped() -> None:
    state = fold_all([say("ghost-7", "boo"), say(None, "parent text", "p")])
    ghost, parent = state.entries
    assert isinstance(parent, MessageEntry) and parent.text == "parent text"
    assert isinstance(ghost, SubagentEntry) and not ghost.announced
    assert ghost.label == "unannounced child ghost-7"
    assert isinstance(ghost.entries[0], MessageEntry) and ghost.entries[0].text == "boo"
    assert "unannounced child ghost-7" in transcript_text(state)
    # announced later: the same entry takes the title
    (later,) = fold_all([say("ghost-7", "boo"), announce("ghost-7", title="Late")]).entries
    assert isinstance(later, SubagentEntry) and later.announced and later.title == "Late"


def test_announced_twice_and_state_updates_patch_one_entry() -> None:
    updates = [
        announce("c", title="First", capabilities={"cancel": {}}, state={"state": "running"}),
        announce("c", title="First"),  # omitted fields unchanged
        announce("c", state={"state": "requires_action"}),
        announce("c", description=None, capabilities=None, state={"state": "_vendor"}),
    ]
    (entry,) = fold_all(updates).entries
    assert isinstance(entry, SubagentEntry)
    assert (entry.title, entry.state, entry.cancel) == ("First", "_vendor", False)
    assert fold_all(updates[:3]).entries[0].state == "requires_action"  # type: ignore[union-attr]
    (cleared,) = fold_all([*updates, announce("c", title=None, state=None)]).entries
    assert isinstance(cleared, SubagentEntry) and cleared.title is None and cleared.state is None


def test_an_announcement_without_a_child_id_is_counted_not_lost() -> None:
    state = fold_all([wire(sessionUpdate="subagent_update", title="who?")])
    assert state.other == (("subagent_update", 1),)  # and shown as a kind it cannot read (issue 31 item 7)
    assert state.entries == (UnknownEntry("subagent_update", "who?"),)


def test_a_thousand_children_show_the_first_ones_and_count_the_rest() -> None:
    updates = []
    for number in range(1000):
        updates += [announce(f"c{number}", title=f"child {number}"), say(f"c{number}", "hi")]
    state = fold_all(updates)
    children = [entry for entry in state.entries if isinstance(entry, SubagentEntry)]
    (more,) = [entry for entry in state.entries if isinstance(entry, MoreSubagentsEntry)]
    assert len(children) == SUBAGENTS_SHOWN and len(state.entries) == SUBAGENTS_SHOWN + 1
    assert more == MoreSubagentsEntry(children=1000 - SUBAGENTS_SHOWN, updates=2 * (1000 - SUBAGENTS_SHOWN))
    assert f"+ {1000 - SUBAGENTS_SHOWN:,} more subagents" in transcript_text(state)
    assert len(transcript_html(state)) < 200_000


def test_children_of_children_nest_and_deep_ones_stay_at_the_last_level() -> None:
    updates = [announce("d1", title="level 1")]
    for level in range(2, 8):
        updates += [announce(f"d{level}", by=f"d{level - 1}", title=f"level {level}"), say(f"d{level}", "x")]
    state = fold_all(updates)
    (top,) = state.entries
    depth, entry = 1, top
    while isinstance(entry, SubagentEntry) and any(isinstance(e, SubagentEntry) for e in entry.entries):
        entry = next(e for e in entry.entries if isinstance(e, SubagentEntry))
        depth += 1
    assert depth == SUBAGENT_DEPTH
    assert len(state.subagents) == 7  # every level is shown, the deep ones at the last level
    assert state.subagents[-1].parent_session_id == "d6" and state.subagents[-1].entries
    assert "child of d6" in transcript_text(state)


def test_a_child_s_unanswered_permission_is_what_the_turn_waits_for() -> None:
    asked = AgentSessionUpdate(
        kind="permission_request",
        raw={"requestId": "silo-permission-1", "toolCallId": "t", "title": "rm", "options": []},
        child_session_id="c",
    )
    state = fold_all([announce("c", title="helper"), asked])
    waiting = state.waiting()
    assert waiting is not None and waiting.title == "rm"


def test_a_child_s_title_words_and_tools_are_not_its_parent_s_facts_or_row() -> None:
    from silo_nb.experiments.rows import turn_rows
    from silo_nb.sessions.journal.reconcile import last_title
    from silo_nb.updates import SessionFacts

    updates = [
        wire(sessionUpdate="session_info_update", title="Parent"),
        *scene(),
        wire("child-1", sessionUpdate="session_info_update", title="Child"),
    ]
    facts = SessionFacts()
    for update in updates:
        facts.apply(update)
    assert facts.title == "Parent"
    assert last_title(encode_line(update) for update in updates) == "Parent"
    (row,) = turn_rows(updates)
    assert row["text"] == "I will ask a helper.The helper is done."


def test_a_child_s_user_chunk_starts_no_turn_of_its_parent() -> None:
    from silo_nb.updates import split_turns

    prompt = wire(
        sessionUpdate="user_message_chunk", content={"type": "text", "text": "go"}, synthesized=True
    )
    updates = [
        prompt,
        announce("c", title="helper"),
        say(None, "working", "p1"),
        wire("c", sessionUpdate="user_message_chunk", content={"type": "text", "text": "child task"}),
        say("c", "child reply"),
    ]
    (turn,) = [t for t in split_turns(updates) if t.number is not None]
    assert list(turn.updates) == updates


def test_past_the_ids_told_apart_more_children_are_counted_as_at_least() -> None:
    ids = 10_100
    state = fold_all([say(f"c{number}", "x") for number in range(ids)])
    more = state.entries[-1]
    assert isinstance(more, MoreSubagentsEntry) and more.at_least
    assert more.updates == ids - SUBAGENTS_SHOWN  # every update of the hidden ones is counted
    assert "+ at least " in transcript_text(state)


def test_a_child_s_claude_turn_end_marker_is_not_its_parent_s() -> None:
    from silo_nb.sessions.session.turn_tracker import is_turn_end_marker

    marker = {
        "sessionUpdate": "usage_update",
        "used": 1,
        "size": 2,
        "_meta": {"_claude/origin": {"kind": "x"}},
    }
    assert is_turn_end_marker(wire(**marker))
    assert not is_turn_end_marker(wire("child-1", **marker))
