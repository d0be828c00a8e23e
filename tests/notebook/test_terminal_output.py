"""The ``terminal_output`` kind (silo_nb's journal line for a client terminal's output): shown inside the
tool call that embeds the terminal, live and restored alike, in every format. The worked example of a new
kind: ``model/kinds.py`` (its row), ``updates/entries.py`` (``TerminalView``), ``updates/transcript.py``
(its handler), ``notebook/render/cards/tool_call.py`` (its rendering)."""

from __future__ import annotations

from typing import Any

from silo_nb.model.models import AgentSessionUpdate
from silo_nb.notebook.render import transcript_html, transcript_markdown, transcript_text
from silo_nb.sessions.journal import encode_line, parse_lines
from silo_nb.updates.entries import TERMINAL_OUTPUT_LIMIT, ToolEntry
from silo_nb.updates.parse import parse_update
from silo_nb.updates.transcript import TranscriptBuilder, fold_all


def tool(**fields: Any) -> AgentSessionUpdate:
    update = parse_update({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "make test", **fields})
    assert update is not None
    return update


def with_terminal(terminal_id: str = "t1") -> AgentSessionUpdate:
    return tool(kind="execute", content=[{"type": "terminal", "terminalId": terminal_id}])


def output(text: str = "", terminal_id: str = "t1", **extra: Any) -> AgentSessionUpdate:
    raw = {"synthesized": True, "terminalId": terminal_id, "output": text, **extra}
    return AgentSessionUpdate(kind="terminal_output", raw=raw)


def the_tool(updates: list[AgentSessionUpdate]) -> ToolEntry:
    (entry,) = fold_all(updates).entries
    assert isinstance(entry, ToolEntry)
    return entry


def test_output_streams_into_the_tool_call_that_embeds_the_terminal() -> None:
    entry = the_tool([with_terminal(), output("collecting…\n"), output("3 passed\n")])
    (view,) = entry.terminals
    assert (view.output, view.exited) == ("collecting…\n3 passed\n", False)
    exited = the_tool([with_terminal(), output("ok\n"), output(exitStatus={"exitCode": 0, "signal": None})])
    assert (exited.terminals[0].exited, exited.terminals[0].exit_code) == (True, 0)


def test_output_that_came_before_the_tool_call_shows_once_it_arrives() -> None:
    entry = the_tool([output("early\n"), with_terminal()])
    assert entry.terminals[0].output == "early\n"


def test_a_terminal_output_makes_no_entry_of_its_own_and_is_never_counted_as_unknown() -> None:
    state = fold_all([output("orphan"), output("other", terminal_id="t9")])
    assert state.entries == () and state.other == ()


def test_live_restored_and_journaled_alike() -> None:
    updates = [
        with_terminal(),
        output("a\n"),
        output("b\n", truncated=True),
        output(exitStatus={"signal": "SIGTERM"}),
    ]
    live = TranscriptBuilder()
    for update in updates:
        live.apply(update)
    restored = fold_all(parse_lines([encode_line(u) for u in updates]))
    assert live.state == restored == fold_all(updates)
    view = restored.entries[0].terminals[0]  # type: ignore[union-attr]
    assert view.truncated and view.signal == "SIGTERM"


def test_every_format_shows_the_output_and_how_the_terminal_ended() -> None:
    state = fold_all([with_terminal(), output("<b>3 passed</b>\n"), output(exitStatus={"exitCode": 1})])
    html, markdown, text = transcript_html(state), transcript_markdown(state), transcript_text(state)
    assert "&lt;b&gt;3 passed&lt;/b&gt;" in html and "<b>3 passed" not in html  # the output is escaped
    assert "exit 1" in html and "exit 1" in markdown and "exit 1" in text
    assert "3 passed" in markdown and "3 passed" in text
    running = transcript_text(fold_all([with_terminal(), output("x")]))
    assert "running…" in running


def test_output_is_bounded_keeping_its_end() -> None:
    chunk = "y" * (TERMINAL_OUTPUT_LIMIT // 2)
    entry = the_tool([with_terminal(), output("first line\n"), *(output(chunk) for _ in range(3))])
    view = entry.terminals[0]
    assert len(view.output) == TERMINAL_OUTPUT_LIMIT and view.truncated
    assert "first line" not in view.output


def test_journals_of_either_shape_restore_the_same_end() -> None:
    """Issue 28: a terminal past its first megabyte used to journal its whole tail as a ``replace`` line
    per flush; now each line carries what is new (a ``replace`` tail only for a flood). Both restore."""
    tail = "x" * (TERMINAL_OUTPUT_LIMIT - 3)
    old = [with_terminal(), output(tail + "abc", replace=True, truncated=True)]
    old.append(output((tail + "abcdef")[-TERMINAL_OUTPUT_LIMIT:], replace=True, truncated=True))
    new = [with_terminal(), output(tail + "abc", replace=True, truncated=True), output("def")]
    for shape in (old, new):
        restored = fold_all(parse_lines([encode_line(u) for u in shape]))
        view = restored.entries[0].terminals[0]  # type: ignore[union-attr]
        assert view.output == (tail + "abcdef")[-TERMINAL_OUTPUT_LIMIT:] and view.truncated
