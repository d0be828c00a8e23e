"""The transcript journal: one ``AgentSessionUpdate`` per line, Silo's camelCase JSON.

- Append-only (an improvement over Silo's whole-file rewrite): new lines are buffered and written by
  one ``O_APPEND`` write at most 250 ms after the first unwritten line, and at once on :meth:`flush`
  (every turn end). A crash loses at most that window.
- The writer also keeps every line in memory (``snapshot_lines``), as Silo's does: a ``session/load``
  reconciliation and ``handle.journal`` read from it without touching disk.
- A file whose last line was torn by a crash gets a newline before the next append, so the torn line
  can never swallow the next update; readers skip lines that do not parse.
- Files are 0600 and folders 0700. Write errors are logged, never raised into the kernel.
- :meth:`replace_lines` (load reconciliation) is the one whole-file write: temp file + ``os.replace``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from silo_nb.sessions.models import AgentSessionUpdate
from silo_nb.sessions.parse import journal_line_to_update
from silo_nb.sessions.storage import ensure_private_dir, journal_path

__all__ = ["FLUSH_DELAY_SECONDS", "JournalFiles", "JournalWriter", "encode_line", "parse_lines", "read_lines"]

log = logging.getLogger("silo_nb.journal")

FLUSH_DELAY_SECONDS = 0.25


def encode_line(update: AgentSessionUpdate) -> str:
    return json.dumps(update.to_json(), ensure_ascii=False, separators=(",", ":"))


def read_lines(path: Path) -> list[str]:
    """Every non-blank line of a journal; ``[]`` when it is missing or unreadable. Never raises."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    text = data.decode("utf-8", "replace")
    return [line for line in text.split("\n") if line.strip()]


def parse_lines(lines: Iterable[str]) -> list[AgentSessionUpdate]:
    """Lines to updates, skipping any that do not parse or lack a string ``kind``."""
    updates: list[AgentSessionUpdate] = []
    for line in lines:
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            log.debug("skipped a journal line that is not JSON: %.120s", line)
            continue
        update = journal_line_to_update(value)
        if update is not None:
            updates.append(update)
    return updates


class JournalWriter:
    """Appends one session's updates to its file."""

    def __init__(self, path: Path, seed_lines: Iterable[str] = ()) -> None:
        self.path = path
        self._lines: list[str] = list(seed_lines)
        self._unwritten: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self._abandoned = False
        self._checked_tail = False

    def snapshot_lines(self) -> list[str]:
        return list(self._lines)

    def __len__(self) -> int:
        return len(self._lines)

    def append(self, update: AgentSessionUpdate) -> None:
        self.append_line(encode_line(update))

    def append_line(self, line: str) -> None:
        if self._abandoned:
            return
        self._lines.append(line)
        self._unwritten.append(line)
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._timer = loop.call_later(FLUSH_DELAY_SECONDS, self._timer_fired)

    def _timer_fired(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Write what is buffered now. Safe to call any time; errors are logged."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._abandoned or not self._unwritten:
            return
        payload = "\n".join(self._unwritten) + "\n"
        try:
            ensure_private_dir(self.path.parent)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                if not self._checked_tail:
                    payload = self._torn_tail_prefix() + payload
                os.write(fd, payload.encode("utf-8"))
                self._checked_tail = True
            finally:
                os.close(fd)
        except OSError as exc:
            log.warning("could not write the journal %s: %s", self.path, exc)
            return
        self._unwritten.clear()

    def _torn_tail_prefix(self) -> str:
        try:
            with self.path.open("rb") as handle:
                handle.seek(0, os.SEEK_END)
                if handle.tell() == 0:
                    return ""
                handle.seek(-1, os.SEEK_END)
                return "" if handle.read(1) == b"\n" else "\n"
        except OSError:
            return ""

    def replace_lines(self, lines: Iterable[str]) -> None:
        """Replace the whole file atomically (load reconciliation); the buffer becomes ``lines``."""
        if self._abandoned:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._lines = list(lines)
        self._unwritten.clear()
        self._checked_tail = True
        try:
            ensure_private_dir(self.path.parent)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".journal-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write("".join(line + "\n" for line in self._lines))
                os.chmod(temp, 0o600)
                os.replace(temp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        except OSError as exc:
            log.warning("could not rewrite the journal %s: %s", self.path, exc)

    def abandon(self) -> None:
        """Make the writer inert: later appends and flushes do nothing (before a deletion)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._abandoned = True
        self._unwritten.clear()


class JournalFiles:
    """The journal files of one data dir, and the writers open on them (one per live session).

    Reads go through here so a live session's buffered lines are flushed first; a handle hands its
    writer back (``_release_writer``) when it closes.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._live: dict[Path, JournalWriter] = {}

    def path(self, workspace_id: str, session_id: str) -> Path:
        return journal_path(self.data_dir, workspace_id, session_id)

    def read(self, path: Path) -> list[str]:
        """The file's lines, after flushing a live writer on it."""
        live = self._live.get(path)
        if live is not None:
            live.flush()
        return read_lines(path)

    def writer(self, path: Path, seed: list[str], *, rewrite: bool = False) -> JournalWriter:
        """A writer on ``path`` seeded with ``seed`` (``rewrite``: the file becomes exactly ``seed``)."""
        writer = JournalWriter(path, seed)
        self._live[path] = writer
        if rewrite:
            writer.replace_lines(seed)
        return writer

    def _release_writer(self, writer: JournalWriter) -> None:
        if self._live.get(writer.path) is writer:
            del self._live[writer.path]

    def discard(self, path: Path) -> None:
        live = self._live.pop(path, None)
        if live is not None:
            live.abandon()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
