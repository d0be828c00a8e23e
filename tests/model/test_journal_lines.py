"""silo_nb's own journal lines through their models (issue 29): what a writer sets comes back from the
journal as the same typed line; a line that does not fit is kept as given and read as None, never
raising into the session."""

from __future__ import annotations

import logging

import pytest

from silo_nb.model import (
    FileWriteLine,
    KernelToolLine,
    PermissionDecisionLine,
    PermissionRequestLine,
    QuestionDecisionLine,
    QuestionRequestLine,
    SiloLine,
    TerminalOutputLine,
    TurnEndLine,
)
from silo_nb.sessions.journal import encode_line, parse_lines

OPTIONS = [{"optionId": "once", "name": "Allow once", "kind": "allow_once"}]
LINES: list[SiloLine] = [
    TurnEndLine(outcome="finished", stop_reason="end_turn", duration_ms=12.5, profile="demo", config={}),
    PermissionRequestLine(request_id="silo-permission-1", tool_call_id="c1", title="Edit", options=OPTIONS),
    PermissionDecisionLine(request_id="silo-permission-1", tool_call_id=None, options=OPTIONS, option_id="o"),
    QuestionRequestLine(request_id="q1", mode="form", message="Ok?", fields=[{"name": "a"}], field_count=1),
    QuestionDecisionLine(request_id="q1", mode="form", action="accept", content={"ok": True}, by="user"),
    FileWriteLine(path="/p/notes.md", created=True, new_text="# Notes\n"),
    TerminalOutputLine(terminal_id="t1", output="done\n", exit_status={"exitCode": 0}),
    KernelToolLine(call_id="k1", tool="run_code", arguments={"code": "1+1"}, status="completed", output="2"),
]  # fmt: skip


@pytest.mark.parametrize("line", LINES, ids=lambda line: line.KIND)
def test_a_line_comes_back_from_the_journal_as_written(line: SiloLine) -> None:
    (update,) = parse_lines([encode_line(line.update())])
    assert update.kind == line.KIND and update.raw["synthesized"] is True
    assert type(line).read(update) == line
    assert all(other.read(update) is None for other in LINES if other.KIND != line.KIND)


def test_only_what_the_writer_set_is_journaled_by_its_wire_name() -> None:
    raw = TurnEndLine(outcome="failed", error="boom").raw()
    assert raw == {"synthesized": True, "outcome": "failed", "error": "boom"}
    decision = PermissionDecisionLine(request_id="r", option_id=None).raw()
    assert decision["optionId"] is None  # a cancel says so: set, though None


def test_a_line_that_does_not_fit_is_kept_as_given_and_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="silo_nb.sessions"):
        update = TurnEndLine.written({"outcome": ["not", "a", "string"], "durationMs": 3})
        TurnEndLine.written({"outcome": 7})
    assert update.raw == {"synthesized": True, "outcome": ["not", "a", "string"], "durationMs": 3}
    assert TurnEndLine.read(update) is None  # readers skip it, as an unknown kind
    assert sum("does not fit" in r.message for r in caplog.records) <= 1  # said once per kind
