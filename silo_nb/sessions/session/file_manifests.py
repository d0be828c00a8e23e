"""What a file checkpoint records of the session's folders (``file_checkpoints.py`` keeps and undoes them):
one manifest per turn's start and end, and the walk that makes it.

- :class:`FileEntry`: a file (size, mtime, ctime, inode, mode and the sha256 of its content; ``skipped``
  says why its content was not kept) or a symbolic link (its target: never followed).
- :class:`FileManifest`: path → entry, the folders it walked (cwd first: a path inside the cwd is relative
  to it, one in another folder absolute) and what it could not checkpoint (``problems``). JSON on disk;
  two manifests that differ only in which files were "racy" are equal (the flag only says what to read
  again).
- :class:`FolderWalk`: the folders' files in a stable order, without ``.git``, ``node_modules``,
  ``__pycache__``, ``.ipynb_checkpoints``, ``.venv``/``venv``, the folders it is told to skip, notebooks
  (``*.ipynb``) and Jupyter's collaboration store (``.jupyter_ystore.db``); past ``max_files`` it stops and
  says so. Paths are strings: a walk of 2,000 files costs its ``scandir`` and ``lstat`` calls, not pathlib's
  parsing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "NOT_A_FILE",
    "SKIPPED_FILES",
    "SKIPPED_FOLDERS",
    "SKIPPED_SUFFIXES",
    "FileEntry",
    "FileManifest",
    "FolderWalk",
    "same_content",
]

SKIPPED_FOLDERS = frozenset({".git", "node_modules", "__pycache__", ".ipynb_checkpoints", ".venv", "venv"})
SKIPPED_SUFFIXES = (".ipynb",)
# Jupyter's own state beside the notebooks (the collaboration's document store and its journal): written by
# the server all the time, never the agent's work.
SKIPPED_FILES = frozenset({".jupyter_ystore.db", ".jupyter_ystore.db-journal", ".jupyter_ystore.db-wal"})


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One path in a manifest: a file (``sha256`` of its content, "" when not read) or a link (``link``)."""

    size: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0
    ino: int = 0
    mode: int = 0o644
    sha256: str = ""
    link: str | None = None
    skipped: str = ""  # why its content is not checkpointed
    racy: bool = field(default=False, compare=False)  # changed just before the capture: read it again

    @classmethod
    def of_file(
        cls, info: os.stat_result, sha256: str = "", skipped: str = "", racy: bool = False
    ) -> FileEntry:
        return cls(
            info.st_size,
            info.st_mtime_ns,
            info.st_ctime_ns,
            info.st_ino,
            stat.S_IMODE(info.st_mode),
            sha256,
            None,
            skipped,
            racy,
        )

    def same_stat(self, info: os.stat_result) -> bool:
        return (
            self.size == info.st_size
            and self.mtime_ns == info.st_mtime_ns
            and self.ctime_ns == info.st_ctime_ns
            and self.ino == info.st_ino
        )

    def wire(self) -> dict[str, Any]:
        if self.link is not None:
            return {"link": self.link}
        out: dict[str, Any] = {
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "ctime_ns": self.ctime_ns,
            "ino": self.ino,
            "mode": self.mode,
            "sha256": self.sha256,
        }
        if self.skipped:
            out["skipped"] = self.skipped
        if self.racy:
            out["racy"] = True
        return out

    @classmethod
    def read(cls, raw: Any) -> FileEntry | None:
        if not isinstance(raw, dict):
            return None
        if isinstance(raw.get("link"), str):
            return cls(link=raw["link"])
        try:
            return cls(
                size=int(raw.get("size", 0)),
                mtime_ns=int(raw.get("mtime_ns", 0)),
                ctime_ns=int(raw.get("ctime_ns", 0)),
                ino=int(raw.get("ino", 0)),
                mode=int(raw.get("mode", 0o644)),
                sha256=str(raw.get("sha256", "")),
                skipped=str(raw.get("skipped", "")),
                racy=raw.get("racy") is True,
            )
        except (TypeError, ValueError):
            return None


NOT_A_FILE = FileEntry(skipped="not a regular file nor a link")  # a folder, a FIFO… where a file was


def same_content(a: FileEntry | None, b: FileEntry | None) -> bool:
    """The same thing at a path: both absent, the same link target, or files of the same content (files
    whose content was not read: the same size and mtime)."""
    if a is None or b is None:
        return a is b
    if a.link is not None or b.link is not None:
        return a.link == b.link
    if a is NOT_A_FILE or b is NOT_A_FILE:
        return False
    if a.sha256 and b.sha256:
        return a.sha256 == b.sha256
    return (a.size, a.mtime_ns) == (b.size, b.mtime_ns)


@dataclass(frozen=True)
class FileManifest:
    """The folders at a turn's start or end."""

    roots: tuple[str, ...]
    files: dict[str, FileEntry]
    problems: tuple[tuple[str, str], ...] = ()  # (subject, why): what it could not checkpoint

    def path_of(self, key: str) -> str:
        return key if os.path.isabs(key) else os.path.join(self.roots[0], key)

    def wire(self) -> dict[str, Any]:
        return {
            "version": 1,
            "roots": list(self.roots),
            "files": {key: entry.wire() for key, entry in self.files.items()},
            "problems": [list(problem) for problem in self.problems],
        }

    @classmethod
    def read(cls, raw: Any) -> FileManifest | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("files"), dict):
            return None
        roots = raw.get("roots")
        if not isinstance(roots, list) or not roots or not all(isinstance(r, str) for r in roots):
            return None
        files = {}
        for key, value in raw["files"].items():
            entry = FileEntry.read(value)
            if entry is not None:
                files[key] = entry
        problems = tuple(
            (str(p[0]), str(p[1])) for p in raw.get("problems") or () if isinstance(p, list) and len(p) == 2
        )
        return cls(tuple(roots), files, problems)


class FolderWalk:
    """One walk of the folders: each file's (key, path, lstat), in a stable order, within the bounds;
    ``problems`` after it: what it could not walk."""

    def __init__(self, roots: Sequence[str], skip: set[str], max_files: int) -> None:
        self.roots = roots
        self.skip = skip
        self.max_files = max_files
        self.problems: list[tuple[str, str]] = []
        self._prefix = os.path.join(roots[0], "")

    def key(self, path: str) -> str:
        return path[len(self._prefix) :] if path.startswith(self._prefix) else path

    def __iter__(self) -> Iterator[tuple[str, str, os.stat_result]]:
        count = 0
        for root in self.roots:
            stack = [root]
            while stack:
                folder = stack.pop()
                try:
                    with os.scandir(folder) as listing:
                        entries = sorted(listing, key=lambda e: e.name)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    self.problems.append((self.key(folder), f"could not list the folder: {exc.strerror}"))
                    continue
                folders = []
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name not in SKIPPED_FOLDERS and entry.path not in self.skip:
                                folders.append(entry.path)
                            continue
                        if not (entry.is_file(follow_symlinks=False) or entry.is_symlink()):
                            continue  # FIFOs, sockets, devices: not files anyone edits
                        if entry.name.endswith(SKIPPED_SUFFIXES) or entry.name in SKIPPED_FILES:
                            continue
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue  # gone meanwhile
                    count += 1
                    if count > self.max_files:
                        why = (
                            f"over {self.max_files:,} files in the session's folders (max_files): the rest "
                            "are not checkpointed"
                        )
                        self.problems.append((self.key(root) or ".", why))
                        return
                    yield self.key(entry.path), entry.path, info
                stack.extend(reversed(folders))
