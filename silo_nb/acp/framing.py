"""Newline-delimited JSON on the wire: cutting a byte stream into lines, decoding and encoding one message.

- :class:`LineFramer` turns received chunks into complete lines. A line over ``max_line_bytes`` is
  dropped whole (logged), even when no newline has arrived yet, so memory stays bounded.
- :func:`decode_line` parses one line or raises; the caller logs and skips. Before parsing it checks the
  nesting depth on the bytes (:func:`nesting_exceeds`, linear C-speed passes): a line nested deeper than
  ``MAX_NESTING`` is refused without ever reaching json's recursive parser, so it costs no
  ``RecursionError`` and a bounded time (about 0.1 s for a 10 MB line of brackets).
- :func:`cut_depth` bounds a decoded value's depth with a marker (Silo's parse rules use it on the
  agent's free-form values, which pydantic cannot serialize past ~255 levels).
- :func:`encode_message` never fails on text UTF-8 cannot carry (a lone surrogate an agent sent us).

Nothing here knows JSON-RPC; :mod:`silo_nb.acp.jsonrpc` does.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "MAX_NESTING",
    "LineFramer",
    "cut_depth",
    "decode_line",
    "encode_message",
    "nesting_exceeds",
]

log = logging.getLogger("silo_nb.acp")

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
# Deeper messages are invalid: well under what json's C parser recurses through on a deep kernel stack
# (Python's limit is 1000 frames, shared), well over anything ACP nests. Silo's parse rules cut the
# agent's free-form values (rawInput...) much shallower, with a marker, before they reach pydantic.
MAX_NESTING = 512

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_OPEN_CLOSE = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def encode_message(message: Mapping[str, Any]) -> bytes:
    """One JSON line. ``ensure_ascii=False`` keeps non-ASCII text readable; json.dumps escapes newlines
    in strings. A lone surrogate has no UTF-8 form: then every non-ASCII character is escaped instead."""
    try:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n"


def nesting_exceeds(line: bytes, limit: int = MAX_NESTING) -> bool:
    """Whether the JSON text ``line`` nests arrays/objects deeper than ``limit`` (brackets inside strings
    do not count). The running sum over the brackets only runs for lines with over ``limit`` of them."""
    if line.count(b"[") + line.count(b"{") <= limit:
        return False
    marks = _STRING.sub(b"", line).translate(_OPEN_CLOSE, _NOT_BRACKETS)
    if marks.count(1) <= limit:
        return False
    if b"\x01" * (limit + 1) in marks:  # the usual deep line: one run of opens (keys and values are gone)
        return True
    # Opens are +1 and closes -1 as signed bytes; the deepest point is the largest prefix sum.
    return max(itertools.accumulate(memoryview(marks).cast("b"))) > limit


def decode_line(line: bytes) -> Any:
    """The JSON value of one line. Raises (``ValueError`` and kin) on anything it will not accept."""
    if nesting_exceeds(line):
        raise ValueError(f"nested deeper than {MAX_NESTING} levels")
    return json.loads(line)


def cut_depth(value: Any, depth: int, marker: Any) -> Any:
    """``value`` (a decoded JSON value) with every container nested deeper than ``depth`` levels replaced
    by ``marker``. Returns ``value`` itself, uncopied, when nothing is that deep (the common case)."""
    return _cut(value, depth, marker) if _deeper_than(value, depth) else value


def _deeper_than(value: Any, depth: int) -> bool:
    # Breadth first, one level at a time: no recursion, and only containers are kept between levels.
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(depth):
        below: list[Any] = []
        for container in level:
            items = container.values() if isinstance(container, dict) else container
            below.extend(item for item in items if isinstance(item, (dict, list)))
        if not below:
            return False
        level = below
    return bool(level)


def _cut(value: Any, depth: int, marker: Any) -> Any:
    if isinstance(value, dict):
        if depth <= 0:
            return marker
        return {k: _cut(v, depth - 1, marker) if isinstance(v, (dict, list)) else v for k, v in value.items()}
    if isinstance(value, list):
        if depth <= 0:
            return marker
        return [_cut(v, depth - 1, marker) if isinstance(v, (dict, list)) else v for v in value]
    return value


class LineFramer:
    """Cuts a byte stream into lines without the newline; blank lines are kept (callers skip them)."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._scan_from = 0  # bytes before this are known to hold no newline
        self._discarding = False  # inside an over-long line: drop up to its newline

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines that ``chunk`` completes."""
        if self._discarding:
            newline = chunk.find(b"\n")
            if newline < 0:
                return []
            chunk = chunk[newline + 1 :]
            self._discarding = False
        buffer = self._buffer
        buffer += chunk
        lines: list[bytes] = []
        start = 0
        while (newline := buffer.find(b"\n", self._scan_from)) >= 0:
            if newline - start > self.max_line_bytes:
                log.warning(
                    "dropped a message of %d bytes from the agent (limit %d)",
                    newline - start,
                    self.max_line_bytes,
                )
            else:
                lines.append(bytes(buffer[start:newline]))
            start = self._scan_from = newline + 1
        if start:
            del buffer[:start]
        self._scan_from = len(buffer)
        if len(buffer) > self.max_line_bytes:
            log.warning(
                "dropped a message longer than %d bytes from the agent (no newline seen)", self.max_line_bytes
            )
            buffer.clear()
            self._scan_from = 0
            self._discarding = True
        return lines

    def end(self) -> bytes | None:
        """At end of stream: the last line if it had no newline."""
        if self._discarding or not self._buffer.strip():
            return None
        return bytes(self._buffer)
