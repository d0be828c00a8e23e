"""Which turn of a journal a ``%%prompt`` cell sent: read once per kernel, then only what was appended.

- After a restart, "Run All" asks for every ``%%prompt`` cell whether its turn is already in the journal
  (same cell id, same text). Reading and parsing the whole journal for each cell cost ~1.5 s per cell at
  50k lines; this index reads a journal once per kernel and, when the file has grown, only the bytes
  appended since (the journal is append-only; a rewrite — ``os.replace`` of a load reconciliation —
  changes the inode, and a shorter file means it was replaced too: both re-read from the start).
- Only lines that mention ``user_message_chunk`` are parsed while indexing (a byte search, in C); the
  other lines are just counted as "not a user chunk". A turn's updates are parsed when a cell asks for
  that turn, and only its own lines (read back by byte range).
- Turn boundaries follow :func:`~silo_nb.updates.journal_turns.split_turns`: a user chunk starts a turn if
  silo_nb synthesized it or the update before it is not a user chunk (lines that do not parse skipped).
- The cyclic GC is paused while a turn's lines are parsed (``util.gc_paused``).
- A live writer is flushed first (``JournalFiles.flush``); while it cannot write, the file is behind and
  the journal is read whole through the session layer instead, as before.
- Bounded whatever the file (issue 21): opened like every journal (no link, a regular file only), read in
  chunks of :data:`CHUNK_BYTES`; a line longer than the line limit (or a sparse file's hole) is stepped
  over, never held; a turn is read back through the journal reader, which skips such lines too.
"""

from __future__ import annotations

import logging
import os
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from silo_nb.model import (
    TURN_UNDONE_KIND,
    USER_PROMPT_KIND,
    AgentSessionUpdate,
    TurnUndoneLine,
)
from silo_nb.sessions import (
    MAX_LINE_BYTES,
    JournalFiles,
    open_journal,
    parse_lines,
    read_updates,
)
from silo_nb.updates import (
    split_turns,
    starts_prompt,
    until_turn_end,
)

__all__ = ["JournalIndex", "JournalIndexes"]

log = logging.getLogger("silo_nb.notebook")

_MARK = USER_PROMPT_KIND.encode()
_UNDONE_MARK = f'"{TURN_UNDONE_KIND}"'.encode()
_KEEP = 16  # journals indexed per kernel
CHUNK_BYTES = 4 << 20
_NONBLANK = re.compile(rb"\S")


@dataclass
class JournalIndex:
    """Where the turns of one journal file start, and the cell and text of each prompt."""

    path: Path
    root: Path | None = None  # the data folder the journal is reached from
    identity: tuple[int, int] = (0, 0)  # (st_dev, st_ino)
    stat_key: tuple[int, int] = (-1, -1)  # (st_size, st_mtime_ns) when last refreshed
    consumed: int = 0  # bytes indexed: up to and including the last newline seen
    boundaries: list[int] = field(default_factory=list)  # byte offset of each turn's first line
    prompts: dict[str, list[tuple[int, str | None]]] = field(default_factory=dict)  # cell → (turn, text)
    last_user_end: int = -1  # offset of the newline ending the last user chunk line
    undone: dict[int, TurnUndoneLine] = field(default_factory=dict)  # turn number → the undo that took it

    def refresh(self) -> None:
        """Index what was appended since the last call (everything, if the file was replaced)."""
        fd = open_journal(self.path, self.root)
        if fd is None:
            self._reset((0, 0))
            return
        try:
            info = os.fstat(fd)
            identity = (info.st_dev, info.st_ino)
            if identity != self.identity or info.st_size < self.consumed:
                self._reset(identity)
            key = (info.st_size, info.st_mtime_ns)
            if key != self.stat_key:
                self._index(fd, info.st_size)
                self.stat_key = key
        except OSError as exc:
            log.warning("could not read the journal %s: %s", self.path, exc)
        finally:
            os.close(fd)

    def _index(self, fd: int, size: int) -> None:
        """Scan whole lines from :attr:`consumed` to ``size`` a chunk at a time (a torn last line waits)."""
        position = self.consumed
        while position < size:
            data = os.pread(fd, min(CHUNK_BYTES, size - position), position)
            end = data.rfind(b"\n") + 1
            if end == 0:  # one line longer than a chunk: read whole if it fits the limit, else step over it
                newline = _newline_after(fd, position + len(data), size)
                if newline < 0:
                    break
                if newline - position <= MAX_LINE_BYTES:
                    self._scan(os.pread(fd, newline + 1 - position, position), position)
                position = newline + 1
                continue
            self._scan(data[:end], position)
            position += end
        self.consumed = position

    def _reset(self, identity: tuple[int, int]) -> None:
        self.identity, self.stat_key, self.consumed = identity, (-1, -1), 0
        self.boundaries, self.prompts, self.undone = [], {}, {}
        self.last_user_end = -1

    def _scan(self, data: bytes, base: int) -> None:
        self._scan_undone(data)
        position = 0
        while (hit := data.find(_MARK, position)) >= 0:
            start = data.rfind(b"\n", 0, hit) + 1
            end = data.find(b"\n", hit)
            position = end + 1
            updates = parse_lines([data[start:end].decode("utf-8", "replace")])
            if not updates or updates[0].kind != USER_PROMPT_KIND:
                continue
            update = updates[0]
            # starts_prompt's rule; whether the update before is a user chunk is asked only when needed
            if starts_prompt(update, after_user=True) or not self._follows_user(data, base, start):
                self.boundaries.append(base + start)
                cell = update.raw.get("cellId")
                if isinstance(cell, str):
                    self.prompts.setdefault(cell, []).append((len(self.boundaries) - 1, update.text))
            self.last_user_end = base + end

    def _scan_undone(self, data: bytes) -> None:
        """The undos (``turn_undone`` lines, rare): which turns they took back."""
        position = 0
        while (hit := data.find(_UNDONE_MARK, position)) >= 0:
            start = data.rfind(b"\n", 0, hit) + 1
            end = data.find(b"\n", hit)
            position = end + 1
            for update in parse_lines([data[start:end].decode("utf-8", "replace")]):
                line = TurnUndoneLine.read(update)
                if line is not None:
                    for number in line.turns:
                        self.undone.setdefault(number, line)

    def _follows_user(self, data: bytes, base: int, start: int) -> bool:
        """Whether the update before the line at ``base + start`` is the last user chunk (only lines
        that do not parse in between). Asked only for user chunks silo_nb did not synthesize (an
        agent's replay), so the lines in between are parsed only then."""
        if self.last_user_end < 0:
            return False
        if self.last_user_end >= base:
            gap = data[self.last_user_end - base + 1 : start]
        elif base - self.last_user_end > MAX_LINE_BYTES:
            return False  # more than a line in between: an update surely is
        else:  # the last user line was in an earlier read
            gap = self._read(self.last_user_end + 1, base) + data[:start]
        if _blank(gap, 0, len(gap)):
            return True
        return not parse_lines(_lines(gap))

    def _read(self, start: int, stop: int) -> bytes:
        fd = open_journal(self.path, self.root)
        if fd is None:
            return b""
        try:
            return os.pread(fd, stop - start, start)
        finally:
            os.close(fd)

    def turn(self, cell_id: str, text: str) -> list[AgentSessionUpdate] | None:
        """The updates of the last turn sent from ``cell_id`` with this very text, if any."""
        number = self._number(cell_id, text)
        if number is None:
            return None
        start = self.boundaries[number]
        stop = self.boundaries[number + 1] if number + 1 < len(self.boundaries) else self.consumed
        return list(until_turn_end(read_updates(self.path, root=self.root, start=start, stop=stop)))

    def _number(self, cell_id: str, text: str) -> int | None:
        return next((n for n, said in reversed(self.prompts.get(cell_id, ())) if said == text), None)

    def undone_turn(self, cell_id: str, text: str) -> tuple[int, TurnUndoneLine] | None:
        """For that turn (as :meth:`turn` finds it), its number and the undo that took it back, if any."""
        number = self._number(cell_id, text)
        line = self.undone.get(number + 1) if number is not None else None
        return (number + 1, line) if number is not None and line is not None else None


def _newline_after(fd: int, position: int, size: int) -> int:
    """The offset of the first newline at or after ``position`` (holes of a sparse file jumped), or -1."""
    while position < size:
        try:
            hole = min(os.lseek(fd, position, os.SEEK_HOLE), size)
        except OSError:
            hole = size
        if hole <= position:
            try:
                position = os.lseek(fd, position, os.SEEK_DATA)
            except OSError:
                return -1
            continue
        data = os.pread(fd, min(CHUNK_BYTES, hole - position), position)
        if not data:
            return -1
        found = data.find(b"\n")
        if found >= 0:
            return position + found
        position += len(data)
    return -1


def _lines(data: bytes) -> list[str]:
    """Non-blank lines, decoded as ``journal.read_lines`` decodes them."""
    return [line for line in data.decode("utf-8", "replace").split("\n") if line.strip()]


def _blank(data: bytes, start: int, stop: int) -> bool:
    return _NONBLANK.search(data, start, stop) is None


class JournalIndexes:
    """The restore indexes of one kernel: the last :data:`_KEEP` journals a cell asked about."""

    def __init__(self) -> None:
        self._indexes: OrderedDict[Path, JournalIndex] = OrderedDict()

    def find_turn(
        self, journals: JournalFiles, path: Path, cell_id: str, text: str
    ) -> list[AgentSessionUpdate] | None:
        """The last turn of the journal at ``path`` sent from ``cell_id`` with this very text, if any, up to
        its ``turn_end`` (what the live cell showed; work the agent did on its own after it is not this
        turn's).

        Indexed once per kernel (and per append); a journal whose live writer cannot write right now is
        read whole instead (its lines are in memory, not in the file)."""
        if not journals.flush(path):
            found = None
            for turn in split_turns(parse_lines(journals.read(path))):
                first = turn.updates[0]
                if turn.number is not None and first.raw.get("cellId") == cell_id and first.text == text:
                    found = list(turn.head)
            return found
        index = self._indexes.pop(path, None) or JournalIndex(path, journals.data_dir)
        self._indexes[path] = index
        while len(self._indexes) > _KEEP:
            self._indexes.popitem(last=False)
        index.refresh()
        return index.turn(cell_id, text)

    def undone_turn(self, path: Path, cell_id: str, text: str) -> tuple[int, TurnUndoneLine] | None:
        """After :meth:`find_turn` of the same turn: its number and the undo that took it back, if any."""
        index = self._indexes.get(path)
        return index.undone_turn(cell_id, text) if index is not None else None
