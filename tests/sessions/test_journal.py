"""The transcript journal (silo-agents-api.md §3, python-api.md "Workspaces and journals") and file names."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from silo_nb.model.models import AgentSessionUpdate
from silo_nb.sessions.journal import (
    FLUSH_DELAY_SECONDS,
    JournalWriter,
    encode_line,
    parse_lines,
    read_lines,
)
from silo_nb.sessions.journal import disk as _journal_io
from silo_nb.sessions.journal import writer as journal_module
from silo_nb.sessions.storage import (
    decode_session_id,
    encode_session_id,
    journal_dir,
    journal_path,
    workspace_id_for,
)
from silo_nb.updates.parse import parse_update

POLL_LIMIT = 1.0
POLL_STEP = 0.01


def chunk(text: str, message_id: str = "m1") -> AgentSessionUpdate:
    update = parse_update(
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text},
            "messageId": message_id,
        }
    )
    assert update is not None
    return update


async def wait_for_lines(path: Path, count: int) -> float:
    """Poll (bounded) until ``path`` has ``count`` lines; returns how long it took."""
    started = time.monotonic()
    with anyio.fail_after(POLL_LIMIT):
        while len(read_lines(path)) < count:
            await anyio.sleep(POLL_STEP)
    return time.monotonic() - started


# -- write policy ------------------------------------------------------------------------------------


async def test_append_is_written_after_the_debounce_window(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path)
    writer.append(chunk("one"))
    writer.append(chunk("two"))
    assert not path.exists(), "appends are buffered, not written at once"
    assert writer.snapshot_lines() == [encode_line(chunk("one")), encode_line(chunk("two"))]
    assert len(writer) == 2
    elapsed = await wait_for_lines(path, 2)
    assert elapsed >= FLUSH_DELAY_SECONDS * 0.8
    assert read_lines(path) == [encode_line(chunk("one")), encode_line(chunk("two"))]
    assert path.read_bytes().endswith(b"\n")


async def test_the_line_count_follows_every_way_a_line_is_kept(tmp_path: Path) -> None:
    """Lines streamed into the buffer are counted as they come (not by counting newlines at a flush)."""
    writer = JournalWriter(tmp_path / "j.jsonl", seed_lines=[encode_line(chunk("seed"))])
    for index in range(3):
        writer.append(chunk(f"a\nb {index}"))  # newlines in the text are escaped: still one line each
    assert len(writer) == 4
    writer.flush()  # the streamed lines become a span of the file
    assert len(writer) == 4
    writer.append(chunk("after"))
    writer.append(chunk("\ud800"))  # refused by orjson: kept as a text line, in order
    writer.append(chunk("last"))
    assert len(writer) == 7
    writer.flush()
    assert len(writer) == 7 == len(writer.snapshot_lines()) == len(read_lines(tmp_path / "j.jsonl")) + 1
    writer.abandon()
    writer.append(chunk("ignored"))
    assert len(writer) == 7


async def test_flush_writes_at_once(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path)
    writer.append(chunk("now"))
    writer.flush()
    assert read_lines(path) == [encode_line(chunk("now"))]
    writer.flush()  # nothing buffered: a no-op
    assert read_lines(path) == [encode_line(chunk("now"))]
    # The timer was cancelled: nothing is written twice later on.
    await anyio.sleep(FLUSH_DELAY_SECONDS + 0.05)
    assert read_lines(path) == [encode_line(chunk("now"))]


def test_append_without_a_running_loop_writes_at_once(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    JournalWriter(path).append(chunk("sync"))
    assert read_lines(path) == [encode_line(chunk("sync"))]


async def test_appends_append_and_never_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path)
    writer.append(chunk("a"))
    writer.flush()
    before = path.read_bytes()
    inode = path.stat().st_ino
    writer.append(chunk("b"))
    writer.append_line('{"kind":"vendor","raw":{}}')
    writer.flush()
    after = path.read_bytes()
    assert after.startswith(before)
    assert len(after) > len(before)
    assert path.stat().st_ino == inode
    assert (
        after[len(before) :]
        == (encode_line(chunk("b")) + "\n" + '{"kind":"vendor","raw":{}}' + "\n").encode()
    )
    assert [u.text for u in parse_lines(read_lines(path))] == ["a", "b", None]


async def test_a_second_writer_appends_to_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    first = JournalWriter(path)
    first.append(chunk("a"))
    first.flush()
    before = path.read_bytes()
    second = JournalWriter(path, seed_lines=read_lines(path))
    assert second.snapshot_lines() == read_lines(path)
    second.append(chunk("b"))
    second.flush()
    assert path.read_bytes() == before + (encode_line(chunk("b")) + "\n").encode()


async def test_torn_last_line_gets_a_newline_before_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    good = encode_line(chunk("good"))
    torn = encode_line(chunk("torn"))[:25]
    path.write_text(good + "\n" + torn, encoding="utf-8")
    writer = JournalWriter(path, seed_lines=read_lines(path))
    writer.append(chunk("new"))
    writer.flush()
    writer.append(chunk("newer"))
    writer.flush()
    expected = (
        good + "\n" + torn + "\n" + encode_line(chunk("new")) + "\n" + encode_line(chunk("newer")) + "\n"
    )
    assert path.read_text(encoding="utf-8") == expected
    assert read_lines(path) == [good, torn, encode_line(chunk("new")), encode_line(chunk("newer"))]
    assert [u.text for u in parse_lines(read_lines(path))] == ["good", "new", "newer"]


async def test_file_ending_with_newline_gets_no_blank_line(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    good = encode_line(chunk("good"))
    path.write_text(good + "\n", encoding="utf-8")
    writer = JournalWriter(path)
    writer.append(chunk("new"))
    writer.flush()
    assert path.read_text(encoding="utf-8") == good + "\n" + encode_line(chunk("new")) + "\n"


class _OsWithFailingWrite:
    """``os`` for the journal module, except that the first ``write`` fails like a full disk."""

    def __init__(self) -> None:
        self.failures = 1

    def write(self, fd: int, data: bytes) -> int:
        if self.failures:
            self.failures -= 1
            raise OSError(28, "No space left on device")
        return os.write(fd, data)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


async def test_torn_tail_newline_survives_a_failed_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.jsonl"
    good = encode_line(chunk("good"))
    path.write_text(good + "\n" + '{"kind":"agent_mes', encoding="utf-8")
    monkeypatch.setattr(journal_module, "os", _OsWithFailingWrite())
    monkeypatch.setattr(_journal_io, "os", _OsWithFailingWrite())  # where the writes are made
    writer = JournalWriter(path)
    writer.append(chunk("new"))
    writer.flush()  # fails (logged), the line stays buffered
    writer.flush()  # retry succeeds
    assert [u.text for u in parse_lines(read_lines(path))] == ["good", "new"]


# -- read policy -------------------------------------------------------------------------------------


def test_parse_lines_skips_corrupt_and_kindless_lines() -> None:
    good = encode_line(chunk("ok"))
    lines = [
        "not json",
        "{}",
        '{"kind": 5}',
        '{"text": "no kind"}',
        "[1, 2]",
        '"a string"',
        good,
        '{"kind": "agent_message_chu',
        '{"kind": "vendor_kind", "raw": {"x": 1}}',
    ]
    updates = parse_lines(lines)
    assert [u.kind for u in updates] == ["agent_message_chunk", "vendor_kind"]
    assert updates[0] == chunk("ok")
    assert updates[1].raw == {"x": 1}


def test_read_lines_of_missing_or_unreadable_file(tmp_path: Path) -> None:
    assert read_lines(tmp_path / "missing.jsonl") == []
    assert read_lines(tmp_path / "no" / "such" / "dir.jsonl") == []
    assert read_lines(tmp_path) == []  # a directory


def test_read_lines_drops_blank_lines_and_survives_bad_bytes(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    good = encode_line(chunk("é"))
    path.write_bytes(b"\n\n" + good.encode() + b"\n   \n\xff\xfe garbage\n")
    lines = read_lines(path)
    assert lines[0] == good
    assert len(lines) == 2
    assert parse_lines(lines) == [chunk("é")]


# -- replace_lines / abandon -------------------------------------------------------------------------


async def test_replace_lines_replaces_content_atomically(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path)
    for text in ("a", "b", "c"):
        writer.append(chunk(text))
    writer.flush()
    inode = path.stat().st_ino
    writer.append(chunk("pending"))  # buffered, superseded by the replacement
    replacement = [encode_line(chunk("x")), encode_line(chunk("y"))]
    writer.replace_lines(replacement)
    assert read_lines(path) == replacement
    assert path.read_text(encoding="utf-8") == "".join(line + "\n" for line in replacement)
    assert path.stat().st_ino != inode, "a new file renamed into place, not an in-place rewrite"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert writer.snapshot_lines() == replacement
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.jsonl"], "no temp file left behind"
    await anyio.sleep(FLUSH_DELAY_SECONDS + 0.05)
    assert read_lines(path) == replacement, "the superseded buffered line is never written"
    writer.append(chunk("z"))
    writer.flush()
    assert read_lines(path) == [*replacement, encode_line(chunk("z"))]


def test_replace_lines_failure_leaves_the_old_file_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text("old 1\nold 2\n", encoding="utf-8")

    class _OsWithFailingReplace:
        def replace(self, src: str, dst: str, **_dir_fds: int) -> None:
            raise OSError(5, "I/O error")

        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

    monkeypatch.setattr(journal_module, "os", _OsWithFailingReplace())
    JournalWriter(path).replace_lines(["new"])  # logged, not raised
    assert path.read_text(encoding="utf-8") == "old 1\nold 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.jsonl"]


def test_replace_lines_with_nothing_writes_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text("old\n", encoding="utf-8")
    JournalWriter(path).replace_lines([])
    assert path.read_bytes() == b""


async def test_abandon_makes_later_writes_no_ops(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path)
    writer.append(chunk("buffered"))
    writer.abandon()
    writer.flush()
    writer.append(chunk("after"))
    writer.flush()
    writer.replace_lines(["x"])
    writer.flush()
    assert not path.exists()
    await anyio.sleep(FLUSH_DELAY_SECONDS + 0.05)
    assert not path.exists(), "no timer fires after abandon"


async def test_abandon_then_delete_is_not_recreated(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    writer = JournalWriter(path)
    writer.append(chunk("a"))
    writer.flush()
    writer.append(chunk("b"))
    writer.abandon()
    path.unlink()
    writer.flush()  # what a disposing handle does last
    assert not path.exists()


# -- permissions -------------------------------------------------------------------------------------


async def test_file_is_0600_and_created_folders_are_0700(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    path = tmp_path / "a" / "b" / "c" / "j.jsonl"
    writer = JournalWriter(path)
    writer.append(chunk("x"))
    writer.flush()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for folder in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755, "existing folders are left alone"


async def test_replace_lines_creates_private_folders(tmp_path: Path) -> None:
    path = tmp_path / "new" / "j.jsonl"
    JournalWriter(path).replace_lines(["x"])
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# -- session ids as file names -----------------------------------------------------------------------

SESSION_IDS = [
    "sess-123",
    "0b5e7a4e-1c2d-4f00-9a0b-7c1d2e3f4a5b",
    "a/b",
    "../../etc/passwd",
    "..",
    ".",
    "",
    "with space",
    " leading-space",
    "ünïcødé-🙂",
    ".hidden",
    "~tilde",
    "~",
    "x.jsonl",
    "x.JSONL",
    "back\\slash",
    "nul\x00byte",
    "-dash",
    "a" * 151,
    "é" * 75,
    "lone \ud800 surrogate",  # issue 21: raised a raw UnicodeEncodeError
    "\udfff",
]
LONG_ID = "L" * 1000
# Ids whose encoding would exceed the file-name budget are hashed (one-way): decode may give None.
LONG_IDS = ["a" * 152, "é" * 76, "/" * 400, LONG_ID]


@pytest.mark.parametrize("session_id", SESSION_IDS, ids=repr)
def test_session_id_round_trips(session_id: str) -> None:
    encoded = encode_session_id(session_id)
    assert decode_session_id(encoded) == session_id
    assert "/" not in encoded
    assert "\x00" not in encoded
    assert not encoded.startswith(".")
    assert encoded not in ("", ".", "..")
    assert len(encoded + ".jsonl") <= 255


@pytest.mark.parametrize("session_id", LONG_IDS, ids=lambda s: f"{s[0]!r}x{len(s)}")
def test_long_session_id_is_hashed_and_unique(session_id: str) -> None:
    encoded = encode_session_id(session_id)
    assert "/" not in encoded and not encoded.startswith(".")
    assert len((encoded + ".jsonl").encode()) <= 255
    assert decode_session_id(encoded) in (None, session_id)
    assert encode_session_id(session_id) == encoded, "deterministic"
    other = encode_session_id(session_id[:-1] + "M")
    assert other != encoded


def test_plain_ids_are_kept_readable_and_encodings_do_not_collide() -> None:
    assert encode_session_id("sess-123") == "sess-123"
    assert encode_session_id("x.jsonl") != "x.jsonl"
    encodings = [encode_session_id(s) for s in [*SESSION_IDS, *LONG_IDS]]
    assert len(set(encodings)) == len(encodings)


@pytest.mark.parametrize("session_id", ["abc\n", "sess-1\n"], ids=repr)
def test_encoded_names_contain_only_safe_characters(session_id: str) -> None:
    encoded = encode_session_id(session_id)
    assert decode_session_id(encoded) == session_id
    assert all(ch.isascii() and (ch.isalnum() or ch in "._~-") for ch in encoded), repr(encoded)


@pytest.mark.parametrize("session_id", [*SESSION_IDS, *LONG_IDS], ids=lambda s: repr(s)[:40])
def test_journal_path_stays_inside_the_chat_sessions_folder(tmp_path: Path, session_id: str) -> None:
    folder = (tmp_path / "workspaces" / "ws-1" / "chat-sessions").resolve()
    path = journal_path(tmp_path, "ws-1", session_id)
    assert path.parent == tmp_path / "workspaces" / "ws-1" / "chat-sessions"
    assert path.resolve().parent == folder
    assert path.name.endswith(".jsonl")
    assert path.name != ".jsonl"
    assert journal_dir(tmp_path, "ws-1") == path.parent


@pytest.mark.parametrize(
    "workspace_id",
    ["../x", "..", ".", "a/b", "", ".hidden", "/abs", "a\\..\\b", "x" * 300, "sp ace"],
    ids=repr,
)
def test_journal_path_rejects_hostile_workspace_id(tmp_path: Path, workspace_id: str) -> None:
    with pytest.raises(ValueError, match="workspace_id"):
        journal_path(tmp_path, workspace_id, "s")


def test_journal_path_rejects_workspace_id_with_trailing_newline(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        journal_path(tmp_path, "ws\n", "s")


def test_workspace_id_for_is_stable_and_file_safe(tmp_path: Path) -> None:
    folder = tmp_path / "My Project (v2)!"
    folder.mkdir()
    first = workspace_id_for(folder)
    assert first == workspace_id_for(folder)
    assert first == workspace_id_for(Path(str(folder) + "/"))
    assert first.startswith("my-project-v2-")
    assert all(ch.isascii() and (ch.isalnum() or ch == "-") for ch in first)
    assert first == first.lower()
    journal_path(tmp_path, first, "s")  # accepted as a workspace id
    other = tmp_path / "other" / "My Project (v2)!"
    other.mkdir(parents=True)
    assert workspace_id_for(other) != first, "same folder name, different place"
    root_id = workspace_id_for(Path("/"))
    assert root_id.startswith("root-")
    journal_path(tmp_path, root_id, "s")


def test_workspace_id_for_long_and_unicode_names(tmp_path: Path) -> None:
    folder = tmp_path / ("ünï" + "x" * 100)
    folder.mkdir()
    workspace_id = workspace_id_for(folder)
    journal_path(tmp_path, workspace_id, "s")
    assert len(workspace_id) <= 40 + 1 + 12


def test_workspace_id_for_same_folder_spelled_differently(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    (folder / "sub").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert workspace_id_for(folder / "sub" / "..") == workspace_id_for(folder)
    assert workspace_id_for(link) == workspace_id_for(folder)


def test_lines_accepted_just_before_a_clean_exit_reach_the_disk(tmp_path: Path) -> None:
    """A kernel shut down cleanly (nbclient's end, Restart Kernel) within the flush window lost the lines
    it had accepted: the demo agent's late ``available_commands_update`` was gone from the journal, so the
    next run's journal-only session had no commands (a flaky ``test_restore_complete`` found it)."""
    import subprocess
    import sys

    path = tmp_path / "j.jsonl"
    script = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from silo_nb.sessions.journal import JournalWriter\n"
        "from silo_nb.model.models import AgentSessionUpdate\n"
        "async def main():\n"
        "    writer = JournalWriter(Path(sys.argv[1]))\n"
        "    writer.append(AgentSessionUpdate(kind='agent_message_chunk', raw={'sessionUpdate': "
        "'agent_message_chunk', 'content': {'type': 'text', 'text': 'last words'}}))\n"
        "    globals()['kept'] = writer\n"
        "asyncio.run(main())\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=60)
    assert path.exists() and "last words" in path.read_text()
