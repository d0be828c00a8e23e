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

from silo_nb.experiments.rows import COLUMNS, turn_rows
from silo_nb.sessions.journal import parse_lines, read_lines

__all__ = ["CELL_STATUSES", "RunFolder", "atomic_write"]

CELL_STATUSES = ("finished", "failed")


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a crash leaves the old file or none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
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

    def save(self, cell: str, journal_lines: list[str], record: Mapping[str, Any]) -> None:
        """The cell is done: its journal, then its record (both atomic; see the module docstring)."""
        atomic_write(self.journal_path(cell), "".join(line + "\n" for line in journal_lines))
        atomic_write(self.record_path(cell), json.dumps(dict(record), indent=1) + "\n")

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
            turns = turn_rows(parse_lines(read_lines(self.journal_path(cell["cell"]))), session=session)
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
