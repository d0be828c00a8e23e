"""A cell tool's card shows the cell's diff, marked written once applied, in HTML, Markdown and text alike,
live and restored from the journal."""

from __future__ import annotations

from silo_nb.model import KernelToolLine
from silo_nb.notebook.render.html import transcript_html
from silo_nb.notebook.render.markdown import transcript_markdown
from silo_nb.notebook.render.text import transcript_text
from silo_nb.sessions.journal import encode_line, parse_lines
from silo_nb.updates.entries import KernelToolEntry
from silo_nb.updates.transcript import fold_all


def cell_call(status: str, tool: str = "edit_cell") -> KernelToolLine:
    return KernelToolLine(
        call_id="kernel-1",
        tool=tool,
        arguments={"cell_id": "c1", "old": "plot()", "new": "plot(kind='bar')"},
        status=status,
        cell_id="c1",
        old_source="df.plot()",
        new_source="df.plot(kind='bar')",
    )


def test_the_card_shows_the_cell_diff_and_marks_it_written_once_applied() -> None:
    updates = [cell_call("waiting").update(), cell_call("completed").update()]
    state = fold_all(updates)
    entry = next(e for e in state.entries if isinstance(e, KernelToolEntry))
    assert entry.cell_id == "c1" and entry.cell_diff == ("df.plot()", "df.plot(kind='bar')")
    html = transcript_html(state)
    assert "cell c1" in html and "silo-written" in html and "plot(kind=&#x27;bar&#x27;)" in html
    assert "old=" not in html  # the diff shows the change; the arguments are not repeated
    markdown = transcript_markdown(state)
    assert "```diff" in markdown and "+df.plot(kind='bar')" in markdown
    assert "    +++ cell c1\n" in transcript_text(state)


def test_a_skipped_change_shows_what_was_proposed_not_written() -> None:
    state = fold_all([cell_call("refused").update()])
    html = transcript_html(state)
    assert "cell c1" in html and "silo-written" not in html and "skipped" in html


def test_an_insert_is_a_new_cell_and_restores_as_it_was_live() -> None:
    line = KernelToolLine(
        call_id="kernel-2", tool="insert_cell", arguments={"source": "df.plot()"}, status="completed",
        cell_id="c9", old_source="", new_source="df.plot()",
    )  # fmt: skip
    live = fold_all([line.update()])
    restored = fold_all(parse_lines([encode_line(line.update())]))
    assert transcript_html(restored) == transcript_html(live)
    assert "cell c9" in transcript_html(live) and "new file" not in transcript_html(live)
