"""ACP v1.25 context compaction and kinds silo_nb does not know (issue 31 items 1 and 7): compaction is a
marker upserted by ``compactionId`` with its summary folded open; an unknown kind is a small line with its
text; both journaled and restored as shown live, both counted in the turn rows; every bad input bounded."""

from __future__ import annotations

from typing import Any

from silo_nb.acp.client import client_capabilities
from silo_nb.experiments.rows import turn_rows
from silo_nb.model import AgentSessionUpdate
from silo_nb.notebook.render import transcript_html, transcript_markdown, transcript_text
from silo_nb.sessions.journal import encode_line, parse_lines
from silo_nb.updates import CompactionEntry, UnknownEntry
from silo_nb.updates.transcript import SUMMARY_CHAR_LIMIT, UNKNOWN_TEXT_LIMIT, fold_all
from tests.support.updates import prompt, say, wire


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def compaction(status: str, cid: str = "c1", **fields: Any) -> AgentSessionUpdate:
    return wire("compaction_update", compactionId=cid, status=status, **fields)


def chunk(value: str, cid: str = "c1") -> AgentSessionUpdate:
    return wire("compaction_summary_chunk", compactionId=cid, content=text(value))


def test_the_client_advertises_compaction() -> None:
    assert client_capabilities()["session"]["compaction"] == {}


def test_a_compaction_is_one_marker_upserted_by_id_with_its_summary_appended() -> None:
    live = [
        say("before"),
        compaction("in_progress"),
        chunk("Kept: the user wants "),
        chunk("a **plot** of df."),
        compaction("completed"),
        say("after", message_id="m2"),
    ]
    state = fold_all(live)
    kinds = [type(e).__name__ for e in state.entries]
    assert kinds == ["MessageEntry", "CompactionEntry", "MessageEntry"]
    entry = state.entries[1]
    assert entry == CompactionEntry("c1", "completed", "Kept: the user wants a **plot** of df.")
    html = transcript_html(state)
    assert 'class="silo-compaction" data-status="completed"' in html and "context compacted" in html
    assert "<details" in html and "<strong>plot</strong>" in html  # folded, opened on click; Markdown
    assert "⟲ **context compacted**" in transcript_markdown(state)
    plain = transcript_text(state)
    assert "compaction> context compacted" in plain and "  Kept: the user wants a **plot** of df." in plain
    restored = parse_lines([encode_line(update) for update in live])
    assert transcript_html(fold_all(restored)) == html


def test_a_summary_given_whole_replaces_and_a_failure_says_why() -> None:
    state = fold_all([chunk("partial"), compaction("completed", summary=[text("whole"), {"type": "image"}])])
    (entry,) = state.entries
    assert isinstance(entry, CompactionEntry) and entry.summary == "whole[image]"
    failed = fold_all(
        [compaction("in_progress", "c2"), compaction("failed", "c2", error="context too small")]
    )
    (entry,) = failed.entries
    assert isinstance(entry, CompactionEntry) and (entry.status, entry.error) == (
        "failed",
        "context too small",
    )
    assert "context compaction failed — context too small" in transcript_html(failed)
    odd = fold_all([compaction("paused", "c3")])
    assert "context compaction: paused" in transcript_text(odd)


def test_an_id_reused_after_it_ended_opens_a_new_marker() -> None:
    state = fold_all(
        [compaction("in_progress"), compaction("completed"), compaction("in_progress"), chunk("second")]
    )
    first, second = state.entries
    assert isinstance(first, CompactionEntry) and isinstance(second, CompactionEntry)
    assert (first.status, first.summary) == ("completed", "")
    assert (second.status, second.summary) == ("in_progress", "second")


def test_compaction_bad_input_is_bounded() -> None:
    assert (
        fold_all([wire("compaction_update", status="completed"), wire("compaction_summary_chunk")]).entries
        == ()
    )
    huge = fold_all([chunk("x" * (SUMMARY_CHAR_LIMIT + 10)), chunk("y" * 5)])
    (entry,) = huge.entries
    assert isinstance(entry, CompactionEntry) and len(entry.summary) == SUMMARY_CHAR_LIMIT
    assert entry.dropped == 15 and "15 more characters not kept" in transcript_text(huge)


def test_an_unknown_kind_is_a_line_with_its_text_and_a_run_of_it_one_line() -> None:
    live = [
        prompt("run it"),
        wire("shell_output", toolCallId="t1", output="line 1", stream="stdout"),
        wire("shell_output", toolCallId="t1", output="line 2"),
        wire("vendor_card", content=text("a card"), size=3),
    ]
    state = fold_all(live)
    shell, card = state.entries[1:]
    assert shell == UnknownEntry("shell_output", "t1\nline 1\nstdout\nt1\nline 2", 2)
    assert card == UnknownEntry("vendor_card", "a card", 1)
    html = transcript_html(state)
    assert "? unknown update shell_output ×2" in html and "line 2" in html
    assert "_? unknown update vendor\\_card_" in transcript_markdown(state)
    restored = parse_lines([encode_line(update) for update in live])
    assert transcript_html(fold_all(restored)) == html


def test_unknown_text_is_bounded_and_many_kinds_are_counted_not_shown() -> None:
    flood = fold_all([wire("shell_output", output="z" * 3_000) for _ in range(100)])
    (entry,) = flood.entries
    assert isinstance(entry, UnknownEntry) and entry.count == 100 and len(entry.text) == UNKNOWN_TEXT_LIMIT
    kinds = fold_all([wire(f"vendor_{i}", text="hi") for i in range(1_000)])
    assert len(kinds.entries) == 32 and kinds.other_count == 1_000
    assert "968 updates of more unknown kinds not shown" in transcript_html(kinds)


def test_turn_rows_count_notices_and_compactions() -> None:
    lines = [
        prompt("go"),
        wire("notice", severity="warning", title="Rate limit near"),
        compaction("in_progress"),
        compaction("completed"),
        compaction("completed", "c2"),
        say("done"),
        prompt("again", 2),
        say("ok", message_id="m2"),
    ]
    first, second = turn_rows(lines)
    assert (first["notices"], first["compactions"]) == (1, 2)
    assert (second["notices"], second["compactions"]) == (0, 0)
