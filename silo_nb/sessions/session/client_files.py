"""The agent reads and writes files through the client (ACP ``fs/read_text_file``, ``fs/write_text_file``).

- Only inside the session's folders: its ``cwd`` and the profile's ``additional_directories``, compared
  after resolving symlinks. The resolved path is then opened component by component from the folder with
  ``O_NOFOLLOW`` (``openat``-style), so a symlink swapped in after the check is refused, not followed.
  Nothing that is not a regular file (a FIFO, a device, ``/proc``) is read or replaced, nor a file with
  more than one hard link (another name for it may be outside the folders). A path whose links cannot be
  followed (one swapped while it is resolved, a loop) is refused in one line, like any other.
- Reads take ``line`` (1-based) and ``limit`` (lines); files over the profile's ``fs_max_bytes`` are
  refused, saying the cap. A missing file is ACP's -32002.
- Writes are atomic (a temporary file in the same folder, then a rename; the old file's mode kept; a new
  file gets the usual mode under the umask), capped at ``fs_max_bytes``, and refuse ``.ipynb`` files
  unless the profile's ``fs_write_notebooks`` allows it (a raw write under an open notebook corrupts it).
- A write to a file that runs code by itself (``.git/config``, an executable hook, ``ipython_config.py``…:
  the list and why is ``sessions/code_targets.py``) asks the user first, through the session's permission
  desk: kind ``edit``, the title saying why, the diff as its content, options "Write it" / "Don't write".
  Nobody to ask, a rejection or a cancel refuses it, the file untouched; a policy allows it only by a rule
  naming ``code`` (``experiments/policy.py``).
- Every write is a ``file_write`` line (path, the old and new text, bounded: :data:`JOURNAL_TEXT_LIMIT`),
  journaled and shown in the turn as a file edit with its diff. Reads are not recorded.
- A refusal is a JSON-RPC error whose one line says why and what is allowed; the profile's ``fs_read`` /
  ``fs_write`` turn each off (not advertised in ``initialize`` then, and refused if asked anyway).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from silo_nb.acp import AcpRpcError
from silo_nb.model import (
    AgentSessionUpdate,
    FileWriteLine,
)
from silo_nb.sessions.code_targets import runs_code

__all__ = ["JOURNAL_TEXT_LIMIT", "WRITE_OPTIONS", "Asker", "ClientFiles"]

log = logging.getLogger("silo_nb.sessions")

INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002
JOURNAL_TEXT_LIMIT = 1_000_000  # characters of a write's old and new text kept in its journal line
_PSEUDO = ("/proc", "/sys", "/dev")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
WRITE_OPTIONS = (
    {"optionId": "write", "name": "Write it", "kind": "allow_once"},
    {"optionId": "skip", "name": "Don't write", "kind": "reject_once"},
)
# Asks the user (the tool call and options in ACP's shape): the chosen option id, None if nobody allowed it.
Asker = Callable[[Mapping[str, Any], Sequence[Mapping[str, Any]]], Awaitable[str | None]]


def _refuse(message: str, code: int = INVALID_PARAMS) -> AcpRpcError:
    return AcpRpcError(code, message)


def _size_text(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB" if size >= 1024 * 1024 else f"{size / 1024:.1f} KB"


class ClientFiles:
    """One session's file requests (see the module docstring)."""

    def __init__(
        self,
        *,
        folders: tuple[Path, ...],
        read: bool,
        write: bool,
        notebooks: bool,
        max_bytes: int,
        record: Callable[[AgentSessionUpdate], None],
        ask: Asker | None = None,
    ) -> None:
        self.folders = tuple(folder.resolve() for folder in folders)
        self.can_read, self.can_write = read, write
        self._notebooks, self._max_bytes, self._record = notebooks, max_bytes, record
        self._ask = ask  # None: nobody to ask, so a write that runs code is refused

    # -- where ----------------------------------------------------------------------------------

    def _allowed(self) -> str:
        return ", ".join(str(folder) for folder in self.folders)

    def locate(self, raw_path: Any) -> tuple[Path, Path]:
        """(the folder, the resolved path inside it) for the agent's ``path``, or an error saying why."""
        if not isinstance(raw_path, str) or not raw_path or "\0" in raw_path:
            raise _refuse("path must be an absolute path (a non-empty string without NUL)")
        path = Path(raw_path)
        if not path.is_absolute():
            raise _refuse(f"path must be absolute (got {raw_path!r}); allowed folders: {self._allowed()}")
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: a loop, on Python 3.11
            reason = getattr(exc, "strerror", None) or str(exc)
            raise _refuse(
                f"{raw_path}: its links could not be followed (one changed while it was resolved, or they "
                f"loop: {reason}); name the file itself"
            ) from None
        if any(resolved == Path(p) or Path(p) in resolved.parents for p in _PSEUDO):
            raise _refuse(f"{raw_path} is not a regular file; allowed folders: {self._allowed()}")
        for folder in self.folders:
            if resolved == folder or folder in resolved.parents:
                return folder, resolved
        raise _refuse(f"{raw_path} is outside the session's folders; allowed: {self._allowed()}")

    @contextlib.contextmanager
    def _parent(self, folder: Path, path: Path) -> Iterator[int]:
        """A descriptor of ``path``'s folder, opened from ``folder`` one component at a time, no link
        followed (``path`` is resolved: a link there now was swapped in after the check)."""
        fd = -1
        try:
            fd = os.open(folder, _DIR_FLAGS)
            for part in path.relative_to(folder).parts[:-1]:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
            yield fd
        except OSError as exc:
            raise _refuse(f"{path}: {exc.strerror or exc} (a folder on the way is not one)") from None
        finally:
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)

    # -- fs/read_text_file ------------------------------------------------------------------------

    async def read(self, params: Any) -> dict[str, Any]:
        if not self.can_read:
            raise _refuse("this session does not let the agent read files (fs_read = false in the profile)")
        args = params if isinstance(params, dict) else {}
        folder, path = self.locate(args.get("path"))
        line, limit = args.get("line"), args.get("limit")
        current = self._current(folder, path)
        if current is None:
            raise _refuse(f"{path}: no such file", RESOURCE_NOT_FOUND)
        text = current[0]
        line = line if type(line) is int else None
        limit = limit if type(limit) is int and limit >= 0 else None
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max(line - 1, 0) if line is not None else 0
            text = "".join(lines[start : None if limit is None else start + limit])
        return {"content": text}

    def _current(self, folder: Path, path: Path) -> tuple[str, int] | None:
        """The file's text (UTF-8; undecodable bytes replaced) and ``st_mode``, None when it does not
        exist."""
        if path == folder:
            raise _refuse(f"{path} is a folder, not a file")
        with self._parent(folder, path) as parent:
            try:
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # no wait on a FIFO
                fd = os.open(path.name, flags, dir_fd=parent)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise _refuse(f"{path}: {exc.strerror or exc}") from None
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise _refuse(f"{path} is not a regular file")
                _refuse_links(path, info)
                if info.st_size > self._max_bytes:
                    raise _refuse(
                        f"{path} is {_size_text(info.st_size)}; the agent may read files up to "
                        f"{_size_text(self._max_bytes)} (fs_max_bytes in the profile)"
                    )
                data = os.read(fd, self._max_bytes + 1)
            finally:
                os.close(fd)
        return data[: self._max_bytes].decode("utf-8", "replace"), info.st_mode

    # -- fs/write_text_file -----------------------------------------------------------------------

    async def write(self, params: Any) -> dict[str, Any]:
        if not self.can_write:
            raise _refuse("this session does not let the agent write files (fs_write = false in the profile)")
        args = params if isinstance(params, dict) else {}
        content = args.get("content")
        if not isinstance(content, str):
            raise _refuse("content must be a string")
        folder, path = self.locate(args.get("path"))
        if path.suffix.lower() == ".ipynb" and not self._notebooks:
            raise _refuse(
                f"{path} is a notebook: a raw write under an open notebook corrupts it — edit it through "
                "Jupyter (or set fs_write_notebooks = true in the profile)"
            )
        data = content.encode("utf-8", "surrogatepass")
        if len(data) > self._max_bytes:
            raise _refuse(
                f"the content is {_size_text(len(data))}; the agent may write files up to "
                f"{_size_text(self._max_bytes)} (fs_max_bytes in the profile)"
            )
        current = self._current(folder, path)
        why = runs_code(path, current[1] if current is not None else None)
        if why is not None:
            await self._permit(folder, path, why, current[0] if current is not None else None, content)
            current = self._current(folder, path)  # as it is after the wait: the journal's old text
        self._replace(folder, path, data, permitted=why is not None)
        self._record(_write_line(path, current[0] if current is not None else None, content))
        return {}

    async def _permit(self, folder: Path, path: Path, why: str, old: str | None, new: str) -> None:
        """Ask the user to allow a write that runs code; refuse it unless they choose "Write it"."""
        title = f"Write {path.relative_to(folder).as_posix()}: {why}"
        raw_input: dict[str, Any] = {"path": str(path), "runsCode": why}
        diff: dict[str, Any] = {"type": "diff", "path": str(path), "newText": new}
        if old is not None:
            diff["oldText"] = old
        too_large = max(len(old or ""), len(new)) > JOURNAL_TEXT_LIMIT
        if too_large:
            raw_input["tooLarge"] = True  # the request is journaled: no diff of megabytes in it
        call = {
            "toolCallId": f"silo-write-{uuid.uuid4().hex[:12]}",
            "title": title,
            "kind": "edit",
            "status": "pending",
            "rawInput": raw_input,
            "locations": [{"path": str(path)}],
            "content": [] if too_large else [diff],
        }
        choice = await self._ask(call, WRITE_OPTIONS) if self._ask is not None else None
        if choice != "write":
            said = "rejected it" if choice is not None else "did not allow it (no answer, or nobody to ask)"
            raise _refuse(
                f"{path} was not written: {why}, so the write needs the user's permission and the user "
                f"{said}; the file is as it was"
            )

    def _replace(self, folder: Path, path: Path, data: bytes, *, permitted: bool) -> None:
        with self._parent(folder, path) as parent:
            mode = None
            with contextlib.suppress(FileNotFoundError):
                info = os.stat(path.name, dir_fd=parent, follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode):
                    raise _refuse(f"{path} is not a regular file")
                _refuse_links(path, info)
                if not permitted and (why := runs_code(path, info.st_mode)) is not None:
                    raise _refuse(f"{path} was not written: it changed meanwhile and now {why}; try again")
                mode = stat.S_IMODE(info.st_mode)
            temp = f".{path.name}.silo-{os.getpid()}-{id(data):x}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(temp, flags, 0o666, dir_fd=parent)
            except OSError as exc:
                raise _refuse(f"{path}: {exc.strerror or exc}") from None
            try:
                try:
                    if mode is not None:
                        os.fchmod(fd, mode)
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
                os.replace(temp, path.name, src_dir_fd=parent, dst_dir_fd=parent)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=parent)
                reason = "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
                raise _refuse(f"could not write {path}: {reason}; the file is as it was", -32603) from None


def _refuse_links(path: Path, info: os.stat_result) -> None:
    """A file with another name may be one outside the folders: reading it would read that file."""
    if info.st_nlink > 1:
        raise _refuse(
            f"{path} has {info.st_nlink} hard links (another name for it may be outside the session's "
            "folders); the agent reads and writes only files with one — ask the user to replace it with "
            "a copy"
        )


def _bounded(text: str | None) -> tuple[str | None, bool]:
    if text is None or len(text) <= JOURNAL_TEXT_LIMIT:
        return text, False
    return None, True


def _write_line(path: Path, old: str | None, new: str) -> AgentSessionUpdate:
    old_kept, old_cut = _bounded(old)
    new_kept, new_cut = _bounded(new)
    fields: dict[str, Any] = {"path": str(path), "created": old is None}
    if old_kept is not None:
        fields["oldText"] = old_kept
    if new_kept is not None:
        fields["newText"] = new_kept
    if old_cut or new_cut:
        fields["tooLarge"] = True  # the texts are not kept: the diff says so
        fields["sizes"] = [len(old or ""), len(new)]
    return FileWriteLine.written(fields)
