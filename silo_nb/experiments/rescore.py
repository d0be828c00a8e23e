"""``rescore``: score a finished run again, with new or changed scorers, without calling any agent.

- Each done cell's working copy is rebuilt in a temporary folder from what the run's folder kept: the
  template (the path in the cell's record) with the cell's changed files written over it
  (``changes/<cell>.zip``), or the kept copy itself (``workdirs/<cell>``, ``keep_workdirs=True``) when
  the changes were too big to keep. A cell that changed nothing needs only the template.
- The scorers get the same :class:`~silo_nb.experiments.GridRun` as during the run (journal and diff
  from the folder). New scores replace those of the same name; the others stay (``replace=True`` drops
  them). Only ``scores/`` is written, atomically, cell by cell.
- A cell whose copy cannot be rebuilt (the template moved, nothing kept) gets NaN and a ``score_error``
  that says so; no agent is started, no journal written: nothing but the scorers runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from silo_nb.experiments._pandas import require_pandas
from silo_nb.experiments.diffs import rebuild_workdir
from silo_nb.experiments.grid_run import GridRun
from silo_nb.experiments.run_folder import RunFolder
from silo_nb.experiments.run_rows import run_rows
from silo_nb.experiments.scorers import ScoreSheet, check_scorers, score_run
from silo_nb.experiments.table import rows_to_frame

__all__ = ["rescore"]


async def rescore(
    run_folder: str | os.PathLike[str],
    scorers: Mapping[str, Any],
    *,
    cells: Iterable[str] | None = None,
    concurrency: int = 4,
    score_timeout: float = 120.0,
    replace: bool = False,
) -> Any:
    """Score every done cell of the run in ``run_folder`` again (``cells=``: only these); the DataFrame."""
    pd = require_pandas()
    chosen = check_scorers(scorers)
    if not chosen:
        raise ValueError(
            "rescore needs at least one scorer, e.g. {'tests': silo_nb.command_scorer(['pytest'])}."
        )
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency={concurrency!r} — give how many cells may be scored at once.")
    path = Path(run_folder).expanduser()
    if not (path / "run.json").is_file():
        raise ValueError(f"{os.fspath(run_folder)!r} is not a run folder — give the folder run_grid wrote.")
    run = RunFolder.open(path.resolve())
    wanted = set(cells) if cells is not None else None
    known = {cell["cell"] for cell in run.cells}
    if wanted is not None and wanted - known:
        raise ValueError(f"No cell {sorted(wanted - known)[0]!r} in the run {run.name!r}.")
    limiter = anyio.CapacityLimiter(concurrency)
    async with anyio.create_task_group() as group:
        for cell in run.cells:
            if (wanted is None or cell["cell"] in wanted) and run.record(cell["cell"]) is not None:
                group.start_soon(_rescore_cell, run, cell, chosen, limiter, (score_timeout, replace))
    table = rows_to_frame(run_rows(run), pd)
    table.attrs["run_folder"] = str(run.path)
    return table


async def _rescore_cell(
    run: RunFolder,
    cell: dict[str, Any],
    scorers: dict[str, Any],
    limiter: anyio.CapacityLimiter,
    options: tuple[float, bool],
) -> None:
    timeout, replace = options
    name = cell["cell"]
    record = run.record(name) or {}
    async with limiter:
        folder = tempfile.mkdtemp(prefix=f"silo-rescore-{name}-")
        work = os.path.join(folder, "work")
        try:
            problem = await anyio.to_thread.run_sync(_rebuild, run, name, record, work)
            if problem is not None:
                sheet = ScoreSheet(values=dict.fromkeys(scorers), errors=dict.fromkeys(scorers, problem))
            else:
                journal = run.journal_path(name)
                grid_run = GridRun.of(cell, record, workdir=Path(work), journal=journal, diff=run.diff(name))
                sheet = await score_run(scorers, grid_run, timeout=timeout)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    old = {} if replace else run.scores(name)
    merged: dict[str, Any] = {}
    for part in ("values", "errors", "outputs"):
        kept = {
            key: value for key, value in (old.get(part) or {}).items() if key.split(".", 1)[0] not in scorers
        }
        merged[part] = {**kept, **getattr(sheet, part)}
    run.save_scores(name, merged)


def _rebuild(run: RunFolder, name: str, record: Mapping[str, Any], work: str) -> str | None:
    """The cell's working copy at ``work``; None, or why it could not be rebuilt."""
    template = record.get("template")
    if template and not os.path.isdir(template):
        template = None
        missing = f"the template {record.get('template')!r} is gone"
    else:
        missing = ""
    changes = run.changes_path(name)
    kept = run.workdir_path(name)
    diff = record.get("diff") or {}
    if changes.is_file() and (template or not record.get("template")):
        rebuild_workdir(template, changes.read_bytes(), work)
    elif kept.is_dir():
        shutil.copytree(kept, work, symlinks=True)
    elif not diff.get("files_changed") and template:
        shutil.copytree(template, work, symlinks=True)
    else:
        why = missing or "its changed files were not kept (too big; run with keep_workdirs=True)"
        return f"the working copy could not be rebuilt: {why}"
    os.makedirs(work, exist_ok=True)
    return None
