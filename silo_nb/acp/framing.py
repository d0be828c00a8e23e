"""Newline-delimited JSON on the wire: cutting a byte stream into lines, decoding and encoding one message.

- :class:`LineFramer` turns received chunks into complete lines (one ``split`` per chunk; a long line's
  pieces are appended, never rescanned). A line over ``max_line_bytes`` is dropped whole (logged), even
  when no newline has arrived yet, so memory stays bounded; its first and last :data:`DROP_KEEP_BYTES`
  go to ``on_drop`` (a request's id may still be read there, and the request answered).
- :func:`decode_line` parses one line or raises; the caller logs and skips. One C-speed pass classifies the
  bytes (``bytes.translate``): a line nested deeper than ``MAX_NESTING`` is refused without reaching a
  recursive parser (:func:`nesting_exceeds`: no ``RecursionError``, about 0.1 s for a 10 MB line of
  brackets), and a line with a run of 19 digits may hold an integer beyond 64 bits.
- Decoding is orjson (4x the stdlib's speed), with the stdlib as the fallback wherever orjson would not
  give the value the stdlib gives: a lone surrogate, ``NaN``/``Infinity`` or a number beyond a double
  (orjson refuses those lines: the stdlib parses them), and an integer beyond 64 bits (orjson would turn
  it into a float silently: such lines go to the stdlib first, which keeps the value; a run of 19 digits
  inside a string only costs that line the slower parser).
- :func:`cut_depth` bounds a decoded value's depth with a marker (Silo's parse rules use it on the
  agent's free-form values, which pydantic cannot serialize past ~255 levels).
- :func:`encode_message` is orjson, and never fails on what orjson refuses: text UTF-8 cannot carry (a lone
  surrogate an agent sent us), integers beyond 64 bits, non-string keys go through the stdlib.

Nothing here knows JSON-RPC; :mod:`silo_nb.acp.jsonrpc` does.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

import orjson

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DROP_KEEP_BYTES",
    "MAX_NESTING",
    "LineFramer",
    "TooDeepError",
    "cut_depth",
    "decode_counted",
    "decode_line",
    "encode_message",
    "has_long_number",
    "nesting_depth",
    "nesting_exceeds",
]

log = logging.getLogger("silo_nb.acp")

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
DROP_KEEP_BYTES = 4096  # of a dropped line's start and end, for on_drop
# Deeper messages are invalid: well under what json's C parser recurses through on a deep kernel stack
# (Python's limit is 1000 frames, shared), well over anything ACP nests. Silo's parse rules cut the
# agent's free-form values (rawInput...) much shallower, with a marker, before they reach pydantic.
MAX_NESTING = 512

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
# One pass classifies a line's bytes: "[" for an opening bracket, "0" for a digit, " " for the rest.
_CLASSES = bytes(0x5B if b in b"[{" else 0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_NUMBER = b"0" * 19  # 2**63 has 19 digits: orjson turns an integer beyond 64 bits into a float
_OPEN_CLOSE = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_QUOTES_OR_BRACKETS = bytes(sorted(set(range(256)) - set(b'"[]{}')))


class TooDeepError(ValueError):
    """A line nested deeper than :data:`MAX_NESTING` (valid JSON, maybe, but refused)."""


def encode_message(message: Mapping[str, Any]) -> bytes:
    """One JSON line, UTF-8 (newlines in strings are escaped). What orjson refuses (a lone surrogate, an
    integer beyond 64 bits, a non-string key) goes through json.dumps; a lone surrogate has no UTF-8 form,
    so then every non-ASCII character is escaped instead."""
    try:
        return orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # orjson.JSONEncodeError
        pass
    try:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n"


def nesting_exceeds(line: bytes, limit: int = MAX_NESTING) -> bool:
    """Whether the JSON text ``line`` nests arrays/objects deeper than ``limit`` (brackets inside strings
    do not count)."""
    return nesting_depth(line, limit) > limit


def nesting_depth(line: bytes, limit: int = MAX_NESTING) -> int:
    """How deep the JSON text ``line`` nests arrays/objects (brackets inside strings do not count), or a
    bound on it: at most the number of brackets it opens, and ``limit + 1`` as soon as it is past ``limit``.
    The running sum over the brackets only runs for lines with over ``limit`` of them."""
    opens = line.count(b"[") + line.count(b"{")
    if opens <= limit:
        return opens
    marks = _outside_strings(line).translate(_OPEN_CLOSE)
    opens = marks.count(1)
    if opens <= limit:
        return opens
    if b"\x01" * (limit + 1) in marks:  # the usual deep line: one run of opens (keys and values are gone)
        return limit + 1
    # Opens are +1 and closes -1 as signed bytes; the deepest point is the largest prefix sum.
    return min(limit + 1, max(itertools.accumulate(memoryview(marks).cast("b"))))


def _outside_strings(line: bytes) -> bytes:
    """The brackets of ``line`` that lie outside its JSON strings, in order. Escapes go first (each is a
    backslash and the character after it, so an escaped quote never ends a string); then everything but
    quotes and brackets; then every pair of adjacent quotes (a string with no bracket in it, or the end of
    one and the start of the next: either way no bracket changes side, as the quotes go in twos); what
    quotes remain border brackets in strings, and the text between them is every other piece of a split
    on them. All C passes: a line of 10,000 short strings costs about a millisecond."""
    if b"\\" in line:
        line = _ESCAPE.sub(b"", line)
    kept = line.translate(None, _NOT_QUOTES_OR_BRACKETS).replace(b'""', b"")
    return b"".join(kept.split(b'"')[::2]) if b'"' in kept else kept


def has_long_number(data: bytes) -> bool:
    """Whether ``data`` holds a run of 19 digits: possibly an integer orjson cannot hold (one C pass)."""
    return _LONG_NUMBER in data.translate(_CLASSES)


def decode_line(line: bytes) -> Any:
    """The JSON value of one line. Raises (``ValueError`` and kin) on anything it will not accept."""
    return decode_counted(line)[0]


def decode_counted(line: bytes) -> tuple[Any, int]:
    """:func:`decode_line`'s value, and how many arrays and objects the line opens: a bound on how deep
    anything in the value nests, which spares a reader the walk that checks it (most lines open a few)."""
    classes = line.translate(_CLASSES)
    openings = classes.count(b"[")
    if openings > MAX_NESTING:  # the true depth, a tighter bound (a list of 10,000 objects is 3 deep)
        openings = nesting_depth(line)
        if openings > MAX_NESTING:
            raise TooDeepError(f"nested deeper than {MAX_NESTING} levels")
    if _LONG_NUMBER not in classes:
        try:
            return orjson.loads(line), openings
        except orjson.JSONDecodeError:
            pass  # not JSON at all, or what only the stdlib reads (a lone surrogate, NaN): it decides
    return json.loads(line), openings


def cut_depth(value: Any, depth: int, marker: Any) -> Any:
    """``value`` (a decoded JSON value) with every container nested deeper than ``depth`` levels replaced
    by ``marker``. Returns ``value`` itself, uncopied, when nothing is that deep (the common case)."""
    return _cut(value, depth, marker) if _deeper_than(value, depth) else value


def _deeper_than(value: Any, depth: int) -> bool:
    # This runs for every update: its first two levels are walked inline (an update is a few small
    # objects, so that is a handful of type checks and no call); what lies deeper goes to _deeper.
    if depth <= 2 or not isinstance(value, (dict, list)):
        return _deeper(value, depth)
    for item in value.values() if isinstance(value, dict) else value:
        if isinstance(item, (dict, list)):
            for inner in item.values() if isinstance(item, dict) else item:
                if isinstance(inner, (dict, list)) and _deeper(inner, depth - 2):
                    return True
    return False


def _deeper(value: Any, depth: int) -> bool:
    """Whether ``value`` holds containers more than ``depth`` levels down (itself being level 0). Depth
    first with a stack of iterators (no recursion, any depth), stopping at the first one too deep."""
    if not isinstance(value, (dict, list)):
        return False
    stack = [iter(value.values() if isinstance(value, dict) else value)]
    while stack:
        if len(stack) > depth:
            return True
        for item in stack[-1]:
            if isinstance(item, (dict, list)):
                stack.append(iter(item.values() if isinstance(item, dict) else item))
                break
        else:
            stack.pop()
    return False


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
    """Cuts a byte stream into lines without the newline; blank lines are kept (callers skip them).
    ``on_drop(start, end)`` hears of each line dropped for its length, with its first and last bytes."""

    def __init__(
        self,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        on_drop: Callable[[bytes, bytes], None] | None = None,
    ) -> None:
        self.max_line_bytes = max_line_bytes
        self._on_drop = on_drop
        self._buffer = bytearray()  # the start of a line whose newline has not arrived
        self._discarding = False  # inside an over-long line: drop up to its newline
        self._dropped_start = self._dropped_end = b""  # of the line being discarded

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines that ``chunk`` completes."""
        if self._discarding:
            newline = chunk.find(b"\n")
            piece = chunk[: newline if newline >= 0 else len(chunk)][-DROP_KEEP_BYTES:]
            self._dropped_end = (self._dropped_end + piece)[-DROP_KEEP_BYTES:]
            if newline < 0:
                return []
            chunk = chunk[newline + 1 :]
            self._discarding = False
            self._dropped(self._dropped_start, self._dropped_end)
        buffer = self._buffer
        if chunk.find(b"\n") < 0:  # a piece of a long line: kept, never rescanned
            buffer += chunk
            if len(buffer) > self.max_line_bytes:
                self._drop_pending()
            return []
        # One C-speed split of the chunk; a line begun in earlier chunks is completed by its first piece.
        lines = chunk.split(b"\n")
        if buffer:
            buffer += lines[0]
            lines[0] = bytes(buffer)
            buffer.clear()
        buffer += lines.pop()
        limit = self.max_line_bytes
        if len(lines[0]) > limit or len(chunk) > limit:
            kept = [line for line in lines if len(line) <= limit]
            for line in lines:
                if len(line) > limit:
                    log.warning("dropped a message of %d bytes from the agent (limit %d)", len(line), limit)
                    self._dropped(line[:DROP_KEEP_BYTES], line[-DROP_KEEP_BYTES:])
            lines = kept
        if len(buffer) > limit:
            self._drop_pending()
        return lines

    def _drop_pending(self) -> None:
        log.warning(
            "dropped a message longer than %d bytes from the agent (no newline seen)", self.max_line_bytes
        )
        self._dropped_start = bytes(self._buffer[:DROP_KEEP_BYTES])
        self._dropped_end = bytes(self._buffer[-DROP_KEEP_BYTES:])
        self._buffer.clear()
        self._discarding = True

    def _dropped(self, start: bytes, end: bytes) -> None:
        self._dropped_start = self._dropped_end = b""
        if self._on_drop is not None:
            try:
                self._on_drop(start, end)
            except Exception:
                log.exception("handling a dropped line failed")

    def end(self) -> bytes | None:
        """At end of stream: the last line if it had no newline."""
        if self._discarding or not self._buffer.strip():
            return None
        return bytes(self._buffer)
