"""Reading journals: a file or its lines to ``AgentSessionUpdate`` models (each line by ``lines.py``).

- Streamed, in memory bounded whatever the file (issue 21): the file is read in chunks of
  :data:`READ_CHUNK_BYTES` and handed on as blocks of whole lines; a line over :data:`MAX_LINE_BYTES`
  (the wire's own line limit, so every line an agent could send fits) is skipped without being held,
  and counted (one warning per read). A hole in a sparse file is jumped over (``SEEK_DATA``): a line
  with NUL bytes in it is no JSON, so it is skipped the same way, at no cost.
- The file is opened through ``safe_files`` (no symbolic link, nothing but a regular file: a FIFO never
  blocks; with ``root``, every folder from the data folder down checked).
- Each block is split once and each line decoded by orjson (:func:`silo_nb.acp.framing.has_long_number`
  checks the block in one C-speed pass first: lines that may hold an integer beyond 64 bits, which orjson
  would turn into a float, go to the stdlib's parser instead, as do lines orjson refuses: a lone
  surrogate's escape, invalid UTF-8 (decoded with replacement characters, as the stdlib path always did)).
- The collector is paused while the models are built: 100,000 updates allocate millions of containers,
  and its passes over them (none of which is garbage yet) were most of a restore's time; what a read of
  over ``BIG_JOURNAL_BYTES`` built goes to the oldest generation without a pass (``gc_paused``).
- A line that does not parse, or is not an update, is skipped (logged at debug); nothing here raises.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from silo_nb.acp import DEFAULT_MAX_LINE_BYTES, has_long_number
from silo_nb.model import (
    TURN_END_KIND,
    AgentSessionUpdate,
    TurnEndLine,
)
from silo_nb.sessions.journal.lines import journal_line_to_update
from silo_nb.sessions.safe_files import UnsafeFileError, open_file
from silo_nb.util import gc_paused

__all__ = [
    "BIG_JOURNAL_BYTES",
    "MAX_LINE_BYTES",
    "READ_CHUNK_BYTES",
    "ReadCounts",
    "iter_blocks",
    "iter_lines",
    "journal_profile",
    "open_journal",
    "parse_blob",
    "parse_lines",
    "read_lines",
    "read_updates",
]

log = logging.getLogger("silo_nb.journal")

_SKIP = object()
BIG_JOURNAL_BYTES = 1 << 20  # from here on a read's objects are promoted (``util.gc_paused``)
MAX_LINE_BYTES = DEFAULT_MAX_LINE_BYTES  # 64 MiB: the longest line an agent can send is kept whole
READ_CHUNK_BYTES = 1 << 20


@dataclass
class ReadCounts:
    """What a read met besides lines: lines over :data:`MAX_LINE_BYTES` (or with NUL holes) skipped."""

    skipped: int = 0


def open_journal(path: Path, root: Path | None = None) -> int | None:
    """A read descriptor of the journal ``path``, or None (missing, a link, not a regular file: logged)."""
    try:
        return open_file(path, os.O_RDONLY, root=root)
    except FileNotFoundError:
        return None
    except UnsafeFileError as exc:
        log.warning("not reading the journal: %s", exc)
        return None
    except OSError as exc:
        log.debug("could not read the journal %s: %s", path, exc)
        return None


def _next_hole(fd: int, position: int, stop: int) -> int:
    try:
        return min(os.lseek(fd, position, os.SEEK_HOLE), stop)
    except OSError:  # no hole support, or past the end
        return stop


def _after_hole(fd: int, position: int, stop: int) -> int:
    try:
        return min(os.lseek(fd, position, os.SEEK_DATA), stop)
    except OSError:  # ENXIO: only a hole up to the end
        return stop


def iter_blocks(
    fd: int,
    *,
    start: int = 0,
    stop: int | None = None,
    limit: int = MAX_LINE_BYTES,
    counts: ReadCounts | None = None,
) -> Iterator[bytes]:
    """Blocks of whole lines of ``fd`` between ``start`` and ``stop`` (the file's end), each ending in a
    newline but perhaps the last. Holds at most about ``limit`` + one chunk; see the module notes."""
    counts = counts if counts is not None else ReadCounts()
    end = os.fstat(fd).st_size if stop is None else stop
    position, carry, skipping = start, bytearray(), False
    hole = _next_hole(fd, position, end)
    while position < end:
        if position >= hole:  # NULs up to the next data: the line they are in is no JSON
            skipping, carry = True, bytearray()
            position = _after_hole(fd, position, end)
            hole = _next_hole(fd, position, end)
            continue
        chunk = os.pread(fd, min(READ_CHUNK_BYTES, hole - position), position)
        if not chunk:
            break
        position += len(chunk)
        if skipping:
            newline = chunk.find(b"\n")
            if newline < 0:
                continue
            counts.skipped += 1
            skipping, chunk = False, chunk[newline + 1 :]
        last = chunk.rfind(b"\n")
        if last < 0:
            carry += chunk
            if len(carry) > limit:
                skipping, carry = True, bytearray()
            continue
        if carry:
            first = chunk.find(b"\n")
            if len(carry) + first > limit:
                counts.skipped += 1
                block = chunk[first + 1 : last + 1]
            else:
                block = bytes(carry) + chunk[: last + 1]
        else:
            block = chunk[: last + 1]
        carry = bytearray(chunk[last + 1 :])
        if block:
            yield block
    if skipping:
        counts.skipped += 1
    elif carry:
        yield bytes(carry)


def _report(path: Path, counts: ReadCounts) -> None:
    if counts.skipped:
        log.warning(
            "%s: %d line(s) over the %d MiB line limit (or holding NUL bytes) skipped",
            path,
            counts.skipped,
            MAX_LINE_BYTES >> 20,
        )


def _decode(block: bytes) -> list[str]:
    return [line for line in block.decode("utf-8", "replace").split("\n") if line and not line.isspace()]


def iter_lines(
    path: Path,
    *,
    root: Path | None = None,
    start: int = 0,
    stop: int | None = None,
    counts: ReadCounts | None = None,
) -> Iterator[str]:
    """The non-blank lines of a journal (between byte offsets ``start`` and ``stop``), streamed."""
    fd = open_journal(path, root)
    if fd is None:
        return
    counts = counts if counts is not None else ReadCounts()
    try:
        for block in iter_blocks(fd, start=start, stop=stop, counts=counts):
            yield from _decode(block)
    except OSError as exc:
        log.warning("could not read the journal %s: %s", path, exc)
    finally:
        os.close(fd)
        _report(path, counts)


def read_lines(path: Path, *, root: Path | None = None) -> list[str]:
    """Every non-blank line of a journal; ``[]`` when it is missing or unreadable. Never raises."""
    return list(iter_lines(path, root=root))


def parse_lines(lines: Iterable[str]) -> list[AgentSessionUpdate]:
    """Lines to updates, skipping any that do not parse or lack a string ``kind``."""
    lines = lines if isinstance(lines, list) else list(lines)
    if any("\n" in line for line in lines):  # JSON texts over several lines: a newline is only whitespace
        lines = [line.replace("\n", " ") for line in lines]
    # Text a journal line holds that UTF-8 cannot (a lone surrogate) is its JSON escape, as on disk.
    return parse_blob("\n".join(lines).encode("utf-8", "backslashreplace"))


def read_updates(
    path: Path,
    *,
    root: Path | None = None,
    counts: ReadCounts | None = None,
    start: int = 0,
    stop: int | None = None,
) -> list[AgentSessionUpdate]:
    """``parse_lines(read_lines(path))`` (of the bytes from ``start`` to ``stop``) without building the
    lines in between. Never raises."""
    fd = open_journal(path, root)
    if fd is None:
        return []
    counts = counts if counts is not None else ReadCounts()
    updates: list[AgentSessionUpdate] = []
    try:
        size = (os.fstat(fd).st_size if stop is None else stop) - start
        with gc_paused(promote=size >= BIG_JOURNAL_BYTES):
            for block in iter_blocks(fd, start=start, stop=stop, counts=counts):
                _parse_into(block, updates)
    except OSError as exc:
        log.warning("could not read the journal %s: %s", path, exc)
    finally:
        os.close(fd)
        _report(path, counts)
    return updates


def _stdlib(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        log.debug("skipped a journal line that is not JSON: %.120r", line)
        return _SKIP


def _parse_into(data: bytes, updates: list[AgentSessionUpdate]) -> None:
    careful = has_long_number(data)
    loads = orjson.loads
    for line in data.split(b"\n"):
        if not line or line.isspace():
            continue
        if careful and has_long_number(line):
            value = _stdlib(line)
        else:
            try:
                value = loads(line)
            except orjson.JSONDecodeError:
                value = _stdlib(line)
        if value is _SKIP:
            continue
        update = journal_line_to_update(value)
        if update is not None:
            updates.append(update)


def parse_blob(data: bytes) -> list[AgentSessionUpdate]:
    """The updates of a journal's bytes (newline-separated JSON lines), in order."""
    updates: list[AgentSessionUpdate] = []
    with gc_paused(promote=len(data) >= BIG_JOURNAL_BYTES):
        _parse_into(data, updates)
    return updates


def journal_profile(updates: Iterable[AgentSessionUpdate]) -> str | None:
    """The profile id the journal's last turn end names (``raw.profile``), or None."""
    found = None
    for update in updates:
        if update.kind == TURN_END_KIND and (end := TurnEndLine.read(update)) is not None and end.profile:
            found = end.profile
    return found
