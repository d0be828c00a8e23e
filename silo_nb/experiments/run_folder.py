"""A run's folder: what the grid is, which cells are done, and each cell's journal, diff and scores.

Layout of ``<folder>/<name>/``::

    run.json              the grid (its cells, in order); a re-run must ask for the same grid
    journals/<cell>.jsonl each cell's session journal, as the agent's session wrote it
    diffs/<cell>.diff     what the cell changed in its working copy (a unified diff; binary files named)
    changes/<cell>.zip    the changed files' new contents (deletions in its comment), for ``rescore``
    scores/<cell>.json    the cell's scores: values, errors, each command scorer's (bounded) output
    cells/<cell>.json     the cell's done record: status, session id, error, times, where it ran
                          (host, pid, the executor's label, attempts), usage, budget, the diff's counts
    workdirs/<cell>/      the working copy itself, with ``keep_workdirs=True``
    not_run.json          the cells the grid's ``budget=`` kept from starting, and why

- A cell's files are written atomically (temp file, fsync, rename, fsync of the folder), the done record
  last: a done record therefore always has its journal, diff and scores, and a cell killed half-way has
  no record, so a re-run after a crash or a kernel restart redoes exactly the cells without one.
- ``rescore`` rewrites ``scores/`` only. The frame of a run is rebuilt from these files alone
  (``run_rows.py``).
- Private and this user's alone (issue 21): the run's folder is its files' root (``sessions.safe_files``):
  folders 0700 and files 0600 whatever the umask, nothing reached through a link, and a run folder that
  is another user's or that others may write is refused in one line (another user could forge a result).
- One ``run_grid`` at a time per run (:meth:`RunFolder.running`: a ``lockf`` lock on ``.run.lock``, which
  also refuses a second call in this process): two would run every cell twice.
- A sampling run (``sessions.sampling``, issue 34) starts over: a run of that name that no ``run_grid`` of
  this process opened is set aside whole first, under its lock (renamed ``<name>.<n>``, the first free
  ``n``; its ``run.json`` says the new name), so the name holds the newest sample and none is lost.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from silo_nb.sessions import check_folder, open_file, read_small_file, replace_file, write_named_file

__all__ = ["CELL_STATUSES", "RunFolder", "atomic_write", "atomic_write_bytes", "set_aside"]

CELL_STATUSES = ("finished", "failed")
_RECORD_LIMIT = 16 << 20  # run.json lists every cell; a done record is small
_DIFF_LIMIT = 256 << 20  # a cell's diff: bounded where it is written (grid_cell)
_RUNNING: set[Path] = set()  # runs a run_grid of this process is running (lockf cannot tell them apart)
_OPENED: set[Path] = set()  # runs a run_grid of this process opened: a sampling run resumes only these


def atomic_write(path: Path, text: str, *, root: Path | None = None) -> None:
    """Write ``text`` to ``path`` whole or not at all (a crash leaves the old file or none); with ``root``
    (a run's folder) reached from there, never through a link."""
    atomic_write_bytes(path, text.encode("utf-8", "backslashreplace"), root=root)


def atomic_write_bytes(path: Path, data: bytes, *, root: Path | None = None) -> None:
    """Write ``data`` to ``path`` whole or not at all (0600; with ``root``: see :func:`atomic_write`)."""
    if root is not None:
        replace_file(path, data, root=root, durable=True)
    else:  # a path the user named (a report)
        write_named_file(path, data, durable=True)


@dataclass(frozen=True)
class RunFolder:
    """One run's folder (see the module docstring)."""

    path: Path
    name: str
    cells: tuple[dict[str, Any], ...]  # each: cell, profile, variant, config, prompts, prompt_index, repeat

    @classmethod
    def create(cls, path: Path, name: str, cells: list[dict[str, Any]], *, fresh: bool = False) -> RunFolder:
        """Open the run at ``path``, creating it; an existing run must describe the same grid. ``fresh`` (a
        sampling run): one this process did not open is set aside first (see the module docstring)."""
        check_folder(path, path)  # 0700; refused if another user's, or if others may write it
        marker = path / "run.json"
        if fresh and path not in _OPENED and marker.is_file():
            set_aside(path, name)
            check_folder(path, path)
        _OPENED.add(path)
        if marker.is_file():
            existing = cls.open(path)
            if list(existing.cells) != cells:
                raise ValueError(
                    f"The run {name!r} in {path} was started with a different grid — pick another name= "
                    "or delete that folder to start over."
                )
            return existing
        atomic_write(marker, json.dumps({"name": name, "cells": cells}, indent=1) + "\n", root=path)
        return cls(path, name, tuple(cells))

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Hold the run while the block runs; ``RuntimeError`` (one line) if another ``run_grid``, in any
        process, runs it now."""
        busy = f"The run {self.name!r} in {self.path} is being run by another run_grid"
        if self.path in _RUNNING:
            raise RuntimeError(f"{busy} in this kernel — await that one, or pick another name=.")
        fd = open_file(self.path / ".run.lock", os.O_RDWR | os.O_CREAT, root=self.path)
        try:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                owner = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
                raise RuntimeError(f"{busy} (pid {owner}) — wait for it, or pick another name=.") from None
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.pwrite(fd, str(os.getpid()).encode(), 0)
            _RUNNING.add(self.path)
            try:
                yield
            finally:
                _RUNNING.discard(self.path)
        finally:
            os.close(fd)  # drops the lock

    @classmethod
    def open(cls, path: Path) -> RunFolder:
        try:
            data = json.loads(read_small_file(path / "run.json", root=path, limit=_RECORD_LIMIT))
            return cls(path, str(data["name"]), tuple(data["cells"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path / 'run.json'} is not a silo_nb run description ({exc}).") from exc

    def journal_path(self, cell: str) -> Path:
        return self.path / "journals" / f"{cell}.jsonl"

    def record_path(self, cell: str) -> Path:
        return self.path / "cells" / f"{cell}.json"

    def record(self, cell: str) -> dict[str, Any] | None:
        """The cell's done record, or None when the cell has not finished (or its record is unreadable)."""
        try:
            value = json.loads(read_small_file(self.record_path(cell), root=self.path, limit=_RECORD_LIMIT))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) and value.get("status") in CELL_STATUSES else None

    def diff_path(self, cell: str) -> Path:
        return self.path / "diffs" / f"{cell}.diff"

    def changes_path(self, cell: str) -> Path:
        return self.path / "changes" / f"{cell}.zip"

    def scores_path(self, cell: str) -> Path:
        return self.path / "scores" / f"{cell}.json"

    def workdir_path(self, cell: str) -> Path:
        return self.path / "workdirs" / cell

    def not_run_path(self) -> Path:
        return self.path / "not_run.json"

    def save(
        self,
        cell: str,
        journal_lines: list[str],
        record: Mapping[str, Any],
        *,
        diff: str = "",
        contents: bytes | None = None,
        scores: Mapping[str, Any] | None = None,
    ) -> None:
        """The cell is done: its journal, diff, changed files and scores, then its record (all atomic)."""
        atomic_write(self.journal_path(cell), "".join(line + "\n" for line in journal_lines), root=self.path)
        atomic_write(self.diff_path(cell), diff, root=self.path)
        if contents is not None:
            atomic_write_bytes(self.changes_path(cell), contents, root=self.path)
        else:
            with contextlib.suppress(FileNotFoundError):
                self.changes_path(cell).unlink()
        if scores is not None:
            self.save_scores(cell, scores)
        atomic_write(self.record_path(cell), json.dumps(dict(record), indent=1) + "\n", root=self.path)

    def save_scores(self, cell: str, scores: Mapping[str, Any]) -> None:
        atomic_write(
            self.scores_path(cell), json.dumps(dict(scores), indent=1, allow_nan=False) + "\n", root=self.path
        )

    def scores(self, cell: str) -> dict[str, Any]:
        """The cell's scores (``values``, ``errors``, ``outputs``); empty when it has none."""
        try:
            value = json.loads(read_small_file(self.scores_path(cell), root=self.path, limit=_RECORD_LIMIT))
        except (OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}

    def diff(self, cell: str) -> str:
        try:
            data = read_small_file(self.diff_path(cell), root=self.path, limit=_DIFF_LIMIT)
            return data.decode("utf-8", "replace")
        except OSError:
            return ""

    def not_run(self) -> dict[str, Any]:
        """``{"reason": ..., "cells": [...]}`` of the cells the budget kept from starting, or empty."""
        try:
            value = json.loads(read_small_file(self.not_run_path(), root=self.path, limit=_RECORD_LIMIT))
        except (OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}

    def save_not_run(self, reason: str | None, cells: list[str]) -> None:
        if reason and cells:
            text = json.dumps({"reason": reason, "cells": cells}, indent=1) + "\n"
            atomic_write(self.not_run_path(), text, root=self.path)
        else:
            with contextlib.suppress(FileNotFoundError):
                self.not_run_path().unlink()


def set_aside(path: Path, name: str) -> Path:
    """Rename the run at ``path`` to ``<name>.<n>`` (the first free ``n``) under its lock, and say so in its
    ``run.json``; ``RuntimeError`` (one line) while a ``run_grid`` runs it."""
    fd = open_file(path / ".run.lock", os.O_RDWR | os.O_CREAT, root=path)
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise RuntimeError(
                f"The run {name!r} in {path} is being run by another run_grid — wait for it before sampling."
            ) from None
        for number in itertools.count(1):
            target = path.with_name(f"{path.name}.{number}")
            if os.path.lexists(target):
                continue
            try:
                os.rename(path, target)
            except OSError as exc:  # made meanwhile by another process: the next number
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                    continue
                raise
            break
    finally:
        os.close(fd)
    with contextlib.suppress(OSError, ValueError):
        kept = RunFolder.open(target)
        text = json.dumps({"name": target.name, "cells": list(kept.cells)}, indent=1) + "\n"
        atomic_write(target / "run.json", text, root=target)
    return target
