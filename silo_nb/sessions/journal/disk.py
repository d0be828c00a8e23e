"""The journal writer's side of the disk: the lines it accepted, its encoding, its torn-tail check, its
wording, and its low-level writes (``write_all``, ``write_lines``): the fault tests replace this module's
``os`` as well as ``writer.py``'s to script short and failed writes.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from silo_nb.sessions.journal.reader import iter_lines

__all__ = ["LineStore", "encode_text", "ends_torn", "reason", "write_all", "write_lines"]

log = logging.getLogger("silo_nb.journal")


class LineStore:
    """Every line a writer accepted, in order: text lines, then the span of the file that the flushes of
    a stream wrote, read back only when the lines are asked for (a snapshot: a load, a failing disk),
    never kept in memory. A writer on an existing journal starts as a span of the whole file, whose
    lines are not even counted until someone asks (a resume of a 1 GB journal holds none of it).

    Deliberately unlike Silo, whose writer keeps every line in memory: holding a long stream's lines
    cost more than encoding them (fresh memory for every line; a tenth of the throughput) and as much
    memory as the journal itself. The writer holds the file's lock, so the span stays what was written;
    if the file was changed behind its back anyway, what can still be read is used (logged).
    """

    __slots__ = ("_count", "_lines", "_path", "_root", "_span", "_span_lines")

    def __init__(self, path: Path, lines: Iterable[str] = (), *, root: Path | None = None) -> None:
        self._path = path
        self._root = root
        self._lines = list(lines)
        self._count = len(self._lines)  # the lines held plus the span's, when its count is known
        self._span: tuple[int, int] | None = None  # [start, end) of the file, after the text lines
        self._span_lines: int | None = 0  # None: not counted yet (a span of an existing file)

    @classmethod
    def of_file(cls, path: Path, size: int, *, root: Path | None) -> LineStore:
        """The first ``size`` bytes of the journal at ``path``, as they are: nothing read yet."""
        store = cls(path, root=root)
        if size > 0:
            store._span, store._span_lines = (0, size), None
        return store

    def __len__(self) -> int:
        if self._span_lines is None and self._span is not None:
            start, end = self._span
            self._span_lines = sum(1 for _ in iter_lines(self._path, root=self._root, start=start, stop=end))
            self._count += self._span_lines
        return self._count

    def add_lines(self, lines: list[str]) -> None:
        self._materialize()
        self._lines += lines
        self._count += len(lines)

    def add_written(self, start: int, size: int, count: int) -> None:
        """``count`` lines (each ending in a newline), ``size`` bytes, were just written at ``start``."""
        if self._span is not None and self._span[1] != start:
            self._materialize()  # something else was written in between: the span would not be contiguous
        begin = start if self._span is None else self._span[0]
        self._span = (begin, start + size)
        if self._span_lines is not None:
            self._span_lines += count
            self._count += count

    def lines(self) -> list[str]:
        """The lines themselves (the caller must not change the list)."""
        self._materialize()
        return self._lines

    def _materialize(self) -> None:
        if self._span is None:
            return
        (start, end), expected = self._span, self._span_lines
        self._span, self._span_lines = None, 0
        lines = list(iter_lines(self._path, root=self._root, start=start, stop=end))
        if expected is None:
            self._count += len(lines)
        elif len(lines) != expected:
            log.warning(
                "%s changed behind its writer: %d of %d lines read back", self._path, len(lines), expected
            )
            self._count += len(lines) - expected
        self._lines += lines


def encode_text(text: str) -> bytes:
    # A lone surrogate (valid JSON: "\ud800") cannot be UTF-8; it only occurs inside a JSON string, where
    # backslashreplace's "\ud800" is the same character's JSON escape. The handler only runs on a
    # character that fails, so text UTF-8 can encode costs nothing extra and is byte-identical.
    return text.encode("utf-8", "backslashreplace")


def ends_torn(fd: int) -> bool:
    """Whether the file ends in a partial line (not empty, no final newline)."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def write_lines(fd: int, lines: list[str], chunk_chars: int) -> tuple[int, OSError | None]:
    """Write ``lines`` (each with its newline) in chunks of about ``chunk_chars``: a flush of one
    debounce window is one chunk, and a retry on a full disk stops at the first chunk instead of encoding
    everything still buffered. Bytes written and the error that stopped it, as ``write_all``."""
    written = 0
    start = 0
    while start < len(lines):
        end, size = start, 0
        while end < len(lines) and (end == start or size < chunk_chars):
            size += len(lines[end]) + 1
            end += 1
        count, error = write_all(fd, encode_text("".join(line + "\n" for line in lines[start:end])))
        written += count
        if error is not None:
            return written, error
        start = end
    return written, None


def write_all(fd: int, data: bytes | bytearray) -> tuple[int, OSError | None]:
    """Write all of ``data`` (looping over short writes); how many bytes were written, and the error
    that stopped it. A write error writes nothing, so the count is exact."""
    view = memoryview(data)
    done = 0
    while done < len(view):
        try:
            count = os.write(fd, view[done:])
        except OSError as exc:
            return done, exc
        if count <= 0:
            return done, OSError(errno.EIO, "a write wrote nothing")
        done += count
    return done, None
