"""The files silo_nb keeps (journals and their locks, connection records, attachments, run folders): private,
reached without following a symbolic link, and regular.

- A folder is reached from its *root* (the data folder, a run folder, the workspace's ``.silo``) one name
  at a time, each opened with ``O_NOFOLLOW`` relative to the folder above (``openat``): a link planted
  anywhere below the root is refused, never followed. Missing folders are made 0700 whatever the umask.
- The root and every folder below it must be this user's and writable by nobody else: another local user
  who can write a folder can swap or read what is in it. Else :class:`UnsafeFolderError`, one line naming
  the folder, what is wrong and the command that fixes it. (The root's own path may go through links:
  that is the user's choice.)
- Files are opened relative to their folder's descriptor with ``O_NOFOLLOW | O_NONBLOCK`` (a FIFO never
  blocks the opener; a link fails) and checked with ``fstat``: anything but a regular file is refused
  (:class:`NotRegularFileError`). New files are 0600; an existing file of ours that is looser is made 0600.
- A file the *user* names (an export, a report, their profiles file) has no root: :func:`write_named_file`
  writes it whole or not at all, a link at its path replaced, never followed.
- Both errors are ``PermissionError``s (``OSError``): whoever already copes with a file that cannot be
  opened copes with these, and their message is the one line to show.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "NotRegularFileError",
    "UnsafeFileError",
    "UnsafeFolderError",
    "check_folder",
    "folder_fd",
    "open_file",
    "read_small_file",
    "remove_file",
    "replace_file",
    "write_named_file",
]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeFileError(PermissionError):
    """A folder or file silo_nb will not use; the message is one line saying why and what to do."""


class UnsafeFolderError(UnsafeFileError):
    """A folder that is another user's, or that others may write."""


class NotRegularFileError(UnsafeFileError):
    """A path that is a symbolic link, a FIFO, a socket, a device or a folder where a file belongs."""


def _check(fd: int, folder: Path, tighten: bool = False) -> None:
    info = os.fstat(fd)
    if tighten and info.st_uid == os.geteuid() and info.st_mode & 0o077:
        os.fchmod(fd, 0o700)  # a folder of ours left loose (an older version, a umask): made private
        return
    if info.st_uid != os.geteuid():
        raise UnsafeFolderError(
            f"{folder} belongs to another user (uid {info.st_uid}): silo_nb keeps transcripts only in "
            "folders of yours — set SILO_NB_DATA_DIR (or the run's folder) to a folder you own."
        )
    if info.st_mode & 0o022:
        raise UnsafeFolderError(
            f"{folder} is writable by other users (mode {stat.S_IMODE(info.st_mode):04o}): silo_nb keeps "
            f"transcripts only in folders nobody else can change — run chmod 700 {folder}"
        )


def _open_root(root: Path, create: bool, tighten: bool) -> int:
    if create and not root.exists():
        missing: list[Path] = []
        current = root
        while not current.exists():
            missing.append(current)
            current = current.parent
        for folder in reversed(missing):
            with contextlib.suppress(FileExistsError):
                folder.mkdir(mode=0o700)
            os.chmod(folder, 0o700)  # whatever the umask
    fd = os.open(root, _DIR_FLAGS)
    try:
        _check(fd, root, tighten)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_child(parent: int, name: str, where: Path, create: bool, tighten: bool) -> int:
    try:
        fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=parent)
        fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o700)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotRegularFileError(
                f"{where} is not a plain folder (a symbolic link or a file): silo_nb follows no links in "
                "its folders — remove it."
            ) from None
        raise
    try:
        _check(fd, where, tighten)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def folder_fd(folder: Path, root: Path, *, create: bool = True, tighten: bool = False) -> Iterator[int]:
    """A descriptor of ``folder`` (``root`` or a folder below it), reached as the module says; with
    ``tighten``, a folder of this user's that others may use is made 0700 instead of refused."""
    try:
        parts = folder.relative_to(root).parts
    except ValueError:
        raise ValueError(f"{folder} is not inside {root}") from None
    fd = _open_root(root, create, tighten)
    where = root
    try:
        for name in parts:
            where = where / name
            child = _open_child(fd, name, where, create, tighten)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def check_folder(folder: Path, root: Path) -> None:
    """Make ``folder`` (0700, with what is missing between it and ``root``) and check the whole way."""
    with folder_fd(folder, root):
        pass


def _regular(fd: int, path: Path) -> int:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotRegularFileError(
            f"{path} is not a regular file (a FIFO, socket, device or folder): silo_nb opens nothing "
            "else — remove it."
        )
    if info.st_uid == os.geteuid() and info.st_mode & 0o077:
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o600)
    return fd


def _open_at(dir_fd: int | None, path: Path, flags: int) -> int:
    name: str | Path = path.name if dir_fd is not None else path
    try:
        fd = os.open(name, flags | _FILE_FLAGS, 0o600, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFileError(
                f"{path} is a symbolic link: silo_nb follows no links for its files — remove it."
            ) from None
        if exc.errno == errno.ENXIO:  # a FIFO opened for writing, with no reader: refused, not waited on
            raise NotRegularFileError(f"{path} is not a regular file (a FIFO): remove it.") from None
        raise
    return _regular(fd, path)


def open_file(path: Path, flags: int, *, root: Path | None) -> int:
    """A descriptor of the regular file ``path`` (``os.open`` flags; created 0600 with ``O_CREAT``), never
    through a link. With ``root`` its folder is reached and checked from there; without, only the file
    itself is checked (a path the user named). Raises ``OSError`` (:class:`UnsafeFileError` included)."""
    if root is None:
        return _open_at(None, path, flags)
    with folder_fd(path.parent, root, create=bool(flags & os.O_CREAT)) as parent:
        return _open_at(parent, path, flags)


def read_small_file(path: Path, *, root: Path | None, limit: int) -> bytes:
    """The bytes of a small file (a record, a run's description); ``OSError`` past ``limit`` bytes."""
    fd = open_file(path, os.O_RDONLY, root=root)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise OSError(errno.EFBIG, f"{path} is {size:,} bytes, over the {limit:,} bytes expected")
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            size -= len(chunk)
            if size < -limit:
                raise OSError(errno.EFBIG, f"{path} grew past {limit:,} bytes while read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def replace_file(
    path: Path, data: bytes | bytearray, *, root: Path, tighten: bool = False, durable: bool = False
) -> None:
    """Write ``path`` whole and atomically (a 0600 temporary file in its folder, then a rename over it:
    a link at ``path`` is replaced, never followed); ``durable``: the file and its folder synced too."""
    with folder_fd(path.parent, root, tighten=tighten) as parent:
        temp = f".{path.name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE_FLAGS, 0o600, dir_fd=parent)
        try:
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    if written <= 0:
                        raise OSError(errno.EIO, f"could not write {path}")
                    view = view[written:]
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, path.name, src_dir_fd=parent, dst_dir_fd=parent)
            if durable:
                os.fsync(parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            raise


def remove_file(path: Path, *, root: Path) -> bool:
    """Unlink ``path`` (a link itself, never its target); False when there was nothing."""
    try:
        with folder_fd(path.parent, root, create=False) as parent:
            os.unlink(path.name, dir_fd=parent)
    except FileNotFoundError:
        return False
    return True


def write_named_file(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Write ``path`` — a file the user named, anywhere — whole or not at all: a temporary file in its
    folder, then a rename over it (a link at ``path`` is replaced, never followed). A regular file already
    there keeps the mode its owner gave it; a new one is 0600 (it may hold prompts). ``durable``: the file
    and its folder synced too."""
    try:
        info = os.lstat(path)
        mode = stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else 0o600
    except FileNotFoundError:
        mode = 0o600
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE_FLAGS, 0o600)
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    if durable:
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
