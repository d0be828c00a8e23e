"""``GridRun``: one finished grid cell as a scorer sees it — its fields, working copy, diff and journal.

- Made where the cell ran (``grid_cell.py``; a Dask worker too) just after its last turn, while the
  working copy still exists, and again by ``rescore`` from the run's folder (a rebuilt working copy).
- The fields are the row's: the grid's (cell, profile, variant, config, prompts, prompt index, repeat),
  how the cell went (status, error, the last turn's stop reason — ``budget`` when a budget stopped it —,
  the agent's final text, tokens, cost, seconds) and what it changed (files changed, lines added and
  removed, the unified diff). ``updates()`` and ``rows()`` read the journal for anything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from silo_nb.experiments.rows import turn_rows
from silo_nb.model import (
    AgentSessionUpdate,
)
from silo_nb.sessions import (
    parse_lines,
    read_lines,
)

__all__ = ["GridRun"]


@dataclass(frozen=True)
class GridRun:
    """One finished cell, handed to each scorer (``run_grid(scorers=)``, ``rescore``).

    ``workdir`` is the cell's working copy (scorers may read it and run commands in it; it is removed
    after scoring unless ``keep_workdirs=True``), ``journal`` the session's journal file, ``diff`` the
    unified diff of what the agent changed against the template.
    """

    cell: str
    profile: str
    variant: str
    config: dict[str, Any]
    prompts: tuple[str, ...]
    prompt_index: int
    repeat: int
    workdir: Path
    journal: Path
    status: str = "finished"
    error: str | None = None
    stop_reason: str | None = None
    final_text: str = ""
    tokens: float | None = None
    cost: float | None = None
    seconds: float = 0.0
    budget_exceeded: str | None = None
    diff: str = ""
    files_changed: int = 0
    lines_added: int = 0
    lines_removed: int = 0

    @property
    def prompt(self) -> str:
        """The cell's prompts, one after the other (most cells have one)."""
        return "\n\n".join(self.prompts)

    def updates(self) -> list[AgentSessionUpdate]:
        """The session's journal, as updates."""
        return parse_lines(read_lines(self.journal))

    def rows(self) -> list[dict[str, Any]]:
        """The cell's turns as rows (``silo_nb.frame``'s columns)."""
        return turn_rows(self.updates(), session=self.cell)

    @classmethod
    def of(
        cls,
        cell: dict[str, Any],
        record: dict[str, Any],
        *,
        workdir: Path,
        journal: Path,
        diff: str,
    ) -> GridRun:
        """From a grid cell (``run.json``'s entry) and its done record, once the journal is on disk."""
        rows = turn_rows(parse_lines(read_lines(journal)), session=str(record.get("session_id") or ""))
        last = rows[-1] if rows else {}
        usage = record.get("usage") or {}
        budget = record.get("budget") or {}
        changes = record.get("diff") or {}
        return cls(
            cell=str(cell["cell"]),
            profile=str(cell["profile"]),
            variant=str(cell.get("variant", "")),
            config=dict(cell.get("config") or {}),
            prompts=tuple(cell.get("prompts") or ()),
            prompt_index=int(cell.get("prompt_index", 0)),
            repeat=int(cell.get("repeat", 0)),
            workdir=workdir,
            journal=journal,
            status=str(record.get("status", "finished")),
            error=record.get("error"),
            stop_reason="budget" if budget else last.get("stop_reason"),
            final_text=str(last.get("text") or ""),
            tokens=usage.get("tokens"),
            cost=usage.get("cost"),
            seconds=float(record.get("seconds") or 0.0),
            budget_exceeded=budget.get("limit"),
            diff=diff,
            files_changed=int(changes.get("files_changed") or 0),
            lines_added=int(changes.get("lines_added") or 0),
            lines_removed=int(changes.get("lines_removed") or 0),
        )
