"""The journal files of one data dir, and the writers open on them (one per live session).

- Reads go through here so a live session's buffered lines are flushed first; a handle hands its writer
  back (:meth:`JournalFiles.release_writer`) when it closes.
- A writer holds the journal's write lock (``locks.py``; this object's :attr:`JournalFiles.locks`): a
  second process connecting to the same session is refused, so two kernels never interleave one journal.
- Discarding, carrying (``start_fresh``) and removing a journal take the same lock first
  (:meth:`JournalFiles.holding`): another kernel's live journal is never deleted or copied half-written.
- Every file is reached from the data folder without following a link (``safe_files``): a journal that
  is a link, a FIFO or in a folder another user may change is refused (:meth:`JournalFiles.check`, one
  line) and never read nor written through. Reads stream (``reader.py``): memory stays bounded whatever
  the file.
- :meth:`JournalFiles.close` lets go of every lock it holds (a service that is done; the tests check no
  lock is left behind).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from silo_nb.model import (
    AgentSessionError,
    AgentSessionUpdate,
)
from silo_nb.sessions.journal.locks import JournalLocks
from silo_nb.sessions.journal.reader import iter_lines, parse_lines, read_lines, read_updates
from silo_nb.sessions.journal.writer import JournalWriter
from silo_nb.sessions.safe_files import check_folder, open_file, remove_file
from silo_nb.sessions.storage import checkpoint_store, decode_session_id, journal_path

__all__ = ["JournalFiles"]

log = logging.getLogger("silo_nb.journal")


class JournalFiles:
    """The journal files of one data dir, and the writers open on them (one per live session)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.locks = JournalLocks(root=data_dir)
        self._live: dict[Path, JournalWriter] = {}
        self._released: set[Path] = set()  # writers the session closed that still hold unwritten lines

    def path(self, workspace_id: str, session_id: str) -> Path:
        return journal_path(self.data_dir, workspace_id, session_id)

    def check(self, path: Path, *, folder_only: bool = False) -> int:
        """Raise ``AgentSessionError`` (one line: what is wrong, what to do) unless the journal's folders
        are safe and the journal, if it exists, is a regular file; its size (0 when missing)."""
        try:
            if folder_only:
                check_folder(path.parent, self.data_dir)
                return 0
            fd = open_file(path, os.O_RDONLY, root=self.data_dir)
        except FileNotFoundError:
            return 0
        except OSError as exc:
            raise AgentSessionError(f"Cannot use the journal: {exc}") from None
        try:
            return os.fstat(fd).st_size
        finally:
            os.close(fd)

    def lines(self, path: Path) -> Iterable[str]:
        """:meth:`read`, streamed: the file's lines one at a time (bounded memory), or a live writer's
        lines while it cannot write."""
        live = self._live.get(path)
        if live is not None:
            live.flush()
            if live.pending:
                return live.snapshot_lines()
        return iter_lines(path, root=self._read_root(path))

    def _read_root(self, path: Path) -> Path | None:
        """Where a read of ``path`` is checked from: the data folder for its journals; a journal elsewhere
        (a recording the user named) is read as itself, still never through a link nor from a FIFO."""
        return self.data_dir if path.is_relative_to(self.data_dir) else None

    def read_updates(self, path: Path) -> list[AgentSessionUpdate]:
        """:meth:`read`'s lines as updates (what ``read_journal`` returns), parsed from the file's bytes."""
        live = self._live.get(path)
        if live is not None:
            live.flush()
            if live.pending or path in self._released:
                return parse_lines(self.read(path))
        return read_updates(path, root=self._read_root(path))

    def read(self, path: Path) -> list[str]:
        """The file's lines, after flushing a live writer on it; while that writer cannot write, its
        lines (the file as it should be), so a full disk never hides an accepted line."""
        live = self._live.get(path)
        if live is None:
            return read_lines(path, root=self._read_root(path))
        live.flush()
        if live.pending:
            return live.snapshot_lines()
        if path in self._released:
            self._forget(path)
        return read_lines(path, root=self._read_root(path))

    def flush(self, path: Path) -> bool:  # False: its live writer cannot write now (read() has the lines)
        live = self._live.get(path)
        if live is not None:
            live.flush()
        return live is None or not live.pending

    def writer(self, path: Path, seed: list[str] | None = None, *, rewrite: bool = False) -> JournalWriter:
        """A writer on ``path`` seeded with ``seed`` (``rewrite``: the file becomes exactly ``seed``), or
        with the file as it is (``seed`` None: nothing read). A closed writer on the same file whose
        lines are not on disk yet hands them over."""
        self.locks.acquire(path, decode_session_id(path.stem) or path.stem)
        old = self._live.get(path)
        if seed is None and old is not None and path in self._released and old.pending:
            seed = old.snapshot_lines()  # the file is behind that writer: its lines are the journal
        if seed is None:
            writer = JournalWriter(path, root=self.data_dir, existing_size=self.check(path))
        else:
            writer = JournalWriter(path, seed, root=self.data_dir)
        if old is not None and path in self._released and not rewrite:
            writer.take_over(old)  # only a closed one: a writer still in use keeps its lines
        self._forget(path, unlock=False)
        self._live[path] = writer
        if rewrite:
            writer.replace_lines(seed or [])
        return writer

    def release_writer(self, writer: JournalWriter) -> None:
        """The session is done with ``writer``; one still holding unwritten lines stays here, so a
        later read or reconnect retries them."""
        if self._live.get(writer.path) is not writer:
            return
        if writer.pending:
            log.warning(
                "%s: lines not written yet are kept in memory until a read or a reconnect", writer.path
            )
            self._released.add(writer.path)
            return
        self._forget(writer.path)

    def _forget(self, path: Path, *, unlock: bool = True) -> None:
        self._live.pop(path, None)
        self._released.discard(path)
        if unlock:
            self.locks.release(path)

    @contextlib.contextmanager
    def holding(self, path: Path, session_id: str) -> Iterator[None]:
        """Hold the journal's write lock while the block runs (a discard, a carry, a removal); raises
        ``AgentSessionError`` at once while another process writes it. Let go after, unless a writer of
        this service holds it by then."""
        held = self.locks.holds(path)
        self.locks.acquire(path, session_id)
        try:
            yield
        finally:
            if not held and path not in self._live:
                self.locks.release(path)

    def discard(self, path: Path) -> None:
        live = self._live.get(path)
        self._forget(path)
        if live is not None:
            live.abandon()
        with contextlib.suppress(FileNotFoundError):
            remove_file(path, root=self.data_dir)

    def remove(self, path: Path, session_id: str) -> bool:
        """Delete the journal of ``session_id`` (the user asked: ``forget(..., journal=True)``); raises
        ``AgentSessionError`` while another process writes it. False when there was none."""
        if self._live.get(path) is not None and path not in self._released:
            raise AgentSessionError(
                f'Session "{session_id}" is still open here — disconnect it before removing its journal.'
            )
        with self.holding(path, session_id):  # nobody else may be writing it
            existed = path.exists()
            self.discard(path)  # the lock file stays: unlinking it would race another process's lock
            # The session's file checkpoints (copies of its folders' files) go with it.
            shutil.rmtree(checkpoint_store(path), ignore_errors=True)
        return existed

    def close(self) -> None:
        """Flush every writer and let go of every lock: this data dir's service is done."""
        for writer in list(self._live.values()):
            writer.flush()
        self._live.clear()
        self._released.clear()
        self.locks.release_all()
