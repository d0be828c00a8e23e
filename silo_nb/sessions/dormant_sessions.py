"""Sessions of this workspace from earlier kernels (Silo's dormant entries, §4.5), from disk alone.

- Sources: the journals (``<data>/workspaces/<ws>/chat-sessions/*.jsonl``) and the notebooks' connection
  records (``<data>/workspaces/<ws>/notebooks/*.json``: NAME → profile, session id, and since this
  version ``can_resume`` and ``agent``, written at connect). No agent is spawned, nothing goes on the
  network, nothing is written.
- One entry per session that has a record or at least one prompt in its journal, minus the ones live in
  this process (``live_ids``). Fields as Silo's: title (the journal's last ``session_info_update`` title,
  else the profile's label, else the session id), agent name, idle since (the last ``turn_end``'s
  ``endedAt``, else the journal's last timestamp, else the record's time, else the file's mtime), and
  ``can_resume`` as recorded at connect; ``open_in``: the pid of another kernel that has it open now (the
  journal lock's owner), which a Resume here would be refused.
- ``stale`` differs from Silo's on purpose. Silo's flags a restored "working" duration that may be
  untrustworthy; here a dormant entry never shows a duration, and what a reader needs to know before
  pressing Resume is whether the agent can take the session back: stale means it can neither resume nor
  load (recorded ``can_resume`` false), so Resume would give a journal-only session. A record from before
  the capability was recorded says nothing: not stale.
- Journals are scanned, not parsed: only the lines that can carry a title, a turn end or a prompt are
  decoded; summaries are cached per (path, mtime, size), so listing again after a turn is cheap. The
  most recent :data:`DORMANT_LIMIT` entries are returned (idle since, newest first).
- Bounded whatever is on disk (issue 21): a journal is opened like every journal (no link, nothing but a
  regular file: a FIFO never blocks) and only its first and last :data:`SCAN_BYTES` are read (its title,
  its last turn end and its prompts are there; ``turns`` counts the prompts seen); a record over
  :data:`RECORD_LIMIT` bytes is skipped. :func:`scan_dormant` gives the kernel's loop its turn every few
  milliseconds of work, the folders' listing and the records' reading included, so 10,000 journals never
  freeze it (:func:`find_dormant` is the same scan, at once); what it keeps between scans and ranks is
  plain tuples of strings, which the garbage collector does not track.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import anyio.lowlevel

from silo_nb.model import (
    TURN_END_KIND,
)
from silo_nb.sessions.journal import journal_line_to_update, open_journal
from silo_nb.sessions.journal.locks import lock_owner
from silo_nb.sessions.safe_files import read_small_file
from silo_nb.sessions.storage import decode_session_id, journal_dir
from silo_nb.updates import (
    SessionFacts,
)

__all__ = [
    "DORMANT_LIMIT",
    "RECORD_LIMIT",
    "SCAN_BYTES",
    "DormantSession",
    "JournalSummaries",
    "find_dormant",
    "records_dir",
    "scan_dormant",
]

log = logging.getLogger("silo_nb.dormant")

DORMANT_LIMIT = 20
SCAN_BYTES = 256 * 1024  # read from each end of a journal
RECORD_LIMIT = 1 << 20  # a notebook's connection record is a few hundred bytes
_GIVE_WAY_SECONDS = 0.005  # scan_dormant lets the loop run after this much work
_MARKERS = ('"session_info_update"', f'"{TURN_END_KIND}"', '"synthesized"')


@dataclass(frozen=True)
class DormantSession:
    """A session of this workspace with no live connection here (Silo's ``chatResumeState: "dormant"``)."""

    session_id: str
    title: str
    agent_name: str | None = None
    profile_id: str | None = None
    name: str | None = None  # the connection name it had in a notebook (its record)
    idle_since: str | None = None  # ISO
    can_resume: bool | None = None  # None: not recorded
    turns: int = 0
    open_in: int | None = None  # the pid of another process (kernel) that has it open now, from its lock
    # What the agent said of it (``session/status``, asked through a live connection of its profile that
    # offers it: ``notebook/magics/dormant_list.py``): open, saved, unknown (it no longer knows it); None:
    # not asked.
    agent_status: str | None = None

    @property
    def stale(self) -> bool:
        """The agent can neither resume nor load it (or says it no longer knows it): Resume gives a
        journal-only session."""
        return self.can_resume is False or self.agent_status == "unknown"


class _JournalSummary(NamedTuple):
    title: str | None = None
    agent: str | None = None
    profile: str | None = None
    last_time: str | None = None
    turns: int = 0


def records_dir(data_dir: Path, workspace_id: str) -> Path:
    """Where the notebooks' connection records of a workspace live (``notebook/cell_records.py`` writes
    them)."""
    return journal_dir(data_dir, workspace_id).parent / "notebooks"


def _iso_of(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _bounded_text(fd: int, size: int) -> str:
    """The journal's text, or its first and last :data:`SCAN_BYTES` (whole lines only) when longer."""
    if size <= 2 * SCAN_BYTES:
        data = os.pread(fd, size, 0)
    else:
        head = os.pread(fd, SCAN_BYTES, 0)
        tail = os.pread(fd, SCAN_BYTES, size - SCAN_BYTES)
        data = head[: head.rfind(b"\n") + 1] + tail[tail.find(b"\n") + 1 :]
    return data.decode("utf-8", "replace")


def _scan(text: str) -> _JournalSummary:
    facts = SessionFacts()
    for line in text.split("\n"):
        if not any(marker in line for marker in _MARKERS):
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a torn line
        update = journal_line_to_update(value)
        if update is not None:
            facts.apply(update)
    return _JournalSummary(facts.title, facts.agent, facts.profile, facts.last_time, facts.prompts)


class JournalSummaries:
    """What the agents list needs of each journal, kept by (mtime, size): a later scan of the same
    workspace re-reads only the journals that changed (an ``AgentsService`` keeps one)."""

    def __init__(self) -> None:
        # path → (mtime, size, *summary): strings, ints and None in a plain tuple, which the collector
        # stops tracking, so the 10,000 kept after a scan never count towards a full collection.
        self._kept: dict[str, tuple[Any, ...]] = {}

    def of(self, path: Path, root: Path | None = None) -> _JournalSummary:
        fd = open_journal(path, root)  # no link, no FIFO: those are not journals
        if fd is None:
            return _JournalSummary()
        try:
            info = os.fstat(fd)
            kept = self._kept.get(str(path))
            if kept is not None and kept[:2] == (info.st_mtime_ns, info.st_size):
                return _JournalSummary(*kept[2:])
            summary = _scan(_bounded_text(fd, info.st_size))
        except OSError:
            return _JournalSummary()
        finally:
            os.close(fd)
        if summary.last_time is None:
            summary = _JournalSummary(
                summary.title, summary.agent, summary.profile, _iso_of(info.st_mtime), summary.turns
            )
        self._kept[str(path)] = (info.st_mtime_ns, info.st_size, *summary)
        return summary


class _Slices:
    """The scan's work, cut in slices of :data:`_GIVE_WAY_SECONDS`: where ``spent()`` is true the scan
    yields (a caller's give-way point), and ``restart()`` when it resumes."""

    def __init__(self) -> None:
        self._since = time.perf_counter()

    def spent(self) -> bool:
        return time.perf_counter() - self._since > _GIVE_WAY_SECONDS

    def restart(self) -> None:
        self._since = time.perf_counter()


def _names(folder: Path, suffix: str, slices: _Slices) -> Generator[None, None, list[str]]:
    """The names in ``folder`` ending in ``suffix`` (none when it cannot be listed), a slice at a time:
    10,000 journals are listed in a few steps, not one of 50 ms."""
    names: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(suffix):
                    names.append(entry.name)
                if slices.spent():
                    yield
                    slices.restart()
    except OSError as exc:
        if not isinstance(exc, FileNotFoundError):
            log.warning("could not list %s: %s", folder, exc)
    return names


def _records(folder: Path, root: Path, slices: _Slices) -> Generator[None, None, dict[str, dict[str, Any]]]:
    """session id → the most recently updated record naming it (with its NAME under ``name``)."""
    found: dict[str, dict[str, Any]] = {}
    for file_name in sorted((yield from _names(folder, ".json", slices))):
        if slices.spent():
            yield
            slices.restart()
        try:
            data = json.loads(read_small_file(folder / file_name, root=root, limit=RECORD_LIMIT))
        except (OSError, ValueError):
            continue
        connections = data.get("connections") if isinstance(data, dict) else None
        for name, record in (connections or {}).items() if isinstance(connections, dict) else ():
            if not isinstance(record, dict) or not isinstance(record.get("session_id"), str):
                continue
            earlier = found.get(record["session_id"])
            if earlier is None or str(record.get("updated", "")) >= str(earlier.get("updated", "")):
                found[record["session_id"]] = {**record, "name": name}
    return found


def find_dormant(
    data_dir: Path,
    workspace_id: str,
    *,
    live_ids: Iterable[str] = (),
    profile_labels: Mapping[str, str] | None = None,
    limit: int = DORMANT_LIMIT,
    summaries: JournalSummaries | None = None,
) -> list[DormantSession]:
    """This workspace's dormant sessions, most recently idle first (see the module notes); ``summaries``
    keeps what was read of each journal for the next scan."""
    scan = _collect(data_dir, workspace_id, live_ids, profile_labels, limit, summaries)
    while True:
        try:
            next(scan)
        except StopIteration as done:
            result: list[DormantSession] = done.value
            return result


async def scan_dormant(
    data_dir: Path,
    workspace_id: str,
    *,
    live_ids: Iterable[str] = (),
    profile_labels: Mapping[str, str] | None = None,
    limit: int = DORMANT_LIMIT,
    summaries: JournalSummaries | None = None,
) -> list[DormantSession]:
    """:func:`find_dormant` on the running loop, letting it run every few milliseconds of work."""
    scan = _collect(data_dir, workspace_id, live_ids, profile_labels, limit, summaries)
    while True:
        try:
            next(scan)
        except StopIteration as done:
            result: list[DormantSession] = done.value
            return result
        await anyio.lowlevel.checkpoint()


def _collect(  # noqa: PLR0917 - find_dormant's keywords, handed on as they came
    data_dir: Path,
    workspace_id: str,
    live_ids: Iterable[str],
    profile_labels: Mapping[str, str] | None,
    limit: int,
    summaries: JournalSummaries | None,
) -> Generator[None, None, list[DormantSession]]:
    """The scan; it yields whenever it has worked :data:`_GIVE_WAY_SECONDS` (a caller's give-way point)."""
    summaries = summaries or JournalSummaries()
    live = set(live_ids)
    labels = profile_labels or {}
    slices = _Slices()
    records = yield from _records(records_dir(data_dir, workspace_id), data_dir, slices)
    folder = journal_dir(data_dir, workspace_id)
    journals: dict[str, str] = {}  # session id → file name (a Path is made only for what is read)
    for name in (yield from _names(folder, ".jsonl", slices)):
        if slices.spent():
            yield
            slices.restart()
        session_id = decode_session_id(name[: -len(".jsonl")])
        if session_id is not None:
            journals[session_id] = name
    # Ranked first, as (idle since, session id) pairs and summaries (strings: nothing the collector
    # tracks); only the entries returned are built, each with its lock's owner read.
    ranked: list[tuple[str, str]] = []
    kept: dict[str, tuple[Any, ...]] = {}  # session id → its summary as a plain tuple
    for session_id in set(journals) | set(records):
        if slices.spent():
            yield
            slices.restart()
        if session_id in live:
            continue
        record = records.get(session_id, {})
        journal = journals.get(session_id)
        summary = summaries.of(folder / journal, data_dir) if journal is not None else _JournalSummary()
        if not record and summary.turns == 0:
            continue  # a journal nobody prompted and no notebook named: nothing to go back to
        kept[session_id] = tuple(summary)
        ranked.append((_idle_since(record, summary) or "", session_id))
    ranked.sort(reverse=True)
    found: list[DormantSession] = []
    for _idle, session_id in ranked[: max(limit, 0)]:
        if slices.spent():
            yield
            slices.restart()
        journal = journals.get(session_id)
        open_in = lock_owner(folder / journal) if journal is not None else None
        summary = _JournalSummary(*kept[session_id])
        found.append(_entry(session_id, records.get(session_id, {}), summary, labels, open_in))
    return found


def _idle_since(record: dict[str, Any], summary: _JournalSummary) -> str | None:
    updated = record.get("updated")
    return summary.last_time or (updated if isinstance(updated, str) else None)


def _entry(
    session_id: str,
    record: dict[str, Any],
    summary: _JournalSummary,
    labels: Mapping[str, str],
    open_in: int | None,
) -> DormantSession:
    profile = record.get("profile") if isinstance(record.get("profile"), str) else summary.profile
    agent = record.get("agent") if isinstance(record.get("agent"), str) else summary.agent
    can_resume = record.get("can_resume")
    idle = _idle_since(record, summary)
    return DormantSession(
        session_id=session_id,
        title=summary.title or (labels.get(profile) if profile else None) or session_id,
        agent_name=agent,
        profile_id=profile,
        name=record.get("name"),
        idle_since=idle,
        can_resume=can_resume if isinstance(can_resume, bool) else None,
        turns=summary.turns,
        open_in=open_in,
    )
