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
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CELL_STATUSES", "RunFolder", "atomic_write", "atomic_write_bytes"]

CELL_STATUSES = ("finished", "failed")


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a crash leaves the old file or none)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


@dataclass(frozen=True)
class RunFolder:
    """One run's folder (see the module docstring)."""

    path: Path
    name: str
    cells: tuple[dict[str, Any], ...]  # each: cell, profile, variant, config, prompts, prompt_index, repeat

    @classmethod
    def create(cls, path: Path, name: str, cells: list[dict[str, Any]]) -> RunFolder:
        """Open the run at ``path``, creating it; an existing run must describe the same grid."""
        marker = path / "run.json"
        if marker.is_file():
            existing = cls.open(path)
            if list(existing.cells) != cells:
                raise ValueError(
                    f"The run {name!r} in {path} was started with a different grid — pick another name= "
                    "or delete that folder to start over."
                )
            return existing
        atomic_write(marker, json.dumps({"name": name, "cells": cells}, indent=1) + "\n")
        return cls(path, name, tuple(cells))

    @classmethod
    def open(cls, path: Path) -> RunFolder:
        try:
            data = json.loads((path / "run.json").read_text(encoding="utf-8"))
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
            value = json.loads(self.record_path(cell).read_text(encoding="utf-8"))
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
        atomic_write(self.journal_path(cell), "".join(line + "\n" for line in journal_lines))
        atomic_write(self.diff_path(cell), diff)
        if contents is not None:
            atomic_write_bytes(self.changes_path(cell), contents)
        else:
            with contextlib.suppress(FileNotFoundError):
                self.changes_path(cell).unlink()
        if scores is not None:
            self.save_scores(cell, scores)
        atomic_write(self.record_path(cell), json.dumps(dict(record), indent=1) + "\n")

    def save_scores(self, cell: str, scores: Mapping[str, Any]) -> None:
        atomic_write(self.scores_path(cell), json.dumps(dict(scores), indent=1, allow_nan=False) + "\n")

    def scores(self, cell: str) -> dict[str, Any]:
        """The cell's scores (``values``, ``errors``, ``outputs``); empty when it has none."""
        try:
            value = json.loads(self.scores_path(cell).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}

    def diff(self, cell: str) -> str:
        try:
            return self.diff_path(cell).read_text(encoding="utf-8")
        except OSError:
            return ""

    def not_run(self) -> dict[str, Any]:
        """``{"reason": ..., "cells": [...]}`` of the cells the budget kept from starting, or empty."""
        try:
            value = json.loads(self.not_run_path().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}

    def save_not_run(self, reason: str | None, cells: list[str]) -> None:
        if reason and cells:
            atomic_write(self.not_run_path(), json.dumps({"reason": reason, "cells": cells}, indent=1) + "\n")
        else:
            with contextlib.suppress(FileNotFoundError):
                self.not_run_path().unlink()
