"""Small helpers of the journal writer (``journal.py``): the lines it keeps, its encoding, its torn-tail
check, its wording. Writes stay in ``journal.py`` (its tests replace that module's ``os`` to script short
and failed writes).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = ["LineStore", "encode_text", "ends_torn", "reason"]


class LineStore:
    """Every line a writer accepted, in order: text lines, then whole flushed buffers kept as the bytes
    that were written, made text only when asked for (a snapshot is rare, a stream of updates is not).
    So a long session's memory is about its journal's size, and a flush splits nothing."""

    __slots__ = ("_chunks", "_count", "_lines")

    def __init__(self, lines: Iterable[str] = ()) -> None:
        self._lines = list(lines)
        self._chunks: list[bytes | bytearray] = []
        self._count = len(self._lines)

    def __len__(self) -> int:
        return self._count

    def add_lines(self, lines: list[str]) -> None:
        self._materialize()
        self._lines += lines
        self._count += len(lines)

    def add_chunk(self, data: bytes | bytearray) -> None:
        """Lines, each ending in a newline, UTF-8 (what orjson writes); ``data`` is not copied."""
        self._chunks.append(data)
        self._count += data.count(b"\n")

    def lines(self) -> list[str]:
        """The lines themselves (the caller must not change the list)."""
        self._materialize()
        return self._lines

    def _materialize(self) -> None:
        for chunk in self._chunks:
            lines = chunk.decode().split("\n")
            lines.pop()  # after the last newline (JSON escapes the newlines in strings)
            self._lines += lines
        self._chunks.clear()


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
