"""Private Unix sockets for silo_nb's local channels (the kernel tools' socket in the kernel, the notebook
channel in the Jupyter server): no TCP port, a fresh 0700 folder nobody else can swap, peers checked.

- :func:`socket_folder`: in ``$XDG_RUNTIME_DIR`` when it is ours alone (one of another user's, or one
  others may write, is passed over), else in the temp folder when nobody else can swap what is in it;
  ``PermissionError`` when neither will do. It first sweeps this user's folders of the same prefix that a
  killed process left (:func:`sweep_stale_folders`).
- :func:`same_user`: the peer of a connection is this user (``SO_PEERCRED`` where the OS gives it).

A shared piece at the package root: the kernel tools and the server extension both use it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import socket
import stat
import struct
import tempfile
import time

__all__ = ["STALE_AFTER", "same_user", "socket_folder", "sweep_stale_folders"]

_PEER = struct.Struct("3i")


def _ours_or_root_and_shut(info: os.stat_result) -> bool:
    """Nobody else can swap what is in it: ours or root's, and writable by no one else unless sticky (in
    ``/tmp`` nobody may rename another's folder)."""
    return info.st_uid in (0, os.getuid()) and (not info.st_mode & 0o022 or bool(info.st_mode & stat.S_ISVTX))


def _safe_base(path: str, *, ours_alone: bool) -> str | None:
    """``path`` resolved, if the socket's folder may be made in it: a folder that is ours alone (XDG's
    runtime folder: ours, 0700) or, for the temp folder, one that nobody else can swap; and nobody else
    can swap any folder above it either. Else None."""
    real = os.path.realpath(path)
    above: list[str] = []
    parent = os.path.dirname(real)
    while not above or above[-1] != parent:
        above.append(parent)
        parent = os.path.dirname(parent)
    try:
        info = os.stat(real)
        if ours_alone:
            fits = info.st_uid == os.getuid() and not info.st_mode & 0o077
        else:
            fits = _ours_or_root_and_shut(info)
        safe = stat.S_ISDIR(info.st_mode) and fits and all(_ours_or_root_and_shut(os.stat(p)) for p in above)
    except OSError:
        return None
    return real if safe else None


def socket_folder(prefix: str) -> str:
    """A fresh 0700 folder (named ``prefix…``) for a socket: in ``$XDG_RUNTIME_DIR`` when it is ours alone
    (issue 28: one of another user's, or one others may write, is passed over), else in the temp folder
    when nobody else can swap what is in it; ``PermissionError`` (an ``OSError``) when neither will do."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = _safe_base(runtime, ours_alone=True) if runtime else None
    base = base or _safe_base(tempfile.gettempdir(), ours_alone=False)
    if base is None:
        raise PermissionError(
            "no safe folder for a silo_nb socket: set XDG_RUNTIME_DIR to a folder of yours (mode"
            " 0700), or TMPDIR to one nobody else can write"
        )
    sweep_stale_folders(base, prefix)
    folder = tempfile.mkdtemp(prefix=prefix, dir=base)  # 0700
    if len(folder) > 90 and _safe_base("/tmp", ours_alone=False):  # a socket path must fit in sun_path
        shutil.rmtree(folder, ignore_errors=True)
        folder = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    return folder


STALE_AFTER = 60.0  # seconds: a folder with no socket yet may be another kernel's, between mkdtemp and bind
_SWEEP_MAX = 200  # folders looked at per start: bounded whatever the temp folder holds


def sweep_stale_folders(base: str, prefix: str) -> int:
    """Remove this user's socket folders in ``base`` left by kernels that died without closing (a killed
    kernel runs no cleanup): a socket nobody listens on (the connect is refused), or no socket a minute
    after the folder was made. A live kernel's folder answers the connect and stays. Returns how many went;
    never raises."""
    removed = 0
    try:
        with os.scandir(base) as entries:
            names = [e.path for e in itertools.islice(entries, 10_000) if e.name.startswith(prefix)]
    except OSError:
        return 0
    for folder in names[:_SWEEP_MAX]:
        if _is_stale(folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def _is_stale(folder: str) -> bool:
    try:
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return False  # a link, a file, or another user's: never touched
        path = os.path.join(folder, "s")
        if not os.path.exists(path):
            return time.time() - info.st_mtime > STALE_AFTER
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(0.5)
            probe.connect(path)
        return False  # somebody listens: a live kernel's
    except (ConnectionRefusedError, FileNotFoundError):
        return True
    except OSError:
        return False


def same_user(writer: asyncio.StreamWriter) -> bool:
    """The connection's peer is this user (True where the OS gives no peer credentials: the folder's
    mode and the token guard it)."""
    sock = writer.get_extra_info("socket")
    option = getattr(socket, "SO_PEERCRED", None)
    if sock is None or option is None:
        return True
    _pid, uid, _gid = _PEER.unpack(sock.getsockopt(socket.SOL_SOCKET, option, _PEER.size))
    return bool(uid == os.getuid())
