"""Checkpoints of the session's folders, one at each turn's start and end, and the undo of a turn's files
(issue 32: the ``files`` part of a turn's checkpoint).

- :meth:`FileCheckpoints.capture` walks the folders (cwd first) and writes a manifest
  (``file_manifests.py``), ``turn-<N>-<start|end>.json``: each file's path → size, mtime, mode and the
  sha256 of its content; a symbolic link is recorded as a link (its target), never followed. A file is read
  only when its stat (size, mtime, ctime, inode) differs from the previous manifest's, so an unchanged folder
  costs a walk and its stats; one changed within the last seconds before a capture is read again next time
  (a change in the same clock tick keeps the stat: git's "racy" files).
- Contents are kept once per sha, appended to one pack per capture (``packs/<name>.pack`` and its index
  ``<name>.idx``, written after the pack): creating a file costs more than reading a small one, so a first
  capture of 2,000 files writes two files, not 2,000.
- Bounded: ``.git``, ``node_modules``, ``__pycache__``, ``.ipynb_checkpoints``, ``.venv``/``venv``, the store
  and silo_nb's data folder are skipped, and so are notebooks (``*.ipynb``): an agent's cell edits are undone
  through the open notebook's own model, and rewriting an open notebook's file would fight Jupyter over it.
  Past ``max_files``, a file over ``max_file_bytes`` or a store past ``max_store_bytes``: recorded as "not
  checkpointed" with why, so the undo lists it.
- Never raises into the turn: a capture that fails (a full disk, a permission) is logged and remembered, and
  the undo of that turn says ``not checkpointed — <why>``.
- :meth:`FileCheckpoints.undo_turn` compares the turn's start and end: each file it created, changed or
  deleted is one :class:`~silo_nb.model.UndoItem`. A file that is not now what the turn left (the user
  changed it since) is refused and never overwritten; else it is put back atomically (a temporary file, then
  a rename; the mode it had) or removed (the turn created it). Undoing twice is harmless: a file already as
  before the turn is said so. A turn with no end manifest (still running, or the kernel stopped during it) is
  compared with the folders as they are now, and each item says so.
- The store (``<journal stem>.checkpoints/`` beside the session's journal, 0700) lives as long as the
  journal: a session resumed after a kernel restart finds it, so its turns' files can still be undone.
- All the file work runs in a worker thread (``anyio.to_thread``), one capture or undo at a time.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Literal

import anyio
import anyio.to_thread
import orjson

from silo_nb.model import AgentSessionUpdate, UndoItem, UndoPart
from silo_nb.sessions.safe_files import write_named_file
from silo_nb.sessions.session.file_manifests import (
    NOT_A_FILE,
    FileEntry,
    FileManifest,
    FolderWalk,
    same_content,
)

__all__ = [
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_STORE_BYTES",
    "FileCheckpoints",
]

log = logging.getLogger("silo_nb.sessions")

DEFAULT_MAX_FILES = 20_000
DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_STORE_BYTES = 256 * 1024 * 1024  # per session: past it a changed file is listed, not kept
_RACY_NS = 2_000_000_000  # a file changed this close before a capture is read again at the next one
_CHUNK = 1 << 20
_MANIFEST = re.compile(r"^turn-(\d+)-(start|end)\.json$")
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_SAID_REFUSED = "changed since the turn — left as it is (your change wins)"

Phase = Literal["start", "end"]
_Where = tuple[str, int, int]  # (pack name, offset, length) of one content


class _PackWriter:
    """The contents one capture adds to the store: appended to one pack file, indexed when it is done."""

    def __init__(self, packs: Path, name: str) -> None:
        self.packs = packs
        self.name = name
        self.added: dict[str, _Where] = {}
        self.size = 0
        self._fd = -1
        self._temp = packs / f".{name}.pack.tmp"

    def add(self, sha: str, data: bytes) -> None:
        if self._fd < 0:
            self._fd = os.open(self._temp, _NEW_FLAGS, 0o600)
        try:
            _write_all(self._fd, data)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self.size)  # the pack holds whole contents only
            raise
        self.added[sha] = (self.name, self.size, len(data))
        self.size += len(data)

    def finish(self) -> dict[str, _Where]:
        """Close the pack, then write its index: what it holds is in the store from now on."""
        if self._fd < 0:
            return {}
        os.close(self._fd)
        self._fd = -1
        if not self.added:
            os.unlink(self._temp)
            return {}
        pack = self.packs / f"{self.name}.pack"
        os.replace(self._temp, pack)
        index = {sha: [offset, length] for sha, (_, offset, length) in self.added.items()}
        try:
            write_named_file(self.packs / f"{self.name}.idx", orjson.dumps(index))
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(pack)  # a pack without its index is never read
            raise
        return self.added

    def abandon(self) -> None:
        """Let go of an unfinished pack (a capture that failed; after :meth:`finish`, nothing is left)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        with contextlib.suppress(OSError):
            os.unlink(self._temp)


class FileCheckpoints:
    """The file checkpoints of one session: manifests and contents in ``store`` (see the module docstring).

    ``roots``: the session's folders, cwd first (a folder inside another is walked once, as part of it);
    ``exclude``: folders never walked besides the usual ones (silo_nb's data folder).
    """

    part: UndoPart = "files"

    def __init__(
        self,
        store: Path,
        roots: Sequence[Path],
        *,
        exclude: Sequence[Path] = (),
        max_files: int = DEFAULT_MAX_FILES,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_store_bytes: int = DEFAULT_MAX_STORE_BYTES,
    ) -> None:
        self.store = store
        resolved = list(dict.fromkeys(Path(os.path.realpath(root)) for root in roots))
        self.roots: tuple[Path, ...] = tuple(
            root
            for root in resolved
            if not any(root != other and root.is_relative_to(other) for other in resolved)
        )
        self.max_files = max_files
        self.max_file_bytes = max_file_bytes
        self.max_store_bytes = max_store_bytes
        self._skip = {os.path.realpath(path) for path in (store, *exclude)}
        self._lock = anyio.Lock()
        self._last: tuple[str, FileManifest] | None = None  # the previous capture's (read on first use)
        self._index: dict[str, _Where] | None = None  # sha → where its content is (read on first use)
        self._store_bytes = 0
        self._failures: dict[tuple[int, str], str] = {}  # (turn, phase) → why its capture failed

    @property
    def packs(self) -> Path:
        return self.store / "packs"

    @property
    def manifests(self) -> Path:
        return self.store / "manifests"

    def manifest_path(self, turn: int, phase: Phase) -> Path:
        """The turn's checkpoint: which manifest (``manifests/<hash>.json``) the folders were at then."""
        return self.store / f"turn-{turn}-{phase}.json"

    # -- capture ----------------------------------------------------------------------------------

    async def capture(self, turn: int, phase: Phase) -> None:
        """Checkpoint the folders as they are now as turn ``turn``'s ``phase``; never raises (a failure is
        logged and remembered for the undo)."""
        try:
            async with self._lock:
                await anyio.to_thread.run_sync(self._capture, turn, phase)
        except Exception as exc:
            why = _why(exc)
            self._failures[turn, phase] = f"the checkpoint at the turn's {phase} failed: {why}"
            log.warning("could not checkpoint the session's files (turn %d, %s): %s", turn, phase, why)

    def _capture(self, turn: int, phase: Phase) -> None:
        index = self._open_store()
        previous = self._previous_files()
        pack = _PackWriter(self.packs, f"turn-{turn}-{phase}-{secrets.token_hex(4)}")
        walk = FolderWalk([str(root) for root in self.roots], self._skip, self.max_files)
        now = time.time_ns()
        files: dict[str, FileEntry] = {}
        try:
            for key, path, info in walk:
                files[key] = self._entry(path, info, previous.get(key), now, pack=pack, index=index)
            try:
                index.update(pack.finish())
            except OSError as exc:  # the contents of this capture are not kept: say so for each
                why = f"could not copy it into the checkpoint store: {_why(exc)}"
                files = {
                    key: replace(e, skipped=why) if e.sha256 in pack.added else e for key, e in files.items()
                }
                self._store_bytes -= pack.size
        finally:
            pack.abandon()
        manifest = FileManifest(tuple(map(str, self.roots)), files, tuple(walk.problems))
        name = self._keep_manifest(manifest)
        record = {"version": 1, "turn": turn, "phase": phase, "manifest": name}
        write_named_file(self.manifest_path(turn, phase), orjson.dumps(record))
        self._last = (name, manifest)
        self._failures.pop((turn, phase), None)

    def _keep_manifest(self, manifest: FileManifest) -> str:
        """The name of ``manifest`` in the store, written unless it is the previous one again (a turn that
        changed nothing, the folders between two turns): most turns add a few bytes, not a manifest."""
        if self._last is not None and self._last[1] == manifest:
            return self._last[0]
        data = orjson.dumps(manifest.wire())
        name = hashlib.sha256(data).hexdigest()[:32]
        path = self.manifests / f"{name}.json"
        if not path.exists():
            if self._store_bytes + len(data) > self.max_store_bytes:
                raise OSError(errno.ENOSPC, f"the checkpoint store is full ({_size(self.max_store_bytes)})")
            write_named_file(path, data)
            self._store_bytes += len(data)
        return name

    def _open_store(self) -> dict[str, _Where]:
        """Make the store (0700) and read what its packs hold, once."""
        self.store.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.store, 0o700)
        self.packs.mkdir(mode=0o700, exist_ok=True)
        self.manifests.mkdir(mode=0o700, exist_ok=True)
        if self._index is None:
            with os.scandir(self.manifests) as listing:
                total = sum(e.stat().st_size for e in listing if e.name.endswith(".json"))
            index: dict[str, _Where] = {}
            with os.scandir(self.packs) as listing:
                names = sorted(e.name[:-4] for e in listing if e.name.endswith(".idx"))
            for name in names:
                try:
                    raw = orjson.loads(_read_file(self.packs / f"{name}.idx"))
                    held = {str(sha): (name, int(at), int(length)) for sha, (at, length) in raw.items()}
                    total += os.stat(self.packs / f"{name}.pack").st_size
                except (OSError, ValueError, TypeError, AttributeError) as exc:  # JSONDecodeError: ValueError
                    log.warning("a pack of the file checkpoints cannot be used (%s): %s", name, exc)
                    continue
                for sha, where in held.items():
                    index.setdefault(sha, where)
            self._index, self._store_bytes = index, total
        return self._index

    def _previous_files(self) -> dict[str, FileEntry]:
        """The files of the latest manifest: this process's last capture, or the store's newest."""
        if self._last is None:
            latest = max(self._manifests(), default=None)
            found = self._load_path(self.store / latest[2]) if latest is not None else None
            if found is None:
                return {}
            self._last = found
        return self._last[1].files

    def _manifests(self) -> Iterator[tuple[int, int, str]]:
        with contextlib.suppress(FileNotFoundError), os.scandir(self.store) as listing:
            for entry in listing:
                match = _MANIFEST.match(entry.name)
                if match:
                    yield int(match[1]), 1 if match[2] == "end" else 0, entry.name

    def _entry(
        self,
        path: str,
        info: os.stat_result,
        before: FileEntry | None,
        now: int,
        *,
        pack: _PackWriter | None,
        index: dict[str, _Where],
    ) -> FileEntry:
        """What ``path`` is (its ``lstat``: ``info``), its content read only when its stat differs from
        ``before``'s, and kept (in ``pack``) when it is new to the store."""
        if stat.S_ISLNK(info.st_mode):
            try:
                return FileEntry(link=os.readlink(path))
            except OSError as exc:
                return FileEntry(skipped=f"could not read the link: {_why(exc)}")
        racy = info.st_mtime_ns >= now - _RACY_NS
        if info.st_size > self.max_file_bytes:
            return FileEntry.of_file(info, skipped=_over_limit(self.max_file_bytes), racy=racy)
        if (
            before is not None
            and before.sha256
            and not before.skipped
            and not before.racy
            and before.same_stat(info)
            and (pack is None or before.sha256 in index)
        ):
            return FileEntry.of_file(info, before.sha256, racy=racy)
        try:
            data = self._read(path)
        except OSError as exc:
            return FileEntry.of_file(info, skipped=f"could not read it: {_why(exc)}", racy=racy)
        if data is None:
            return FileEntry.of_file(info, skipped=_over_limit(self.max_file_bytes), racy=racy)
        sha = hashlib.sha256(data).hexdigest()
        if pack is None or sha in index or sha in pack.added:
            return FileEntry.of_file(info, sha, racy=racy)
        if self._store_bytes + len(data) > self.max_store_bytes:
            full = f"the checkpoint store is full ({_size(self.max_store_bytes)}, max_store_bytes)"
            return FileEntry.of_file(info, sha, skipped=full, racy=racy)
        try:
            pack.add(sha, data)
        except OSError as exc:
            why = f"could not copy it into the checkpoint store: {_why(exc)}"
            return FileEntry.of_file(info, sha, skipped=why, racy=racy)
        self._store_bytes += len(data)
        return FileEntry.of_file(info, sha, racy=racy)

    def _read(self, path: str) -> bytes | None:
        """The file's bytes (None past ``max_file_bytes``: it grew since its stat)."""
        fd = os.open(path, _FILE_FLAGS)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file")
            chunks: list[bytes] = []
            read = 0
            while chunk := os.read(fd, _CHUNK):
                chunks.append(chunk)
                read += len(chunk)
                if read > self.max_file_bytes:
                    return None
        finally:
            os.close(fd)
        return b"".join(chunks)

    # -- undo -------------------------------------------------------------------------------------

    async def undo_turn(self, turn: int, updates: Sequence[AgentSessionUpdate] = ()) -> list[UndoItem]:
        """Put back the files turn ``turn`` created, changed or deleted (see the module docstring): one item
        per file, restored or not and why. Never raises: a failure is an item. (``updates``, the turn's
        journal, is the undo parts' common signature: the checkpoints alone say what changed.)"""
        try:
            async with self._lock:
                return await anyio.to_thread.run_sync(self._undo, turn)
        except Exception as exc:
            log.warning("could not undo the files of turn %d", turn, exc_info=True)
            return [UndoItem("files", f"turn {turn}", False, f"not restored — the undo failed: {_why(exc)}")]

    def _undo(self, turn: int) -> list[UndoItem]:
        start = self._load(turn, "start")
        if start is None:
            why = self._failures.get((turn, "start")) or "no checkpoint of the turn's start was kept"
            return [UndoItem("files", self._shown_roots(), False, f"not checkpointed — {why}")]
        index = self._open_store()
        end = self._load(turn, "end")
        note = ""
        if end is None:
            why = self._failures.get((turn, "end")) or (
                "the turn has no end checkpoint — still running, or the kernel stopped during it"
            )
            note = f" ({why}: compared with the folders as they are now)"
            end = self._scan_now(start, index)
        items = [
            UndoItem("files", subject, False, f"not checkpointed — {why}{note}")
            for subject, why in dict.fromkeys((*start.problems, *end.problems))
        ]
        truncated = bool(start.problems) or bool(end.problems)
        for key in sorted(start.files.keys() | end.files.keys()):
            before, after = start.files.get(key), end.files.get(key)
            if same_content(before, after):
                continue
            if truncated and (before is None or after is None):
                why = (
                    "its folder was not checkpointed whole (see above): cannot tell whether the turn made it"
                )
                items.append(UndoItem("files", key, False, f"not restored — {why}{note}"))
                continue
            restored, said = self._undo_file(start.path_of(key), before, after, index)
            items.append(UndoItem("files", key, restored, said + note))
        return items

    def _undo_file(
        self, path: str, before: FileEntry | None, after: FileEntry | None, index: dict[str, _Where]
    ) -> tuple[bool, str]:
        """(restored, what was done or why not) for one file the turn changed."""
        try:
            now = self._now(path, after, index)
            if same_content(now, before):
                return True, "already as it was before the turn"
            for entry in (before, after):
                if entry is not None and entry.link is None and entry.skipped:
                    return False, f"not checkpointed — {entry.skipped}"
            if before is not None and before.link is None and before.sha256 not in index:
                return False, "not checkpointed — its content before the turn is not in the checkpoint store"
            if not same_content(now, after):
                return False, _SAID_REFUSED
            return True, self._put_back(path, before, after, index)
        except OSError as exc:
            return False, f"could not put it back: {_why(exc)}"

    def _now(self, path: str, like: FileEntry | None, index: dict[str, _Where]) -> FileEntry | None:
        """What ``path`` is now, its content hashed (never kept), to compare with ``like``."""
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return None
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            return NOT_A_FILE
        return self._entry(path, info, like, time.time_ns(), pack=None, index=index)

    def _scan_now(self, start: FileManifest, index: dict[str, _Where]) -> FileManifest:
        """The folders as they are now, as an end manifest (contents hashed where the stat changed)."""
        walk = FolderWalk(start.roots, self._skip, self.max_files)
        now = time.time_ns()
        files = {
            key: self._entry(path, info, start.files.get(key), now, pack=None, index=index)
            for key, path, info in walk
        }
        return FileManifest(start.roots, files, tuple(walk.problems))

    def _put_back(
        self, path: str, before: FileEntry | None, after: FileEntry | None, index: dict[str, _Where]
    ) -> str:
        if before is None:
            os.unlink(path)
            return "removed (the turn created it)"
        if before.link is not None:  # a link is put back as a link (made beside it, then renamed over)
            folder, name = os.path.split(path)
            os.makedirs(folder, exist_ok=True)
            temp = os.path.join(folder, f".{name}.silo-undo-{secrets.token_hex(6)}.tmp")
            os.symlink(before.link, temp)
            try:
                os.replace(temp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        else:
            write_named_file(Path(path), self._content(before.sha256, index))
            os.chmod(path, before.mode & 0o7777, follow_symlinks=False)
        return "recreated (the turn deleted it)" if after is None else "put back as it was before the turn"

    def _content(self, sha: str, index: dict[str, _Where]) -> bytes:
        name, offset, length = index[sha]
        fd = os.open(self.packs / f"{name}.pack", _FILE_FLAGS)
        try:
            data = os.pread(fd, length, offset)
        finally:
            os.close(fd)
        if hashlib.sha256(data).hexdigest() != sha:
            raise OSError(errno.EIO, "its copy in the checkpoint store is damaged")
        return data

    # -- reading the store ------------------------------------------------------------------------

    def changed_files(self, turn: int) -> bool | None:
        """Whether turn ``turn`` changed the folders (its start and end checkpoints name different manifests;
        two small reads, no walk); None when a checkpoint of it is missing."""
        names = []
        for phase in ("start", "end"):
            try:
                record = orjson.loads(_read_file(self.manifest_path(turn, phase)))
            except (OSError, ValueError):
                return None
            names.append(record.get("manifest") if isinstance(record, dict) else None)
        return None if None in names else names[0] != names[1]

    def _load(self, turn: int, phase: Phase) -> FileManifest | None:
        found = self._load_path(self.manifest_path(turn, phase))
        return found[1] if found is not None else None

    def _load_path(self, path: Path) -> tuple[str, FileManifest] | None:
        """A turn's checkpoint record at ``path``: (its manifest's name, the manifest), None if missing."""
        try:
            record = orjson.loads(_read_file(path))
            name = record.get("manifest") if isinstance(record, dict) else None
            if not isinstance(name, str) or not re.fullmatch(r"[0-9a-f]{32}", name):
                raise ValueError("it names no manifest")
            manifest = FileManifest.read(orjson.loads(_read_file(self.manifests / f"{name}.json")))
            if manifest is None:
                raise ValueError("its manifest is not one")
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # orjson.JSONDecodeError is a ValueError
            log.warning("could not read the file checkpoint %s: %s", path, exc)
            return None
        return name, manifest

    def _shown_roots(self) -> str:
        return ", ".join(map(str, self.roots)) or "the session's folders"


def _read_file(path: Path) -> bytes:
    fd = os.open(path, _FILE_FLAGS)
    try:
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, "could not write")
        view = view[written:]


def _why(exc: BaseException) -> str:
    """One line: an OS error's reason and the path it was about, else the exception's message."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror} ({exc.filename})" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__


def _over_limit(limit: int) -> str:
    return f"over {_size(limit)} (max_file_bytes)"


def _size(count: int) -> str:
    return f"{count / (1024 * 1024):.0f} MiB" if count >= 1024 * 1024 else f"{count:,} bytes"
