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
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from silo_nb.sessions.journal import journal_line_to_update
from silo_nb.sessions.journal.locks import lock_owner
from silo_nb.sessions.kinds import TURN_END_KIND, USER_PROMPT_KIND
from silo_nb.sessions.parse import session_title
from silo_nb.sessions.storage import decode_session_id, journal_dir

__all__ = ["DORMANT_LIMIT", "DormantSession", "JournalSummaries", "find_dormant", "records_dir"]

log = logging.getLogger("silo_nb.dormant")

DORMANT_LIMIT = 20
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

    @property
    def stale(self) -> bool:
        """The agent can neither resume nor load it: Resume gives a journal-only session."""
        return self.can_resume is False


@dataclass(frozen=True)
class _JournalSummary:
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


def _scan(path: Path) -> _JournalSummary:
    try:
        data = path.read_bytes()
    except OSError:
        return _JournalSummary()
    title = agent = profile = last_time = None
    turns = 0
    for line in data.decode("utf-8", "replace").split("\n"):
        if not any(marker in line for marker in _MARKERS):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a torn line
        update = journal_line_to_update(value)
        if update is None:
            continue
        raw = update.raw
        if update.kind == "session_info_update":
            title = session_title(update) or title
        elif update.kind == TURN_END_KIND:
            agent = raw.get("agent") if isinstance(raw.get("agent"), str) else agent
            profile = raw.get("profile") if isinstance(raw.get("profile"), str) else profile
            last_time = raw.get("endedAt") if isinstance(raw.get("endedAt"), str) else last_time
        elif update.kind == USER_PROMPT_KIND and raw.get("synthesized") is True:
            turns += 1
            last_time = update.timestamp or last_time
    return _JournalSummary(title, agent, profile, last_time, turns)


class JournalSummaries:
    """What the agents list needs of each journal, kept by (mtime, size): a later scan of the same
    workspace re-reads only the journals that changed (an ``AgentsService`` keeps one)."""

    def __init__(self) -> None:
        self._kept: dict[Path, tuple[tuple[int, int], _JournalSummary]] = {}

    def of(self, path: Path) -> _JournalSummary:
        try:
            info = path.stat()
        except OSError:
            return _JournalSummary()
        key = (info.st_mtime_ns, info.st_size)
        kept = self._kept.get(path)
        if kept is not None and kept[0] == key:
            return kept[1]
        summary = _scan(path)
        if summary.last_time is None:
            summary = _JournalSummary(
                summary.title, summary.agent, summary.profile, _iso_of(info.st_mtime), summary.turns
            )
        self._kept[path] = (key, summary)
        return summary


def _records(folder: Path) -> dict[str, dict[str, Any]]:
    """session id → the most recently updated record naming it (with its NAME under ``name``)."""
    found: dict[str, dict[str, Any]] = {}
    try:
        files = sorted(folder.glob("*.json"))
    except OSError:
        return found
    for file in files:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
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
    summaries = summaries or JournalSummaries()
    live = set(live_ids)
    labels = profile_labels or {}
    records = _records(records_dir(data_dir, workspace_id))
    journals: dict[str, Path] = {}
    try:
        for path in journal_dir(data_dir, workspace_id).glob("*.jsonl"):
            session_id = decode_session_id(path.stem)
            if session_id is not None:
                journals[session_id] = path
    except OSError as exc:
        log.warning("could not list the journals of %s: %s", workspace_id, exc)
    found: list[DormantSession] = []
    for session_id in set(journals) | set(records):
        if session_id in live:
            continue
        record = records.get(session_id, {})
        summary = summaries.of(journals[session_id]) if session_id in journals else _JournalSummary()
        if not record and summary.turns == 0:
            continue  # a journal nobody prompted and no notebook named: nothing to go back to
        profile = record.get("profile") if isinstance(record.get("profile"), str) else summary.profile
        agent = record.get("agent") if isinstance(record.get("agent"), str) else summary.agent
        can_resume = record.get("can_resume")
        idle = summary.last_time or (
            record.get("updated") if isinstance(record.get("updated"), str) else None
        )
        found.append(
            DormantSession(
                session_id=session_id,
                title=summary.title or (labels.get(profile) if profile else None) or session_id,
                agent_name=agent,
                profile_id=profile,
                name=record.get("name"),
                idle_since=idle,
                can_resume=can_resume if isinstance(can_resume, bool) else None,
                turns=summary.turns,
                open_in=lock_owner(journals[session_id]) if session_id in journals else None,
            )
        )
    found.sort(key=lambda d: d.idle_since or "", reverse=True)
    return found[: max(limit, 0)]
