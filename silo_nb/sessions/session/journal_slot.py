"""Where one session's transcript goes: its journal writer, and the updates that came before it existed.

- :meth:`JournalSlot.record` is the one way into the journal; ``on_transcript`` listeners are told after
  (``inbound.py``). Before the session exists (no journal yet) updates wait here, up to
  :data:`MAX_EARLY_UPDATES`: an agent flooding while it never answers ``initialize`` must not grow the
  kernel; what is beyond that belongs to no session yet, said once.
- Connect attaches a writer (and swaps it when a load adopts a new id); dispose releases it, after which
  nothing more is written (its lock may go to another kernel).
- :attr:`JournalSlot.lines_at_setup` is the journal as it stood when the session was set up (a resumed
  session's transcript so far), read back and parsed on first use: a resume that never asks holds
  nothing of it (the file is append-only, so where it ended is enough).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from silo_nb.model import (
    USER_PROMPT_KIND,
    AgentSessionError,
    AgentSessionUpdate,
)
from silo_nb.sessions.journal import JournalFiles, JournalWriter, iter_lines, parse_lines
from silo_nb.updates import split_turns, starts_prompt

__all__ = ["MAX_EARLY_UPDATES", "JournalSlot", "turns_in_lines"]

log = logging.getLogger("silo_nb.sessions")
_USER_MARK = USER_PROMPT_KIND  # a line naming it may be a user chunk: only those are parsed to count turns

MAX_EARLY_UPDATES = 10_000  # updates kept from before the session exists (its journal is not open yet)


class JournalSlot:
    """One session's journal writer (or the updates waiting for it)."""

    def __init__(self, journals: JournalFiles, label: Callable[[], str]) -> None:
        self.journals = journals
        self._label = label
        self._writer: JournalWriter | None = None
        self._early: list[AgentSessionUpdate] = []
        self._released = False  # the handle let its writer go (disposed): no more lines
        # What the journal was at set-up: parsed updates, lines, or (file, size) to read them from.
        self._at_setup: tuple[AgentSessionUpdate, ...] | list[str] | tuple[Path, int] = ()
        self.on_problem: Callable[[str | None], None] | None = None

    @property
    def writer(self) -> JournalWriter | None:
        return self._writer

    @property
    def problem(self) -> str | None:
        """Why the journal cannot be written right now (accepted lines wait in memory), else None."""
        return self._writer.problem if self._writer is not None else None

    def attach(self, writer: JournalWriter | None) -> None:
        """Journal into ``writer`` from now on; updates that came before it are appended first."""
        self._writer = writer
        if writer is not None:
            writer.on_problem = self._problem_changed
            for update in self._early:
                writer.append(update)
            self._early.clear()

    def _problem_changed(self, problem: str | None) -> None:
        if self.on_problem is not None:
            self.on_problem(problem)

    def record(self, update: AgentSessionUpdate, value: dict[str, Any] | None = None) -> None:
        """Journal ``update`` (``value``: its line's JSON when the parser made it), or keep it for later."""
        writer = self._writer
        if writer is not None:
            if not self._released:
                writer.append(update, value)
        else:
            self._keep_early(update)

    def _keep_early(self, update: AgentSessionUpdate) -> None:
        if len(self._early) < MAX_EARLY_UPDATES:
            self._early.append(update)
        elif len(self._early) == MAX_EARLY_UPDATES:
            log.warning(
                "%s sent over %d updates before its session existed; the rest are not kept",
                self._label(),
                MAX_EARLY_UPDATES,
            )
            self._early.append(update)  # one past the bound: the warning is not repeated

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def snapshot_lines(self) -> list[str]:
        return self._writer.snapshot_lines() if self._writer is not None else []

    def set_up(self) -> Iterable[str]:
        """The handshake is over: the journal as it stands is the session's start (its lines, streamed).
        Only where it ends is kept (the file is append-only): the lines are read again if asked for."""
        writer = self._writer
        if writer is None:
            return []
        writer.flush()
        if writer.pending:  # the file is behind (a full disk): the lines themselves
            self._at_setup = writer.snapshot_lines()
            return self._at_setup
        try:
            size = self.journals.check(writer.path)
        except AgentSessionError:  # changed behind the writer meanwhile: what it holds is the start
            self._at_setup = writer.snapshot_lines()
            return self._at_setup
        self._at_setup = (writer.path, size)
        return iter_lines(writer.path, root=self.journals.data_dir, stop=size)

    def keep_setup_lines(self) -> None:
        """Parse the start now: the file is about to be rewritten (an in-place resume's load)."""
        _ = self.lines_at_setup

    @property
    def lines_at_setup(self) -> tuple[AgentSessionUpdate, ...]:
        start = self._at_setup
        if isinstance(start, list):
            self._at_setup = tuple(parse_lines(start))
        elif isinstance(start, tuple) and start and isinstance(start[0], Path):
            path, size = start
            self._at_setup = tuple(parse_lines(iter_lines(path, root=self.journals.data_dir, stop=size)))
        return self._at_setup  # type: ignore[return-value]

    def turns_at_setup(self) -> int:
        """How many turns the journal held at setup (``split_turns``' numbered turns), counted without
        keeping its parsed updates: only the lines that name a user chunk are parsed (a resumed journal of
        100,000 lines is not held in memory for a count)."""
        start = self._at_setup
        if isinstance(start, tuple) and not (start and isinstance(start[0], Path)):
            return sum(1 for turn in split_turns(start) if turn.number is not None)  # parsed already
        if isinstance(start, list):
            lines: Iterable[str] = start
        elif isinstance(start, tuple) and start:
            path, size = start
            lines = iter_lines(path, root=self.journals.data_dir, stop=size)
        else:
            return 0
        return turns_in_lines(lines)

    def hand_back(self) -> None:
        """Flush and give the writer back to the journal files (a failed connect, a swap, a dispose)."""
        if self._writer is not None:
            self._writer.flush()
            self.journals.release_writer(self._writer)

    def abandon(self) -> None:
        """Drop the writer and its file's lines unwritten (a stale id starting over with an empty journal)."""
        writer = self._writer
        if writer is not None:
            writer.abandon()
            self.journals.release_writer(writer)
            self._writer = None

    def release(self) -> None:
        """The session is over: the writer goes back and nothing more is written."""
        if self._writer is not None:
            self.hand_back()
            self._released = True


def turns_in_lines(lines: Iterable[str]) -> int:
    """The numbered turns ``split_turns`` would find in journal ``lines``, parsing only the lines that name a
    user chunk (a line that does not is another update: a prompt after it starts a turn)."""
    count, after_user = 0, False
    for line in lines:
        if _USER_MARK not in line:
            after_user = after_user and not line.strip()
            continue
        parsed = parse_lines([line])
        if not parsed:
            continue
        update = parsed[0]
        count += starts_prompt(update, after_user=after_user)
        after_user = update.kind == USER_PROMPT_KIND and update.child_session_id is None
    return count
