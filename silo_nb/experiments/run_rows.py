"""A run's rows, rebuilt from its folder alone: one per turn of every done cell, grid and cell columns added.

- The journals give the turns (``rows.turn_rows``); the records and score files give the grid's columns
  in front (:data:`GRID_COLUMNS`) and the cell's after the turn's own (:data:`CELL_COLUMNS`, then one
  ``score.NAME`` column per score, in the order they first appear). A cell's columns repeat on each of
  its turns (most cells have one).
- A cell that failed before any turn gives one row holding its error. A turn a budget stopped has the
  stop reason ``budget`` (the journal says ``cancelled``: the budget is what cancelled it). The cells
  the grid's budget kept from starting (``not_run.json``) give a row each, ``cell_status`` ``not_run``,
  the reason in ``error``; a later call with room in its budget runs them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from silo_nb.experiments.retries import earlier_attempts, record_class
from silo_nb.experiments.rows import COLUMNS, turn_rows
from silo_nb.experiments.run_folder import RunFolder
from silo_nb.sessions import parse_lines, read_lines

__all__ = ["CELL_COLUMNS", "GRID_COLUMNS", "SCORE_PREFIX", "cell_columns", "run_rows"]

# Columns a run adds in front of the turn's own.
GRID_COLUMNS = ("run", "cell", "variant", "repeat", "prompt_index", "cell_status", "executor", "sandbox")
# Columns of the cell, after the turn's own.
CELL_COLUMNS = (
    "files_changed",
    "lines_added",
    "lines_removed",
    "cell_tokens",
    "cell_cost",
    "budget_exceeded",
    "attempts",
    "attempt",
    "final",
    "error_class",
    "cached_from",
    "score_error",
    # Which agent ran (issue 33): the spec asked for (a profile's ``agent`` or an ``agents=`` entry) and
    # what its ``initialize`` said in ``agentInfo``.
    "agent_spec",
    "agent_name",
    "agent_version",
)
SCORE_PREFIX = "score."


def cell_columns(record: Mapping[str, Any], scores: Mapping[str, Any]) -> dict[str, Any]:
    """The cell's own columns, from its done record and its scores."""
    diff = record.get("diff") or {}
    usage = record.get("usage") or {}
    budget = record.get("budget") or {}
    errors = scores.get("errors") or {}
    values = scores.get("values") or {}
    columns: dict[str, Any] = {
        "files_changed": diff.get("files_changed"),
        "lines_added": diff.get("lines_added"),
        "lines_removed": diff.get("lines_removed"),
        "cell_tokens": usage.get("tokens"),
        "cell_cost": usage.get("cost"),
        "budget_exceeded": budget.get("limit"),
        "attempts": record.get("attempts", 1),
        "attempt": record.get("attempt", 1),  # retries.py: the final attempt is the cell's record
        "final": True,
        "error_class": record_class(record),
        "cached_from": record.get("cached_from"),
        "score_error": "; ".join(f"{name}: {text}" for name, text in errors.items()) or None,
        "agent_spec": record.get("agent_spec"),
        "agent_name": record.get("agent_name"),
        "agent_version": record.get("agent_version"),
    }
    columns.update({SCORE_PREFIX + name: value for name, value in values.items()})
    return columns


def run_rows(run: RunFolder) -> list[dict[str, Any]]:
    """One row per turn of every done cell, in grid order (see the module docstring)."""
    rows: list[dict[str, Any]] = []
    not_run = run.not_run()
    skipped = set(not_run.get("cells") or ())
    for cell in run.cells:
        name = cell["cell"]
        record = run.record(name)
        grid = {
            "run": run.name,
            "cell": name,
            "variant": cell["variant"],
            "repeat": cell["repeat"],
            "prompt_index": cell["prompt_index"],
        }
        if record is None:
            if name in skipped:
                row = _empty_row("", cell, {"error": not_run.get("reason")})
                rows.append({**grid, "cell_status": "not_run", "executor": None, "sandbox": None, **row})
            continue
        for folder, attempt in earlier_attempts(run, name, record):  # retried: a row set per attempt
            earlier = folder.record(attempt) or {}
            rows.extend({**row, "final": False} for row in _cell_rows(folder, attempt, cell, earlier, grid))
        rows.extend(_cell_rows(run, name, cell, record, grid))
    return rows


def _cell_rows(
    run: RunFolder, name: str, cell: Mapping[str, Any], record: Mapping[str, Any], grid: dict[str, Any]
) -> list[dict[str, Any]]:
    """The rows of one attempt of a done cell: its turns, the grid's and the cell's columns."""
    grid = {
        **grid,
        "cell_status": record["status"],
        "executor": record.get("executor"),
        "sandbox": record.get("sandbox"),
    }
    session = str(record.get("session_id") or "")
    turns = turn_rows(parse_lines(read_lines(run.journal_path(name), root=run.path)), session=session)
    if not turns:
        turns = [_empty_row(session, cell, record)]
    elif record.get("error"):
        turns[-1]["error"] = record["error"]  # the cell's reason (a timeout) says more than the turn's
    budget = record.get("budget") or {}
    if budget.get("stopped"):
        prompted = [turn for turn in turns if turn["prompt"] is not None] or turns
        prompted[-1]["stop_reason"] = "budget"
    own = cell_columns(record, run.scores(name))
    return [{**grid, **turn, **own} for turn in turns]


def _empty_row(session: str, cell: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """A cell with no turn (it failed before its first prompt, or never started): a row with its error."""
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
