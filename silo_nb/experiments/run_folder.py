"""A run's folder: what the grid is, which cells are done, and each cell's journal.

Layout of ``<folder>/<name>/``::

    run.json              the grid (its cells, in order); a re-run must ask for the same grid
    journals/<cell>.jsonl each cell's session journal, as the agent's session wrote it
    cells/<cell>.json     the cell's done record: status, session id, error, times, where it ran
                          (host, pid, the executor's label)

- Both files of a cell are written atomically (temp file, fsync, rename, fsync of the folder), the
  journal first: a done record therefore always has its journal, and a cell killed half-way has no
  record, so a re-run after a crash or a kernel restart redoes exactly the cells without one.
- The frame of a run is rebuilt from these files alone (``rows``): the journals give the turns, the
  records the grid columns; a cell that failed before any turn gives one row holding its error.
- Private and this user's alone (issue 21): the run's folder is its files' root (``sessions.safe_files``):
  folders 0700 and files 0600 whatever the umask, nothing reached through a link, and a run folder that
  is another user's or that others may write is refused in one line (another user could forge a result).
- One ``run_grid`` at a time per run (:meth:`RunFolder.running`: a ``lockf`` lock on ``.run.lock``, which
  also refuses a second call in this process): two would run every cell twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from silo_nb.experiments.rows import COLUMNS, turn_rows
from silo_nb.sessions.journal import parse_lines, read_lines
from silo_nb.sessions.safe_files import check_folder, open_file, read_small_file, replace_file

__all__ = ["CELL_STATUSES", "RunFolder", "atomic_write"]

CELL_STATUSES = ("finished", "failed")
_RECORD_LIMIT = 16 << 20  # run.json lists every cell; a done record is small
_RUNNING: set[Path] = set()  # runs a run_grid of this process is running (lockf cannot tell them apart)


def atomic_write(path: Path, text: str, *, root: Path) -> None:
    """Write ``text`` to ``path`` (under ``root``) whole or not at all (a crash leaves the old file or
    none)."""
    replace_file(path, text.encode("utf-8", "backslashreplace"), root=root, durable=True)


@dataclass(frozen=True)
class RunFolder:
    """One run's folder (see the module docstring)."""

    path: Path
    name: str
    cells: tuple[dict[str, Any], ...]  # each: cell, profile, variant, config, prompts, prompt_index, repeat

    @classmethod
    def create(cls, path: Path, name: str, cells: list[dict[str, Any]]) -> RunFolder:
        """Open the run at ``path``, creating it; an existing run must describe the same grid."""
        check_folder(path, path)  # 0700; refused if another user's, or if others may write it
        marker = path / "run.json"
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

    def save(self, cell: str, journal_lines: list[str], record: Mapping[str, Any]) -> None:
        """The cell is done: its journal, then its record (both atomic; see the module docstring)."""
        atomic_write(self.journal_path(cell), "".join(line + "\n" for line in journal_lines), root=self.path)
        atomic_write(self.record_path(cell), json.dumps(dict(record), indent=1) + "\n", root=self.path)

    def rows(self) -> list[dict[str, Any]]:
        """One row per turn of every done cell, in grid order, with the grid's columns in front."""
        rows: list[dict[str, Any]] = []
        for cell in self.cells:
            record = self.record(cell["cell"])
            if record is None:
                continue
            grid = {
                "run": self.name,
                "cell": cell["cell"],
                "variant": cell["variant"],
                "repeat": cell["repeat"],
                "prompt_index": cell["prompt_index"],
                "cell_status": record["status"],
                "executor": record.get("executor"),  # None in runs written before it was recorded
            }
            session = str(record.get("session_id") or "")
            lines = read_lines(self.journal_path(cell["cell"]), root=self.path)
            turns = turn_rows(parse_lines(lines), session=session)
            if not turns:
                turns = [_empty_row(session, cell, record)]
            elif record.get("error"):
                turns[-1]["error"] = record[
                    "error"
                ]  # the cell's reason (a timeout) says more than the turn's
            rows.extend({**grid, **turn} for turn in turns)
        return rows


def _empty_row(session: str, cell: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """A cell with no turn (it failed before its first prompt): a row that carries the error."""
    empty: dict[str, Any] = dict.fromkeys(COLUMNS)
    empty.update(
        session=session,
        turn=0,
        profile=cell["profile"],
        config=dict(cell["config"]),
        prompt=" / ".join(cell["prompts"]),
        error=record.get("error"),
        updates=0,
        tool_calls=0,
        tools_by_kind={},
        tools_by_status={},
        permissions_asked=0,
        permissions_allowed=0,
        permissions_rejected=0,
        permissions_cancelled=0,
        text="",
    )
    return empty
