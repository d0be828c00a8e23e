"""One process writes a session's journal at a time: an advisory lock beside the journal file.

- Two kernels connected to the same session would interleave their appends (and a load's atomic rewrite
  would drop the other's lines), so the second connect is refused with a clear error instead.
- ``lockf`` (a POSIX record lock: not inherited by a ``fork()``ed child, unlike ``flock``) on
  ``<journal>.lock``, which also records the holder's pid for the message. The lock is
  per process and reference-counted here, so the same kernel reconnecting (a new handle while the old
  one is still closing) never blocks itself. It goes away with the process, even on SIGKILL.
- Within one process the lock cannot tell two handles apart, so handles are noted too (``claim``, weakly):
  resuming a session that another handle of this kernel still has open (connected or connecting, not
  disposed) is refused the same way; a disposed handle, or one whose agent is gone, never blocks. A
  connect in progress has no agent connection yet: it is noted while it runs (``connecting``), so two
  simultaneous connects to one session cannot both go through.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from silo_nb.sessions.errors import AgentSessionError
from silo_nb.sessions.storage import ensure_private_dir

__all__ = ["acquire", "claim", "connecting", "release"]

_HELD: dict[Path, list[int]] = {}  # journal path -> [lock fd, holders in this process]
_USERS: dict[Path, weakref.ref[Any]] = {}  # journal path -> the session handle last connected to it
_CONNECTING: set[Path] = set()  # journals a connect of this process is resuming right now


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def acquire(path: Path, session_id: str) -> None:
    """Hold the journal of ``session_id``; raises ``AgentSessionError`` if another process writes it."""
    held = _HELD.get(path)
    if held is not None:
        held[1] += 1
        return
    ensure_private_dir(path.parent)
    fd = os.open(_lock_path(path), os.O_RDWR | os.O_CREAT, 0o600)
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
    _HELD[path] = [fd, 1]


def release(path: Path) -> None:
    held = _HELD.get(path)
    if held is None:
        return
    held[1] -= 1
    if held[1] <= 0:
        del _HELD[path]
        os.close(held[0])  # closing the descriptor drops the lock


def _in_use(handle: Any) -> bool:
    # Connected or connecting (its agent connection open) and not disposed: it may still write.
    connection = getattr(handle, "_connection", None)
    return not handle.disposed and connection is not None and connection.is_open


def claim(path: Path, session_id: str, handle: Any, *, refuse: bool = True) -> None:
    """Note ``handle`` (an ``AgentSessionHandle``) as the one using the journal at ``path``. With
    ``refuse``, raise ``AgentSessionError`` instead while another handle of this process has it open."""
    other = _USERS[path]() if path in _USERS else None
    if refuse and other is not handle and (path in _CONNECTING or (other is not None and _in_use(other))):
        which = "a connect in progress" if path in _CONNECTING else getattr(other, "id", "another handle")
        raise AgentSessionError(
            f'Session "{session_id}" is already open in this kernel ({which}) — use that handle, or '
            "close it first (await handle.aclose() or %silo disconnect), or connect with a fresh session."
        )
    _USERS[path] = weakref.ref(handle)


@contextlib.contextmanager
def connecting(path: Path) -> Iterator[None]:
    """While a connect resumes the session of ``path``: another ``claim`` of it is refused."""
    _CONNECTING.add(path)
    try:
        yield
    finally:
        _CONNECTING.discard(path)
