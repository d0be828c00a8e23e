"""The journal is what it was (issue 10): the same wire lines give journal lines with the same values.

``journal/wire.jsonl`` holds raw agent lines (every update of this folder's recorded conversations plus
lines made for the purpose: id-less chunk runs, diffs, plans, usage, unknown kinds, a lone surrogate,
integers beyond 64 bits, ``NaN``, duplicate keys, lines to skip); ``journal/expected.jsonl`` is the journal
the code before issue 10's rewrite wrote for them (``tests/golden/journal_wire.py`` records both).
"""

from __future__ import annotations

import json
from typing import Any

from silo_nb.model.models import AgentSessionUpdate
from silo_nb.sessions.journal import parse_lines, read_lines
from tests.golden.journal_wire import EXPECTED, WIRE, journal_for, made_lines, read_journal_file


def values(lines: list[str]) -> list[Any]:
    return [json.loads(line) for line in lines]


def test_the_fixture_is_the_recorder_s() -> None:
    """The wire file is what the recorder makes (re-record both files together, never one). The recorded
    conversations it starts with are kept as they were when ``expected.jsonl`` was written by the old
    code (the demo agent's edit turn has changed since: issue 11), so only the made lines are compared."""
    made = made_lines(conversations=False)
    assert read_journal_file(WIRE)[-len(made) :] == made


async def test_the_same_wire_lines_give_the_same_journal_values() -> None:
    wire = read_journal_file(WIRE)
    expected = read_journal_file(EXPECTED)
    # silo_nb's turn_end line (issue 9) came after the fixture was recorded: a documented addition.
    journal = [line for line in await journal_for(wire) if '"kind":"turn_end"' not in line]
    # Another session's update was dropped then; it is kept now as a subagent's, marked with its id (issue
    # 31: a child session's traffic comes under its own id): the documented third addition.
    (child,) = [json.loads(line) for line in journal if '"childSessionId"' in line]
    assert child["childSessionId"] == "other" and child["text"] == "for another session"
    journal = [line for line in journal if '"childSessionId"' not in line]
    assert len(journal) == len(expected) == len(wire) - 4  # another session's, two skipped, one with no kind
    for number, (got, want) in enumerate(zip(values(journal), values(expected), strict=True), 1):
        # The prompt line's raw.cwd (issue 35: paths shown relative to it) is a documented addition too.
        if got.get("kind") == "user_message_chunk" and isinstance(got.get("raw"), dict):
            got["raw"].pop("cwd", None)
        assert got == want, f"journal line {number} differs"
    # The lines that need the slow paths are there, with their values.
    text = "\n".join(journal)
    assert "123456789012345678901234567890" in text and "-9223372036854775809" in text
    assert "\\ud800" in text and "[cut by Silo: nested deeper than 100 levels]" in text


def test_the_readers_read_the_recorded_journal_as_pydantic_validation_did() -> None:
    """Today's reader builds, from the old journal, exactly the models full pydantic validation builds."""
    lines = read_lines(EXPECTED)
    oracle = [AgentSessionUpdate.model_validate(value) for value in values(lines)]
    got = parse_lines(lines)
    assert got == oracle
    assert [u.to_json() for u in got] == values(lines), "and they serialize back to the same lines"
