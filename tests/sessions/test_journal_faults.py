"""Issue 8, build item 2: the journal never raises into the kernel and never loses a line it accepted.

- Text UTF-8 cannot encode (a lone surrogate, valid JSON on the wire) is escaped, through a real session.
- Short writes and ``ENOSPC`` are simulated by a fake ``os`` whose ``write`` follows a script; a real
  ``RLIMIT_FSIZE`` runs in a subprocess so this process keeps its limits.
- After recovery the file parses line by line with every accepted line present once, in order; a torn
  fragment is a line of its own (skipped), never merged into the next one.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from silo_nb.model.models import AgentSessionUpdate
from silo_nb.sessions.journal import (
    MAX_LINE_BYTES,
    JournalFiles,
    JournalWriter,
    encode_line,
    parse_lines,
    read_lines,
)
from silo_nb.sessions.journal import disk as _journal_io
from silo_nb.sessions.journal import writer as journal_module
from silo_nb.updates.parse import cut_long_strings, parse_update
from tests.agents.scripted import Peer, scripted_service
from tests.conftest import ROOT, Workspace

LONE = "before \ud800 after"


def chunk(text: str) -> AgentSessionUpdate:
    update = parse_update(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}, "messageId": "m"}
    )
    assert update is not None
    return update


def texts(path: Path) -> list[str | None]:
    return [u.text for u in parse_lines(read_lines(path))]


def patch_os(monkeypatch: pytest.MonkeyPatch, fake: Any) -> None:
    """The journal's file calls (open, fsync) and its writes (``journal/disk.py``) go through ``fake``."""
    monkeypatch.setattr(journal_module, "os", fake)
    monkeypatch.setattr(_journal_io, "os", fake)


class ScriptedOs:
    """``os`` whose ``write`` follows a script: an int writes that many bytes (a short write), "enospc"
    raises, "zero" returns 0 without writing; when the script is empty, the real ``os.write``."""

    def __init__(self, *steps: int | str) -> None:
        self.steps = list(steps)
        self.calls = 0

    def write(self, fd: int, data: bytes) -> int:
        self.calls += 1
        if not self.steps:
            return os.write(fd, data)
        step = self.steps.pop(0)
        if step == "enospc":
            raise OSError(errno.ENOSPC, "No space left on device")
        if step == "zero":
            return 0
        assert isinstance(step, int)
        return os.write(fd, bytes(data)[:step])

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


# -- text UTF-8 cannot encode ------------------------------------------------------------------------


async def surrogate_turn(peer: Peer, _text: str) -> None:
    # json.dumps (the scripted peer) sends "\ud800" escaped: valid JSON that decodes to a lone surrogate.
    await peer.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": LONE}})


async def test_a_lone_surrogate_through_a_real_session_is_journaled(workspace: Workspace) -> None:
    svc = scripted_service(workspace, surrogate_turn)
    with anyio.fail_after(20):
        handle = await svc.sessions.connect("scripted")
        await handle.prompt([{"type": "text", "text": "go"}])
        journal = await svc.sessions.read_journal(handle.session_id)
        await handle.aclose()
    assert [u.text for u in journal if u.kind == "agent_message_chunk"] == [LONE]
    path = svc.sessions.journals.path(handle.workspace_id, handle.session_id)
    raw = path.read_bytes()
    raw.decode("utf-8")  # strict: the file is valid UTF-8
    assert b"\\ud800" in raw
    assert [t for t in texts(path) if t == LONE] == [LONE], "the line round-trips from disk"


async def test_escaping_touches_only_what_utf8_cannot_encode(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path)
    writer.append(chunk("plain é 😀"))
    writer.append(chunk(LONE))
    writer.append(chunk("\\\ud800"))  # a backslash before the surrogate stays a backslash
    writer.flush()
    lines = path.read_bytes().decode("utf-8").split("\n")
    assert lines[0] == encode_line(chunk("plain é 😀")), "the common path is byte-identical"
    assert texts(path) == ["plain é 😀", LONE, "\\\ud800"]
    assert writer.snapshot_lines()[1] == encode_line(chunk(LONE)), "memory keeps the line as accepted"


# -- short writes and failed writes ------------------------------------------------------------------


async def test_short_write_then_enospc_then_recovery_keeps_every_line_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.jsonl"
    problems: list[str | None] = []
    writer = JournalWriter(path)
    writer.on_problem = problems.append
    writer.append(chunk("one"))
    writer.flush()  # a first flush that works: the torn-tail check must not be a first-flush-only thing
    fake = ScriptedOs(len(encode_line(chunk("two"))) + 1 + 10, "enospc", "enospc")
    patch_os(monkeypatch, fake)
    writer.append(chunk("two"))
    writer.append(chunk("three"))
    writer.flush()  # "two" and 10 bytes of "three" reach the disk, then the disk is full
    torn = path.read_bytes()
    assert not torn.endswith(b"\n"), "the simulated short write left a torn line"
    writer.append(chunk("four"))
    writer.flush()  # still full
    assert problems == [problems[0]] and isinstance(problems[0], str) and "j.jsonl" in problems[0]
    assert writer.problem == problems[0] and writer.pending
    writer.flush()  # space came back
    assert writer.problem is None and not writer.pending
    assert problems[-1] is None and len(problems) == 2
    assert texts(path) == ["one", "two", "three", "four"]
    lines = read_lines(path)
    assert len(lines) == 5, "the torn fragment is a line of its own"
    assert lines[2] == encode_line(chunk("three"))[:10], "the fragment stayed alone, nothing merged into it"
    assert lines[3:] == [encode_line(chunk("three")), encode_line(chunk("four"))]


async def test_everything_but_the_newline_written_gives_no_duplicate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path)
    line = encode_line(chunk("a"))
    patch_os(monkeypatch, ScriptedOs(len(line), "enospc"))
    writer.append(chunk("a"))
    writer.flush()
    writer.append(chunk("b"))
    writer.flush()
    assert read_lines(path) == [line, encode_line(chunk("b"))]


async def test_a_write_that_returns_zero_is_a_failure_not_a_spin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.jsonl"
    fake = ScriptedOs("zero")
    patch_os(monkeypatch, fake)
    writer = JournalWriter(path)
    writer.append(chunk("a"))
    writer.flush()
    assert fake.calls == 1
    writer.flush()
    assert texts(path) == ["a"]


async def test_on_problem_once_per_episode_and_one_warning_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "j.jsonl"
    problems: list[str | None] = []
    writer = JournalWriter(path)
    writer.on_problem = problems.append
    fake = ScriptedOs("enospc", "enospc", "enospc")
    patch_os(monkeypatch, fake)
    with caplog.at_level(logging.INFO, logger="silo_nb.journal"):
        for text in ("a", "b", "c", "d"):  # three failures, then a success: one episode
            writer.append(chunk(text))
            writer.flush()
        fake.steps = ["zero", 5, "enospc"]
        writer.append(chunk("e"))
        writer.flush()  # nothing written: the second episode
        writer.flush()  # 5 bytes, then ENOSPC: the same episode
        writer.flush()  # recovered
    assert [p is None for p in problems] == [False, True, False, True]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert texts(path) == ["a", "b", "c", "d", "e"]


async def test_a_raising_on_problem_hook_is_logged_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(_message: str | None) -> None:
        raise RuntimeError("hook failed")

    writer = JournalWriter(tmp_path / "j.jsonl")
    writer.on_problem = boom
    patch_os(monkeypatch, ScriptedOs("enospc"))
    writer.append(chunk("a"))
    writer.flush()
    writer.flush()
    assert texts(writer.path) == ["a"]


async def test_read_returns_accepted_lines_while_the_disk_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journals = JournalFiles(tmp_path)
    path = tmp_path / "j.jsonl"
    writer = journals.writer(path, [])
    writer.append(chunk("kept"))
    patch_os(monkeypatch, ScriptedOs("enospc"))
    assert [u.text for u in parse_lines(journals.read(path))] == ["kept"]


async def test_a_closed_writer_hands_its_unwritten_lines_to_the_reconnect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journals = JournalFiles(tmp_path)
    path = tmp_path / "j.jsonl"
    first = journals.writer(path, [])
    first.append(chunk("a"))
    first.flush()
    fake = ScriptedOs(30, "enospc", "enospc", "enospc")
    patch_os(monkeypatch, fake)
    first.append(chunk("b"))
    first.flush()  # torn after 30 bytes
    journals.release_writer(first)  # the session closed while the disk is full
    seed = journals.read(path)  # still full: the lines come from memory
    assert [u.text for u in parse_lines(seed)] == ["a", "b"]
    second = journals.writer(path, seed)  # a reconnect
    second.append(chunk("c"))
    second.flush()  # still full
    fake.steps = []  # space came back
    second.flush()
    assert texts(path) == ["a", "b", "c"]
    first.append(chunk("stale"))
    first.flush()  # the closed writer is inert: nothing doubles
    assert texts(path) == ["a", "b", "c"]


# -- the atomic rewrite -------------------------------------------------------------------------------


async def test_failed_rewrite_keeps_the_old_file_and_a_later_flush_retries_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.jsonl"
    old = [encode_line(chunk("old 1")), encode_line(chunk("old 2"))]
    path.write_text("".join(x + "\n" for x in old), encoding="utf-8")
    problems: list[str | None] = []
    writer = JournalWriter(path, old)
    writer.on_problem = problems.append
    fake = ScriptedOs("enospc")  # the temp file's write fails

    patch_os(monkeypatch, fake)
    writer.replace_lines([encode_line(chunk("new 1")), encode_line(chunk(LONE))])
    assert read_lines(path) == old, "the old file is kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.jsonl"], "no temp file left behind"
    writer.append(chunk("new 2"))
    writer.flush()  # the rewrite is retried, then the line after it is in it
    assert texts(path) == ["new 1", LONE, "new 2"]
    assert [p is None for p in problems] == [False, True]
    path.read_bytes().decode("utf-8")


# -- a real file-size limit ----------------------------------------------------------------------------

FSIZE_SCRIPT = textwrap.dedent(
    """
    import json, resource, signal, sys
    from pathlib import Path
    from silo_nb.sessions.journal import JournalWriter, encode_line, parse_lines, read_lines
    from silo_nb.updates.parse import parse_update

    path = Path(sys.argv[1])
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    problems = []
    writer = JournalWriter(path)
    writer.on_problem = problems.append
    resource.setrlimit(resource.RLIMIT_FSIZE, (3000, hard))
    for n in range(40):
        update = parse_update({"sessionUpdate": "agent_message_chunk",
                               "content": {"type": "text", "text": f"line {n} " + "x" * 100}})
        writer.append(update)
        writer.flush()
    at_limit = path.stat().st_size
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    writer.flush()
    print(json.dumps({
        "sigxfsz_ignored": signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN,
        "at_limit": at_limit,
        "problems": problems,
        "texts": [u.text for u in parse_lines(read_lines(path))],
        "line_count": len(read_lines(path)),
    }))
    """
)


def test_a_real_file_size_limit_in_a_subprocess(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", FSIZE_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr  # not killed by SIGXFSZ: Python starts with it ignored
    result = json.loads(done.stdout)
    assert result["sigxfsz_ignored"]
    assert result["at_limit"] == 3000, "the limit cut a write short: a torn line"
    assert result["texts"] == [f"line {n} " + "x" * 100 for n in range(40)]
    assert result["line_count"] == 41, "one torn fragment, skipped by readers"
    assert len(result["problems"]) == 2 and "File too large" in result["problems"][0]
    assert result["problems"][1] is None


async def test_a_full_disk_shows_in_the_session_status_until_it_recovers(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure episode reaches ``AgentInfo.journal_problem`` (what the panel shows), and clears once
    the buffered lines are on disk; the prompt itself never raises."""
    svc = workspace.service()
    seen: list[str | None] = []
    svc.subscribe(lambda state: seen.append(state[0].journal_problem if state else None))
    async with await svc.sessions.connect("demo") as handle:
        patch_os(monkeypatch, ScriptedOs(*["enospc"] * 50))
        await handle.prompt([{"type": "text", "text": "hello"}])
        (info,) = svc.get_state()
        assert info.journal_problem and "No space left" in info.journal_problem
        assert handle.journal_problem == info.journal_problem
        patch_os(monkeypatch, os)
        await handle.prompt([{"type": "text", "text": "hello again"}])
        assert svc.get_state()[0].journal_problem is None
        path = svc.sessions.journals.path(svc.workspace_id, handle.session_id)
        prompts = [u.text for u in parse_lines(read_lines(path)) if u.kind == "user_message_chunk"]
        assert prompts == ["hello", "hello again"]  # nothing accepted was lost
    assert any(seen)


# -- oversized fields (issue 21: the journal keeps them whole up to its line limit; views are bounded) -----

BIG = 20 << 20  # a 20 MiB chunk: three copies in its journal line (Silo's format) still fit 64 MiB
HUGE = 30 << 20  # three copies do not: the line is cut to fit, with a marker


async def huge_chunk_turn(peer: Peer, _text: str) -> None:
    big = "x" * BIG
    await peer.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": big}})
    await peer.update({"sessionUpdate": "tool_call", "toolCallId": "t", "rawInput": {"blob": big, "n": 1}})
    huge = "y" * HUGE
    await peer.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": huge}})
    await peer.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "small"}})


async def test_a_long_string_reaches_the_journal_whole_up_to_the_line_limit(workspace: Workspace) -> None:
    """Before: strings over 1 Mi characters were cut in the journal and for listeners (a 20 MiB chunk
    reached ``on_update`` and the journal as 1 MiB). The journal is the record: whole, up to its line
    limit; only a line that would pass it is cut to fit, with a marker; listeners get what was sent."""
    svc = scripted_service(workspace, huge_chunk_turn)
    seen: list[AgentSessionUpdate] = []
    with anyio.fail_after(60):
        handle = await svc.sessions.connect("scripted")
        handle.on_update(seen.append)
        await handle.prompt([{"type": "text", "text": "go"}])
        journal = await svc.sessions.read_journal(handle.session_id)
        await handle.aclose()
    chunk, call, huge, small = seen
    assert chunk.text == "x" * BIG and chunk.raw["content"]["text"] == chunk.text
    assert call.tool_call is not None and call.tool_call.raw_input == {"blob": "x" * BIG, "n": 1}
    assert huge.text == "y" * HUGE and small.text == "small"
    recorded = journal[1:-1]
    assert [u.to_json() for u in recorded[:2]] == [u.to_json() for u in seen[:2]]
    cut = recorded[2].text or ""
    assert cut.startswith("y" * (HUGE // 4)) and "more characters]" in cut and len(cut) < HUGE
    assert recorded[3].text == "small" and journal[-1].kind == "turn_end"
    path = svc.sessions.journals.path(handle.workspace_id, handle.session_id)
    assert max(len(line) for line in path.read_bytes().split(b"\n")) <= MAX_LINE_BYTES


def test_cut_long_strings_copies_only_what_it_cuts() -> None:
    short = {"a": ["x" * 10, {"b": 1}], "c": None}
    assert cut_long_strings(short, 10) is short
    cut = cut_long_strings({"a": ["x" * 12, {"b": 1}], "c": "y"}, 10)
    assert cut == {"a": ["x" * 10 + "… [cut by Silo: 2 more characters]", {"b": 1}], "c": "y"}


# -- streamed lines are read back from the file, not kept (issue 10) -----------------------------------


async def test_snapshot_reads_streamed_lines_back_in_order_around_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path, seed_lines=['{"kind":"seed","raw":{}}'])
    writer.append(chunk("a"))
    writer.append(chunk("b"))
    writer.flush()
    assert writer._lines._lines == ['{"kind":"seed","raw":{}}'], "streamed lines are not held in memory"
    writer.append(chunk("c"))
    patch_os(monkeypatch, ScriptedOs("enospc"))
    writer.flush()  # fails: "c" stays buffered as text
    patch_os(monkeypatch, os)
    writer.append(chunk("d"))
    writer.append_line('{"kind":"vendor","raw":{}}')
    writer.flush()
    writer.append(chunk("e"))
    writer.flush()
    expected = ['{"kind":"seed","raw":{}}', *(encode_line(chunk(t)) for t in "abcd")]
    expected += ['{"kind":"vendor","raw":{}}', encode_line(chunk("e"))]
    assert len(writer) == len(expected)
    assert writer.snapshot_lines() == expected
    assert read_lines(path) == expected[1:], "the seed was the file's before; the rest is appended once"


async def test_a_file_changed_behind_the_writer_is_read_back_as_it_is(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path)
    writer.append(chunk("a"))
    writer.append(chunk("b"))
    writer.flush()
    path.write_text(encode_line(chunk("a")) + "\n")
    assert writer.snapshot_lines() == [encode_line(chunk("a"))]
    assert any("changed behind its writer" in r.getMessage() for r in caplog.records)
