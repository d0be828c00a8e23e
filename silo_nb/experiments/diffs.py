"""What a cell changed: its working copy against the template, as a unified diff, counts and the files.

- :meth:`ChangeBase.capture` runs before the agent starts, :meth:`ChangeBase.changes` after its last turn.
  Without a template the base is an empty folder.
- Plain folders are compared file by file (:func:`_folder_changes`): bytes first; a UTF-8 file without
  NUL bytes and under :data:`TEXT_LIMIT` is diffed line by line (``difflib``), anything else is listed as
  binary (with its old and new size). Symbolic links compare by their target. ``.git`` folders are the
  repository's bookkeeping, not what changed: they are skipped.
- Git-aware when the template is a repository and ``git`` is on the PATH: the working copy's state is
  written as a tree object before and after (``git add -A`` into a temporary index, ``git write-tree``),
  so ``.gitignore`` is honoured, commits the agent made do not hide their changes, and renames are found
  (``git diff -M``). Nothing of the user's repository changes: the index is a temporary file and the
  objects land in the working copy's own ``.git``.
- :class:`Changes` also keeps the changed files' new contents (a zip, deletions in its comment) so that
  ``rescore`` can rebuild the working copy from the template without asking the agent anything; over
  :data:`CONTENTS_LIMIT` it keeps none and says so (``keep_workdirs=True`` keeps whole copies).
- Blocking file work: the callers run it in a worker thread (``anyio.to_thread``), never on the loop.
"""

from __future__ import annotations

import difflib
import io
import json
import os
import shutil
import stat
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CONTENTS_LIMIT", "DIFF_LIMIT", "TEXT_LIMIT", "ChangeBase", "Changes", "rebuild_workdir"]

TEXT_LIMIT = 1024 * 1024  # a text file bigger than this is listed, not diffed
DIFF_LIMIT = 8 * 1024 * 1024  # characters of diff kept per cell
CONTENTS_LIMIT = 64 * 1024 * 1024  # bytes of changed files kept per cell for rescore
GIT_TIMEOUT = 120.0


@dataclass
class Changes:
    """What changed, as plain data (it travels back from a Dask worker)."""

    diff: str = ""
    files: list[dict[str, Any]] = field(default_factory=list)  # path, status, added, removed, binary
    method: str = "files"  # or "git"
    truncated: bool = False
    contents: bytes | None = b""  # a zip of the new files, deletions in its comment; None: too big
    error: str | None = None

    @property
    def files_changed(self) -> int:
        return len(self.files)

    @property
    def lines_added(self) -> int:
        return sum(int(f.get("added") or 0) for f in self.files)

    @property
    def lines_removed(self) -> int:
        return sum(int(f.get("removed") or 0) for f in self.files)

    def summary(self) -> dict[str, Any]:
        """What the done record keeps (the diff text and contents go in files of their own)."""
        return {
            "files_changed": self.files_changed,
            "lines_added": self.lines_added,
            "lines_removed": self.lines_removed,
            "binary": [f["path"] for f in self.files if f.get("binary")],
            "files": self.files,
            "method": self.method,
            "truncated": self.truncated,
            "contents_kept": self.contents is not None,
            "error": self.error,
        }


@dataclass(frozen=True)
class ChangeBase:
    """The state a cell's changes are measured against."""

    template: str | None
    git_tree: str | None = None

    @classmethod
    def capture(cls, template: str | None, work: str) -> ChangeBase:
        if template and os.path.isdir(os.path.join(work, ".git")) and shutil.which("git"):
            try:
                return cls(template, _git_tree(work))
            except (OSError, subprocess.SubprocessError, ValueError):
                pass  # not a usable repository: compare the folders
        return cls(template)

    def changes(self, work: str) -> Changes:
        try:
            if self.git_tree is not None:
                return _git_changes(work, self.git_tree)
            return _folder_changes(self.template, work)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            return Changes(error=f"the changes could not be read: {type(exc).__name__}: {exc}", contents=None)


# -- git --------------------------------------------------------------------------------------------


def _git(work: str, *args: str, index: str | None = None) -> bytes:
    env = {**os.environ, "GIT_INDEX_FILE": index} if index else None
    done = subprocess.run(
        ["git", "-C", work, "-c", "core.quotepath=false", *args],
        capture_output=True,
        env=env,
        timeout=GIT_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise ValueError(f"git {args[0]}: {done.stderr.decode(errors='replace').strip()[:300]}")
    return done.stdout


def _git_tree(work: str) -> str:
    """The working copy as a tree object (a temporary index: the repository's own is untouched)."""
    with tempfile.TemporaryDirectory(prefix="silo-git-index-") as folder:
        index = os.path.join(folder, "index")
        _git(work, "add", "-A", "--", ".", index=index)
        return _git(work, "write-tree", index=index).decode().strip()


def _git_changes(work: str, base: str) -> Changes:
    after = _git_tree(work)
    diff = _git(work, "diff", "--no-color", "--no-ext-diff", "-M", base, after).decode(errors="replace")
    files: list[dict[str, Any]] = []
    fields = _git(work, "diff", "--numstat", "-z", "-M", base, after).split(b"\0")
    index = 0
    while index < len(fields) and fields[index]:
        added, removed, path = fields[index].decode(errors="replace").split("\t", 2)
        index += 1
        old_path = None
        if not path:  # a rename: the old and new paths follow
            old_path, path = (
                fields[index].decode(errors="replace"),
                fields[index + 1].decode(errors="replace"),
            )
            index += 2
        binary = added == "-"
        entry: dict[str, Any] = {
            "path": path,
            "status": "renamed" if old_path else _status_in(work, path, base),
            "added": 0 if binary else int(added),
            "removed": 0 if binary else int(removed),
            "binary": binary,
        }
        if old_path:
            entry["old_path"] = old_path
        files.append(entry)
    deleted = [f["path"] for f in files if f["status"] == "deleted"]
    deleted += [f["old_path"] for f in files if f.get("old_path")]
    changed = [f["path"] for f in files if f["status"] != "deleted"]
    text, truncated = _bounded(diff)
    return Changes(text, files, "git", truncated, _zip_contents(work, changed, deleted))


def _status_in(work: str, path: str, base: str) -> str:
    if not os.path.lexists(os.path.join(work, path)):
        return "deleted"
    try:
        _git(work, "cat-file", "-e", f"{base}:{path}")
    except ValueError:
        return "added"
    return "modified"


# -- plain folders ----------------------------------------------------------------------------------


def _walk(root: str | None) -> dict[str, os.stat_result]:
    """Relative path → lstat of every file and symbolic link under ``root`` (``.git`` skipped)."""
    found: dict[str, os.stat_result] = {}
    if not root or not os.path.isdir(root):
        return found
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not os.path.islink(os.path.join(folder, d)))
        links = [d for d in os.listdir(folder) if os.path.islink(os.path.join(folder, d))]
        for name in sorted({*names, *links}):
            path = os.path.join(folder, name)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                found[os.path.relpath(path, root).replace(os.sep, "/")] = info
    return found


def _read(root: str, relative: str, info: os.stat_result) -> bytes:
    path = os.path.join(root, relative)
    if stat.S_ISLNK(info.st_mode):
        return b"symlink -> " + os.fsencode(os.readlink(path))
    with open(path, "rb") as file:
        return file.read()


def _as_text(data: bytes | None) -> list[str] | None:
    if data is None:
        return []
    if len(data) > TEXT_LIMIT or b"\0" in data:
        return None
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def _folder_changes(template: str | None, work: str) -> Changes:
    before, after = _walk(template), _walk(work)
    files: list[dict[str, Any]] = []
    parts: list[str] = []
    for path in sorted(before.keys() | after.keys()):
        old = _read(template, path, before[path]) if template and path in before else None
        new = _read(work, path, after[path]) if path in after else None
        if old == new:
            continue
        status = "added" if old is None else ("deleted" if new is None else "modified")
        old_lines, new_lines = _as_text(old), _as_text(new)
        if old_lines is None or new_lines is None:
            sizes = {
                "old_size": len(old) if old is not None else None,
                "new_size": len(new) if new is not None else None,
            }
            files.append({"path": path, "status": status, "added": 0, "removed": 0, "binary": True, **sizes})
            parts.append(f"Binary files {_side('a', path, old)} and {_side('b', path, new)} differ\n")
            continue
        lines = list(
            difflib.unified_diff(
                old_lines, new_lines, _side("a", path, old), _side("b", path, new), lineterm="\n"
            )
        )
        lines = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines]
        added = sum(1 for line in lines[2:] if line.startswith("+"))
        removed = sum(1 for line in lines[2:] if line.startswith("-"))
        files.append({"path": path, "status": status, "added": added, "removed": removed, "binary": False})
        parts.append("".join(lines))
    text, truncated = _bounded("".join(parts))
    changed = [f["path"] for f in files if f["status"] != "deleted"]
    deleted = [f["path"] for f in files if f["status"] == "deleted"]
    return Changes(text, files, "files", truncated, _zip_contents(work, changed, deleted))


def _side(prefix: str, path: str, data: bytes | None) -> str:
    return "/dev/null" if data is None else f"{prefix}/{path}"


def _bounded(diff: str) -> tuple[str, bool]:
    if len(diff) <= DIFF_LIMIT:
        return diff, False
    cut = diff.rfind("\n", 0, DIFF_LIMIT) + 1 or DIFF_LIMIT
    return diff[:cut] + f"… the diff is cut at {DIFF_LIMIT // (1024 * 1024)} MiB\n", True


# -- contents, for rescore --------------------------------------------------------------------------


def _zip_contents(work: str, changed: list[str], deleted: list[str]) -> bytes | None:
    total = 0
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for relative in changed:
            path = os.path.join(work, relative)
            if os.path.islink(path):
                info = zipfile.ZipInfo(relative)
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                archive.writestr(info, os.readlink(path))
                continue
            if not os.path.isfile(path):
                continue
            total += os.path.getsize(path)
            if total > CONTENTS_LIMIT:
                return None
            info = zipfile.ZipInfo.from_file(path, relative)
            with open(path, "rb") as file:
                archive.writestr(info, file.read(), zipfile.ZIP_DEFLATED)
        archive.comment = json.dumps({"deleted": deleted}).encode()
    return buffer.getvalue()


def rebuild_workdir(template: str | None, contents: bytes, target: str) -> None:
    """A working copy as the cell left it: the template, its changed files written, deleted ones gone."""
    if template:
        shutil.copytree(template, target, symlinks=True, dirs_exist_ok=True)
    root = Path(target).resolve()
    with zipfile.ZipFile(io.BytesIO(contents)) as archive:
        deleted = json.loads(archive.comment or b"{}").get("deleted", [])
        for relative in deleted:
            path = _inside(root, relative)
            if path.is_symlink() or path.is_file():
                path.unlink()
        for info in archive.infolist():
            path = _inside(root, info.filename)
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink() or path.is_file():
                path.unlink()
            if stat.S_ISLNK(info.external_attr >> 16):
                path.symlink_to(archive.read(info).decode())
            else:
                path.write_bytes(archive.read(info))
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    path.chmod(mode)


def _inside(root: Path, relative: str) -> Path:
    path = (root / relative).absolute()
    if os.path.commonpath([root, os.path.normpath(path)]) != str(root):
        raise ValueError(f"{relative!r} is outside the working copy")
    return path
