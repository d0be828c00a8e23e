"""One process writes a session's journal at a time: an advisory lock beside the journal file.

- Two kernels connected to the same session would interleave their appends (and a load's atomic rewrite
  would drop the other's lines), so the second connect is refused with a clear error instead.
- ``lockf`` (a POSIX record lock: not inherited by a ``fork()``ed child, unlike ``flock``) on
  ``<journal>.lock``, which also records the holder's pid for the message. It goes away with the process,
  even on SIGKILL. The lock file is reached like the journal (``safe_files``): a ``.lock`` that is a
  link is refused, never truncated through. :func:`lock_owner` tells, without taking it, which other
  process holds it (the agents list shows such a session as open in another kernel).
- A ``lockf`` lock belongs to the *process*: a second descriptor of the same process gets it too, and
  closing either drops it. So the one descriptor per journal is shared by every holder in this process
  (:class:`ProcessLocks`, the only process-wide fact here; it keeps its holders weakly, so a holder that is
  gone holds nothing). A holder is a :class:`JournalLocks`, owned by one service's ``JournalFiles``:
  the same kernel reconnecting (a new handle while the old one is still closing, or a second service
  after ``%reload_ext``) never blocks itself.
- Within one process the lock cannot tell two handles apart, so handles are noted too (``claim``, weakly):
  resuming a session that another handle of this kernel still has open (connected or connecting, not
  disposed), through any service, is refused the same way; a disposed handle, or one whose agent is gone,
  never blocks. A connect in progress has no agent connection yet: it is noted while it runs
  (``connecting``), so two simultaneous connects to one session cannot both go through.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import struct
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from silo_nb.model import (
    AgentSessionError,
)
from silo_nb.sessions.safe_files import open_file

__all__ = ["PROCESS_LOCKS", "JournalLocks", "JournalUser", "ProcessLocks", "lock_owner"]


class JournalUser(Protocol):
    """What a lock asks of a session handle it notes (``AgentSessionHandle`` is one)."""

    @property
    def id(self) -> str: ...

    @property
    def journal_in_use(self) -> bool:
        """Connected or connecting (its agent connection open) and not disposed: it may still write."""
        ...


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


class ProcessLocks:
    """The journals this process holds the ``lockf`` lock of: one descriptor each, shared by holders."""

    def __init__(self) -> None:
        self._fds: dict[Path, int] = {}
        self._holders: dict[Path, weakref.WeakSet[JournalLocks]] = {}
        # Every holder that noted a handle or a connect on a journal (whether it holds the lock yet or not):
        # a second service of this process must see them too.
        self._parties: dict[Path, weakref.WeakSet[JournalLocks]] = {}

    def acquire(self, path: Path, session_id: str, holder: JournalLocks) -> None:
        """Lock ``path`` for ``holder``; raises ``AgentSessionError`` if another process holds it."""
        if path not in self._fds:
            self._fds[path] = _lock(path, session_id, holder.root)
            self._holders[path] = weakref.WeakSet()
        self._holders[path].add(holder)

    def release(self, path: Path, holder: JournalLocks) -> None:
        holders = self._holders.get(path)
        if holders is None:
            return
        holders.discard(holder)
        self._drop_if_unheld(path)

    def _drop_if_unheld(self, path: Path) -> None:
        if not self._holders[path]:
            del self._holders[path]
            os.close(self._fds.pop(path))  # closing the descriptor drops the lock

    def join(self, path: Path, party: JournalLocks) -> None:
        self._parties.setdefault(path, weakref.WeakSet()).add(party)

    def parties(self, path: Path) -> list[JournalLocks]:
        return list(self._parties.get(path, ()))

    def holds_file(self, path: Path) -> bool:
        """Whether this process holds the lock of the journal at ``path`` (some holder of it)."""
        return path in self._fds

    def held(self) -> set[Path]:
        """The journals some holder of this process has locked now (the tests' leak check reads it)."""
        for path in list(self._holders):
            self._drop_if_unheld(path)  # holders that are gone hold nothing
        return set(self._fds)


def _lock(path: Path, session_id: str, root: Path | None) -> int:
    try:
        fd = open_file(_lock_path(path), os.O_RDWR | os.O_CREAT, root=root or path.parent)
    except OSError as exc:
        raise AgentSessionError(f'Cannot lock the journal of session "{session_id}": {exc}') from None
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        owner = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
        os.close(fd)
        raise AgentSessionError(
            f'Session "{session_id}" is open in another process (pid {owner}), which writes its journal — '
            "disconnect it there first, or connect with a fresh session."
        ) from None
    except OSError:
        os.close(fd)
        raise
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


PROCESS_LOCKS = ProcessLocks()

# ``struct flock`` on Linux: l_type, l_whence (short), l_start, l_len (off_t), l_pid (pid_t).
_FLOCK = "hhqqi"


def lock_owner(path: Path, process: ProcessLocks = PROCESS_LOCKS) -> int | None:
    """The pid of another process that holds the journal's lock (its session is open there), else None.

    Asked without taking the lock (``F_GETLK``: a probe that took it would refuse that process's own
    reconnect for a moment), and never for a journal this process holds: closing any descriptor of the
    lock file would drop this process's ``lockf`` lock. Where ``F_GETLK``'s layout is not Linux's, the
    pid the holder wrote into the file is used if that process is alive.
    """
    if process.holds_file(path):
        return None
    try:  # never through a link, never blocking on a FIFO planted there
        fd = os.open(_lock_path(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None  # no lock file (never opened for writing), or a link
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        if sys.platform.startswith("linux"):
            query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
            answer = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, query))
            held = answer[0] != fcntl.F_UNLCK
            return int(answer[4]) if held and answer[4] else None
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)
    pid = int(text) if text.isdigit() else None
    if pid is None or pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return pid


def _in_use(handle: JournalUser | None) -> bool:
    return handle is not None and handle.journal_in_use


class JournalLocks:
    """The journal locks and users of one ``JournalFiles``: what it holds, and which handle uses what."""

    def __init__(self, process: ProcessLocks = PROCESS_LOCKS, *, root: Path | None = None) -> None:
        self._process = process
        self.root = root  # where the lock files' folders are checked from (the data folder)
        self._held: set[Path] = set()
        self._users: dict[Path, weakref.ref[Any]] = {}  # journal path -> the handle last connected to it
        self._connecting: set[Path] = set()  # journals a connect of this holder is resuming right now

    def acquire(self, path: Path, session_id: str) -> None:
        """Hold the journal of ``session_id``; raises ``AgentSessionError`` if another process writes it."""
        if path not in self._held:
            self._process.acquire(path, session_id, self)
            self._held.add(path)

    def release(self, path: Path) -> None:
        if path in self._held:
            self._held.discard(path)
            self._process.release(path, self)

    def release_all(self) -> None:
        for path in list(self._held):
            self.release(path)

    def holds(self, path: Path) -> bool:
        return path in self._held

    def user(self, path: Path) -> JournalUser | None:
        ref = self._users.get(path)
        return ref() if ref is not None else None

    def is_connecting(self, path: Path) -> bool:
        return path in self._connecting

    def claim(self, path: Path, session_id: str, handle: JournalUser, *, refuse: bool = True) -> None:
        """Note ``handle`` as the one using the journal at ``path``. With ``refuse``, raise
        ``AgentSessionError`` instead while another handle of this process has it open or connecting."""
        if refuse:
            for locks in {self, *self._process.parties(path)}:
                other = locks.user(path)
                if other is not handle and (locks.is_connecting(path) or _in_use(other)):
                    connecting = locks.is_connecting(path)
                    which = (
                        "a connect in progress"
                        if connecting
                        else getattr(other, "id", "") or "another handle"
                    )
                    raise AgentSessionError(
                        f'Session "{session_id}" is already open in this kernel ({which}) '
                        "— use that handle, or close it first (await handle.aclose() or %silo disconnect), "
                        "or connect with a fresh session."
                    )
        self._users[path] = weakref.ref(handle)
        self._process.join(path, self)

    @contextlib.contextmanager
    def connecting(self, path: Path) -> Iterator[None]:
        """While a connect resumes the session of ``path``: another ``claim`` of it is refused."""
        self._connecting.add(path)
        self._process.join(path, self)
        try:
            yield
        finally:
            self._connecting.discard(path)

    def live_state(self) -> tuple[set[Path], set[Path]]:
        """(journals held, connects in progress): what the tests' leak check reads."""
        return set(self._held), set(self._connecting)
