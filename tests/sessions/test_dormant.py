"""``sessions.dormant``: this workspace's sessions from earlier kernels, from journals and connection
records alone (Silo's dormant entries)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from silo_nb.sessions import dormant_sessions
from silo_nb.sessions.dormant_sessions import DormantSession, JournalSummaries, find_dormant, records_dir
from silo_nb.sessions.storage import journal_path
from tests.conftest import Workspace

WS = "proj-0123456789ab"


def journal(data: Path, session_id: str, *lines: dict[str, Any], torn: str = "") -> Path:
    path = journal_path(data, WS, session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + torn)
    return path


def prompt(text: str, at: str) -> dict[str, Any]:
    return {
        "kind": "user_message_chunk",
        "text": text,
        "content": {"type": "text", "text": text},
        "messageId": "silo-journal-user-1",
        "timestamp": at,
        "raw": {"synthesized": True},
    }


def turn_end(at: str, **raw: Any) -> dict[str, Any]:
    return {"kind": "turn_end", "raw": {"synthesized": True, "endedAt": at, "stopReason": "end_turn", **raw}}


def titled(title: str) -> dict[str, Any]:
    return {"kind": "session_info_update", "raw": {"sessionUpdate": "session_info_update", "title": title}}


def record(data: Path, notebook: str, **connections: dict[str, Any]) -> None:
    folder = records_dir(data, WS)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{notebook}.json").write_text(json.dumps({"notebook": notebook, "connections": connections}))


def test_entries_come_from_journals_and_records(tmp_path: Path) -> None:
    journal(
        tmp_path,
        "s-old",
        prompt("hi", "2026-01-01T10:00:00.000Z"),
        titled("Fix the parser"),
        turn_end("2026-01-01T10:00:05.000Z", agent="Silo demo agent", profile="demo"),
        torn='{"kind": "turn_e',
    )
    journal(tmp_path, "s-new", prompt("hello", "2026-02-01T09:00:00.000Z"))
    journal(
        tmp_path, "s-empty", {"kind": "available_commands_update", "raw": {}}
    )  # never prompted, no record
    journal(tmp_path, "s-live", prompt("busy", "2026-03-01T09:00:00.000Z"))
    record(
        tmp_path,
        "nb1",
        mine={
            "profile": "claude",
            "session_id": "s-new",
            "updated": "2026-02-01T09:00:01.000Z",
            "can_resume": False,
        },
        other={
            "profile": "demo",
            "session_id": "s-gone",
            "updated": "2025-12-01T00:00:00.000Z",
            "can_resume": True,
        },
    )
    found = find_dormant(tmp_path, WS, live_ids={"s-live"}, profile_labels={"claude": "Claude Code"})
    assert [d.session_id for d in found] == ["s-new", "s-old", "s-gone"]  # most recently idle first
    new, old, gone = found
    assert new == DormantSession(
        session_id="s-new",
        title="Claude Code",  # no title in the journal: the profile's label
        profile_id="claude",
        name="mine",
        idle_since="2026-02-01T09:00:00.000Z",
        can_resume=False,
        turns=1,
    )
    assert new.stale and not old.stale and not gone.stale
    assert (old.title, old.agent_name, old.profile_id, old.name) == (
        "Fix the parser",
        "Silo demo agent",
        "demo",
        None,
    )
    assert old.idle_since == "2026-01-01T10:00:05.000Z" and old.can_resume is None  # no record: unknown
    assert (gone.turns, gone.idle_since, gone.title) == (0, "2025-12-01T00:00:00.000Z", "s-gone")
    assert [d.session_id for d in find_dormant(tmp_path, WS, limit=1)] == ["s-live"]


def test_the_newest_record_of_a_session_wins_and_junk_is_skipped(tmp_path: Path) -> None:
    record(tmp_path, "a", first={"profile": "demo", "session_id": "s1", "updated": "2026-01-01T00:00:00Z"})
    record(tmp_path, "b", second={"profile": "demo", "session_id": "s1", "updated": "2026-01-02T00:00:00Z"})
    record(tmp_path, "c", bad={"profile": "demo"}, worse="x")  # type: ignore[arg-type]
    (records_dir(tmp_path, WS) / "d.json").write_text("{not json")
    (found,) = find_dormant(tmp_path, WS)
    assert (found.session_id, found.name) == ("s1", "second")
    assert find_dormant(tmp_path / "nowhere", WS) == []


def test_a_journal_that_changes_is_read_again(tmp_path: Path) -> None:
    path = journal(tmp_path, "s1", prompt("one", "2026-01-01T00:00:00.000Z"))
    summaries = JournalSummaries()  # kept between scans, as a service keeps it
    assert find_dormant(tmp_path, WS, summaries=summaries)[0].turns == 1
    with path.open("a") as stream:
        stream.write(
            json.dumps(prompt("two", "2026-01-01T00:01:00.000Z")) + "\n" + json.dumps(titled("Later")) + "\n"
        )
    (again,) = find_dormant(tmp_path, WS, summaries=summaries)
    assert (again.turns, again.title, again.idle_since) == (2, "Later", "2026-01-01T00:01:00.000Z")


async def test_a_real_session_is_dormant_once_disposed(workspace: Workspace) -> None:
    service = workspace.service()
    handle = await service.sessions.connect("demo")
    await handle.prompt([{"type": "text", "text": "hello"}])
    live_ids = [info.session_id for info in service.get_state() if info.session_id]
    assert find_dormant(service.data_dir, service.workspace_id, live_ids=live_ids) == []
    await handle.aclose()
    (found,) = find_dormant(service.data_dir, service.workspace_id, profile_labels={"demo": "Demo agent"})
    assert (found.session_id, found.profile_id, found.agent_name, found.turns) == (
        handle.session_id,
        "demo",
        "Silo demo agent",
        1,
    )
    assert found.idle_since is not None and found.can_resume is None  # a script keeps no connection record


async def test_the_scan_gives_the_loop_its_turn_while_it_lists_reads_and_ranks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a slice of no time at all, the loop runs between every two journal names decoded, every two
    records read and every two journals summarised: no part of the scan (decoding the listing of 10,000
    names was one 50 ms step) goes in one step over a whole workspace. The result is the same as at
    once."""
    for index in range(300):
        journal(tmp_path, f"s{index:03d}", prompt("hi", f"2026-01-01T00:00:{index % 60:02d}Z"))
        record(tmp_path, f"nb{index}", n=({"session_id": f"s{index:03d}", "profile": "demo"}))
    monkeypatch.setattr(dormant_sessions, "_GIVE_WAY_SECONDS", 0.0)
    work = {"decoded": 0, "summarised": 0, "records": 0}
    decode, summarise, read = (
        dormant_sessions.decode_session_id,
        JournalSummaries.of,
        dormant_sessions.read_small_file,
    )

    def counted_read(path: Path, **limits: Any) -> bytes:
        work["records"] += 1
        return read(path, **limits)

    def counted_decode(stem: str) -> str | None:
        work["decoded"] += 1
        return decode(stem)

    def counted_of(self: JournalSummaries, path: Path, root: Path | None = None) -> Any:
        work["summarised"] += 1
        return summarise(self, path, root)

    monkeypatch.setattr(dormant_sessions, "decode_session_id", counted_decode)
    monkeypatch.setattr(JournalSummaries, "of", counted_of)
    monkeypatch.setattr(dormant_sessions, "read_small_file", counted_read)
    steps: list[tuple[int, int, int]] = [(0, 0, 0)]
    done = anyio.Event()

    async def watch() -> None:
        while not done.is_set():
            steps.append((work["decoded"], work["summarised"], work["records"]))
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(watch)
        found = await dormant_sessions.scan_dormant(tmp_path, WS, limit=1000)
        done.set()
    assert len(found) == 300 and found == find_dormant(tmp_path, WS, limit=1000)
    for before, after in itertools.pairwise(steps):
        assert all(then - now <= 2 for now, then in zip(before, after, strict=True)), (before, after)
    assert steps[-1] == (300, 300, 300)  # every name decoded, journal summarised and record read
