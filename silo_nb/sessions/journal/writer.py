"""The journal writer: one ``AgentSessionUpdate`` per line, Silo's camelCase JSON, appended.

- Append-only (an improvement over Silo's whole-file rewrite): lines are buffered and written by one
  ``O_APPEND`` write at most 250 ms after the first unwritten one, and at once on :meth:`flush` (every
  turn end). A crash loses at most that window. An update costs one orjson call into one buffer that a
  flush writes as is (issue 10). ``snapshot_lines`` gives every accepted line (for a ``session/load``
  reconciliation and ``handle.journal``); unlike Silo's, streamed lines are read back from the file
  (``disk.LineStore`` says why).
- A file whose last line was torn (a crash, a write that failed midway) gets a newline before the next
  append: checked on a writer's first flush and after every failure; readers skip lines that do not parse.
- Nothing accepted is dropped: writes loop over short writes and count the bytes; on ``OSError`` (full
  disk, ``EFBIG``) the lines not wholly written stay buffered and the next flush retries them; reads of a
  live file return the buffer meanwhile. Reported once per episode (a log warning, ``on_problem(message)``,
  then ``on_problem(None)``), never raised into the kernel.
- Text UTF-8 cannot encode (lone surrogates, valid JSON) is written as its JSON ``\\uXXXX`` escape.
- A line is kept whole up to :data:`MAX_LINE_BYTES` (the readers' limit, the wire's): one that would
  pass it (Silo's format repeats a chunk's text three times) has its longest strings cut until it fits,
  each with ``… [cut by Silo: N more characters]``. Listeners and views got the update as it came.
- Files are 0600 and folders 0700, reached from the writer's ``root`` (the data folder) without following
  a link (``safe_files``): a journal that is a link, a FIFO or in a folder others may write is never
  written through; its lines stay in memory, reported like a full disk. :meth:`replace_lines` (load
  reconciliation) is the one whole-file write: temp file + ``os.replace`` in the folder's descriptor; a
  failed rewrite keeps the old file and is retried by the next flush.
- A writer on an existing journal (``existing_size``) starts with the file as its first lines, unread.
  :attr:`JournalWriter.accepted` counts the lines accepted since: a :meth:`mark` to undo to
  (:meth:`undo_to`, a failed load's replay) without holding the lines before it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import secrets
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson

from silo_nb.model import (
    AgentSessionUpdate,
)
from silo_nb.sessions.journal.disk import LineStore, encode_text, ends_torn, reason, write_all, write_lines
from silo_nb.sessions.journal.lines import encode_line, update_json
from silo_nb.sessions.journal.reader import MAX_LINE_BYTES
from silo_nb.sessions.safe_files import folder_fd, open_file
from silo_nb.updates import (
    cut_long_strings,
)

__all__ = ["FLUSH_DELAY_SECONDS", "JournalWriter"]

log = logging.getLogger("silo_nb.journal")

FLUSH_DELAY_SECONDS = 0.25
# Writers with lines possibly unwritten, flushed when the interpreter exits: a kernel shut down cleanly
# (nbclient's end, Restart Kernel) within the flush window would otherwise lose what it had accepted.
# Process-wide like the agents' process groups (acp/process.py), for the same reason: exit is one moment.
_LIVE_WRITERS: weakref.WeakSet[JournalWriter] = weakref.WeakSet()


def _flush_at_exit() -> None:
    for writer in list(_LIVE_WRITERS):
        with contextlib.suppress(Exception):  # one failing disk never keeps the others' lines unwritten
            writer.flush()


atexit.register(_flush_at_exit)
_dumps, _NEWLINE = orjson.dumps, orjson.OPT_APPEND_NEWLINE
WRITE_CHUNK_CHARS = 1 << 20


def _encode_value(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # a lone surrogate: the stdlib writes its escape
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _fit(value: Any) -> str:
    """``value``'s line with its strings cut (halving the limit) until it fits :data:`MAX_LINE_BYTES`."""
    limit = MAX_LINE_BYTES // 4
    while True:
        line = _encode_value(cut_long_strings(value, limit))
        if len(encode_text(line)) <= MAX_LINE_BYTES or limit < 1024:
            return line
        limit //= 2


class JournalWriter:
    """Appends one session's updates to its file.

    ``on_problem`` (set by the session) is called with a one-line message when writing starts failing
    and with ``None`` once everything buffered is on disk again: once per episode, like the log warning.
    """

    def __init__(
        self,
        path: Path,
        seed_lines: Iterable[str] = (),
        *,
        root: Path | None = None,
        existing_size: int | None = None,
    ) -> None:
        self.path = path
        self.root = root if root is not None else path.parent  # where its folders are checked from
        self.on_problem: Callable[[str | None], None] | None = None
        self.accepted = 0  # lines accepted since it was made (or since the last replace_lines)
        if existing_size is not None:
            self._lines = LineStore.of_file(path, existing_size, root=self.root)
        else:
            self._lines = LineStore(path, seed_lines, root=self.root)
        self._unwritten: list[str] = []
        _LIVE_WRITERS.add(self)
        self._staged = bytearray()  # accepted lines as orjson wrote them, each with its newline
        self._staged_lines = 0  # how many: counted as they come (counting newlines at a flush: 0.2 µs a line)
        self._timer: asyncio.TimerHandle | None = None
        self._abandoned = False
        self._check_tail = True  # the file may end in a torn line: checked first and after failures
        self._rewrite_pending = False  # a failed replace_lines: the next flush rewrites the whole file
        self._problem: str | None = None

    def snapshot_lines(self) -> list[str]:
        self._encode_staged()
        return list(self._lines.lines())

    def __len__(self) -> int:
        return len(self._lines) + self._staged_lines

    @property
    def problem(self) -> str | None:
        return self._problem  # the current write failure (one line), None while the file is up to date

    @property
    def pending(self) -> bool:
        """Whether some accepted line is not on disk yet."""
        return bool(self._staged) or bool(self._unwritten) or self._rewrite_pending

    def append(self, update: AgentSessionUpdate, value: dict[str, Any] | None = None) -> None:
        """Accept ``update``; ``value`` is its journal JSON (``update_json(update)``) when the caller has it.
        Encoded now into one buffer (orjson's output freed at once: kept, it cost more than encoding)."""
        if self._abandoned:
            return
        start = len(self._staged)
        try:
            self._staged += _dumps(update_json(update) if value is None else value, option=_NEWLINE)
        except TypeError:  # what orjson refuses (a lone surrogate…): the line as text, via encode_line
            self.append_line(encode_line(update))
            return
        if len(self._staged) - start > MAX_LINE_BYTES:
            del self._staged[start:]
            self.append_line(_fit(update_json(update) if value is None else value))
            return
        self._staged_lines += 1
        self.accepted += 1
        if len(self._staged) >= WRITE_CHUNK_CHARS and self._problem is None:
            self.flush()  # a cache-sized buffer: written while hot, never grown to megabytes
        elif self._timer is None:
            self._schedule()

    def _encode_staged(self) -> None:
        if self._staged:
            lines = self._staged.decode().split("\n")
            lines.pop()  # after the last newline (JSON escapes the newlines in strings)
            self._staged, self._staged_lines = bytearray(), 0
            self._lines.add_lines(lines)
            self._unwritten += lines

    def append_line(self, line: str) -> None:
        if self._abandoned:
            return
        if len(line) > MAX_LINE_BYTES // 4 and len(encode_text(line)) > MAX_LINE_BYTES:
            try:
                line = _fit(orjson.loads(encode_text(line)))
            except orjson.JSONDecodeError:
                log.warning("%s: a line over the line limit that is not JSON was not journaled", self.path)
                return
        self._encode_staged()  # lines stay in the order they were accepted
        self.accepted += 1
        self._lines.add_lines([line])
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

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def flush(self) -> None:
        """Write what is buffered now. Safe to call any time; never raises. Lines a failed write did not
        complete stay buffered for the next flush; a write that failed midway leaves a torn tail, which
        the next flush ends with a newline first (the fragment becomes a line readers skip)."""
        self._cancel_timer()
        if self._abandoned:
            return
        if self._unwritten or self._rewrite_pending:
            self._encode_staged()  # the general case: everything as lines
        if self._rewrite_pending:
            self._rewrite()
            return
        if not self._unwritten and not self._staged and self._problem is None:
            return
        written = 0
        error: OSError | None = None
        try:
            fd = open_file(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, root=self.root)
            try:
                if self._check_tail and ends_torn(fd):
                    _, error = write_all(fd, b"\n")
                start = os.fstat(fd).st_size  # where the buffer, as orjson wrote it, goes (streaming)
                if error is None:
                    staged, unwritten = self._staged, self._unwritten
                    written, error = (
                        write_all(fd, staged) if staged else write_lines(fd, unwritten, WRITE_CHUNK_CHARS)
                    )
            finally:
                os.close(fd)
        except OSError as exc:
            error = exc
        if error is None and self._staged:  # on disk: read back only if ever asked for
            self._lines.add_written(start, len(self._staged), self._staged_lines)
            self._staged, self._staged_lines = bytearray(), 0
        self._encode_staged()  # after a failure: into the lines kept and the lines still to write
        if error is not None:
            self._drop_written(written)
            self._check_tail = True
            self._failed(f"could not write the journal {self.path}: {reason(error)}")
            return
        self._unwritten.clear()
        self._check_tail = False
        self._recovered()

    def _drop_written(self, count: int) -> None:
        """Forget the buffered lines whose text reached the disk (their newline may not have: the
        torn-tail check adds it). Only runs after a failure, so the common path encodes once."""
        done = 0
        offset = 0
        for line in self._unwritten:
            end = offset + len(encode_text(line))
            if end > count:
                break
            done += 1
            offset = end + 1
        del self._unwritten[:done]

    def replace_lines(self, lines: Iterable[str]) -> None:
        """Replace the whole file atomically (load reconciliation); the buffer becomes ``lines``. If the
        rewrite fails the old file stays as it was and the next flush tries the rewrite again."""
        if self._abandoned:
            return
        self._cancel_timer()
        self._lines = LineStore(self.path, lines, root=self.root)
        self.accepted = 0
        self._staged, self._staged_lines = bytearray(), 0
        self._unwritten.clear()
        self._rewrite_pending = True
        self._rewrite()

    def _rewrite(self) -> None:
        try:
            with folder_fd(self.path.parent, self.root) as folder:
                temp = f".journal-{secrets.token_hex(6)}.tmp"
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                fd = os.open(temp, flags, 0o600, dir_fd=folder)
                try:
                    try:
                        _, error = write_lines(fd, self._lines.lines(), WRITE_CHUNK_CHARS)
                    finally:
                        os.close(fd)
                    if error is not None:
                        raise error
                    os.replace(temp, self.path.name, src_dir_fd=folder, dst_dir_fd=folder)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(temp, dir_fd=folder)
                    raise
        except OSError as exc:
            self._failed(f"could not rewrite the journal {self.path}: {reason(exc)}")
            return
        self._rewrite_pending = False
        self._unwritten.clear()
        self._check_tail = False
        self._recovered()

    def _failed(self, message: str) -> None:
        if self._problem is not None:
            log.debug("%s (still failing)", message)
            return
        self._problem = message
        log.warning("%s; the unwritten lines stay in memory and are retried on the next flush", message)
        self._notify(message)

    def _recovered(self) -> None:
        if self._problem is None:
            return
        self._problem = None
        log.info("the journal %s is written again; no accepted line was lost", self.path)
        self._notify(None)

    def _notify(self, message: str | None) -> None:
        hook = self.on_problem
        if hook is None:
            return
        try:
            hook(message)
        except Exception:
            log.exception("the journal's on_problem hook failed")

    def mark(self) -> int:
        """Where the journal stands now, to :meth:`undo_to` later (only lines accepted since are undone)."""
        return self.accepted

    def lines_since(self, mark: int) -> tuple[list[str], list[str]]:
        """(the lines before ``mark``, the lines accepted since): read back whole (a load's replay)."""
        lines = self.snapshot_lines()
        split = max(len(lines) - max(self.accepted - mark, 0), 0)
        return lines[:split], lines[split:]

    def undo_to(self, mark: int) -> int:
        """Drop the lines accepted since ``mark`` (one atomic rewrite, only if there are any): how many."""
        dropped = self.accepted - mark
        if dropped > 0 and not self._abandoned:
            before, _ = self.lines_since(mark)
            self.replace_lines(before)
            self.accepted = mark
        return max(dropped, 0)

    def take_over(self, old: JournalWriter) -> None:
        """Carry on ``old``'s unwritten lines (a reconnect to a file a closed writer could not finish);
        ``old`` becomes inert. Only when this writer's seed is what ``old`` holds, so nothing doubles."""
        self._encode_staged()
        old._encode_staged()
        if self._lines.lines() == old._lines.lines():
            self._unwritten = list(old._unwritten)
            self._rewrite_pending = old._rewrite_pending
            self._check_tail = old._check_tail
            self._problem = old._problem
        else:
            log.warning("%s: a closed writer's unwritten lines do not match the new seed; dropped", self.path)
        old.abandon()

    def abandon(self) -> None:
        """Make the writer inert: later appends and flushes do nothing (before a deletion)."""
        self._cancel_timer()
        self._abandoned = True
        self._staged, self._staged_lines = bytearray(), 0
        self._unwritten.clear()
        self._rewrite_pending = False
