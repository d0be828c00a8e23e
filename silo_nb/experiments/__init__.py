"""Experiments at scale: turns as data, unattended permission policies, and grids of sessions.

- ``frame`` (``table.py``, rows from ``rows.py``): journals → a pandas DataFrame, one row per turn.
- ``PermissionPolicy`` / ``Rule`` (``policy.py``): answer permission requests by rule, journaled;
  ``QuestionPolicy`` (``question_policy.py``): answer the agent's questions by field name, else decline.
- ``run_grid`` (``grid.py``): prompts × profiles × configs × repeats, each cell a fresh session in its
  own working copy (``grid_cell.py``), resumable from its folder (``run_folder.py``), here, on Dask
  workers or by an executor of one's own (``executors.py``: ``CellExecutor``, which runs ``run_cell`` /
  ``run_cell_blocking`` on a ``CellSpec`` and returns its ``CellResult``), with a progress display
  (``progress.py``; the notebook has a widget); a running cell can be attached to (``live_cells.py``).
- ``retries`` (``run_grid(retry=)``: failed cells retried by error class, each attempt a row) and
  ``grid_cache`` (``run_grid(cache=True)``: a finished cell with the same inputs reused), tied to the grid
  in ``grid_retry``.
- Scoring and comparing: ``scorers`` (``command_scorer``, plain functions of a ``GridRun`` from
  ``grid_run.py``), ``diffs`` (what each cell changed), ``budgets`` (per cell and per grid), ``rescore``
  (score a finished run again, no agent), ``summary`` (``summarize``: pass rates with Wilson intervals,
  pass@k) with ``summary_plots``; ``run_rows`` rebuilds a run's rows from its folder.
- ``atif`` (``export_trajectories``): a session's or each grid cell's journal as an ATIF trajectory
  (Harbor's trajectory format).
- Layering: this package uses ``sessions`` (and so ``acp``) only; never IPython or ipywidgets. pandas
  and dask are optional extras, imported only when used.
"""

from __future__ import annotations

from silo_nb.experiments.atif import SCHEMA_VERSION, export_trajectories, trajectory, write_trajectory
from silo_nb.experiments.budgets import CellBudget
from silo_nb.experiments.executors import CellExecutor, DaskExecutor, LocalExecutor
from silo_nb.experiments.fork_grid import ForkedCell, fork_grid, forked_cell, mark_promoted
from silo_nb.experiments.grid import DEFAULT_RUNS_FOLDER, expand_grid, run_grid
from silo_nb.experiments.grid_cell import CellResult, CellSpec, run_cell, run_cell_blocking
from silo_nb.experiments.grid_run import GridRun
from silo_nb.experiments.live_cells import STOPPED_BY_USER, AttachedCell, LocatedCell, locate_cell
from silo_nb.experiments.policy import PermissionPolicy, Rule
from silo_nb.experiments.progress import GridCounts, GridProgress, TextProgress, format_counts
from silo_nb.experiments.question_policy import QuestionPolicy
from silo_nb.experiments.rescore import rescore
from silo_nb.experiments.retries import ERROR_CLASSES, RETRY_CLASSES
from silo_nb.experiments.run_folder import RunFolder, atomic_write
from silo_nb.experiments.run_rows import SCORE_PREFIX
from silo_nb.experiments.runs_index import RunInfo, find_run, list_runs
from silo_nb.experiments.scorers import CommandScorer, command_scorer
from silo_nb.experiments.summary import cells_frame, pass_at_k, summarize, wilson_interval
from silo_nb.experiments.summary_plots import plot_cost_vs_pass, plot_pass_rates
from silo_nb.experiments.table import frame, journal_rows, rows_to_frame

__all__ = [
    "DEFAULT_RUNS_FOLDER",
    "ERROR_CLASSES",
    "RETRY_CLASSES",
    "SCHEMA_VERSION",
    "SCORE_PREFIX",
    "STOPPED_BY_USER",
    "AttachedCell",
    "CellBudget",
    "CellExecutor",
    "CellResult",
    "CellSpec",
    "CommandScorer",
    "DaskExecutor",
    "ForkedCell",
    "GridCounts",
    "GridProgress",
    "GridRun",
    "LocalExecutor",
    "LocatedCell",
    "PermissionPolicy",
    "QuestionPolicy",
    "Rule",
    "RunFolder",
    "RunInfo",
    "TextProgress",
    "atomic_write",
    "cells_frame",
    "command_scorer",
    "expand_grid",
    "export_trajectories",
    "find_run",
    "fork_grid",
    "forked_cell",
    "format_counts",
    "frame",
    "journal_rows",
    "list_runs",
    "locate_cell",
    "mark_promoted",
    "pass_at_k",
    "plot_cost_vs_pass",
    "plot_pass_rates",
    "rescore",
    "rows_to_frame",
    "run_cell",
    "run_cell_blocking",
    "run_grid",
    "summarize",
    "trajectory",
    "wilson_interval",
    "write_trajectory",
]
