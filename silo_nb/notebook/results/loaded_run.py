"""A run read for display: its DataFrame, one row per cell, its summary, and each cell's files on demand.

- Read once from the run's folder (``silo_nb.frame`` of it); every view, the report and ``%silo diff``
  work from this object and never write.
- :data:`SHOWN` are the columns a table of cells shows (those the run has) and its ``score.*`` ones, in
  reading order (``render/column_order.py``: the cell, its prompt shortened, the variant, the status and
  the scores first).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from silo_nb.experiments import SCORE_PREFIX, RunFolder, cells_frame, frame, summarize
from silo_nb.model import (
    AgentSessionUpdate,
)
from silo_nb.notebook.render.column_order import reading_order, short_prompt
from silo_nb.sessions import (
    parse_lines,
    read_lines,
)

__all__ = ["SHOWN", "LoadedRun"]

SHOWN = (
    "cell",
    "prompt",
    "variant",
    "cell_status",
    "stop_reason",
    "files_changed",
    "lines_added",
    "lines_removed",
    "cell_tokens",
    "cell_cost",
    "duration_s",
    "tool_calls",
    "attempts",
    "budget_exceeded",
    "error",
    "score_error",
)


@dataclass
class LoadedRun:
    """One run, read from its folder."""

    run: RunFolder
    rows: Any  # the DataFrame, a row per turn
    cells: Any  # a row per cell, the columns of SHOWN and the scores
    summary: Any  # summarize(rows) by variant, or None when the run has no cell yet

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> LoadedRun:
        path = Path(folder).expanduser().resolve()
        if not (path / "run.json").is_file():
            raise ValueError(f"{os.fspath(folder)!r} is not a run folder — give the folder run_grid wrote.")
        run = RunFolder.open(path)
        rows = frame(path)
        if rows.empty:
            return cls(run, rows, rows, None)
        per_cell = cells_frame(rows)
        scores = [c for c in per_cell.columns if c.startswith(SCORE_PREFIX)]
        shown = reading_order([c for c in SHOWN if c in per_cell.columns] + scores, scores=SCORE_PREFIX)
        by = "variant" if per_cell["variant"].nunique() > 1 or "model" not in rows.columns else "model"
        cells = per_cell[shown].reset_index(drop=True)
        if "prompt" in cells.columns:
            cells["prompt"] = cells["prompt"].map(short_prompt)
        return cls(run, rows, cells, summarize(rows, by=[by]))

    @property
    def name(self) -> str:
        return self.run.name

    @property
    def shown_path(self) -> str:
        """The run's folder as a page names it: relative to the working directory when inside it."""
        path = self.run.path
        try:
            return str(path.relative_to(Path.cwd().resolve()))
        except ValueError:
            return str(path)

    def cell_ids(self) -> list[str]:
        return [str(cell) for cell in self.cells["cell"]] if len(self.cells) else []

    def cell(self, cell: str) -> dict[str, Any]:
        """The grid's description of ``cell`` (ValueError naming the cells when there is none)."""
        for entry in self.run.cells:
            if entry["cell"] == cell:
                return dict(entry)
        shown = ", ".join(self.cell_ids()[:5]) + (" …" if len(self.cells) > 5 else "")
        raise ValueError(f"No cell {cell!r} in the run {self.name!r} (cells: {shown or 'none yet'}).")

    def record(self, cell: str) -> dict[str, Any]:
        return self.run.record(cell) or {}

    def updates(self, cell: str) -> list[AgentSessionUpdate]:
        return parse_lines(read_lines(self.run.journal_path(cell)))

    def diff(self, cell: str) -> str:
        return self.run.diff(cell)

    def scores(self, cell: str) -> dict[str, Any]:
        return self.run.scores(cell)
