"""The runs in a folder (``%silo runs``): each one's cells, size, age and pass rates, from its files alone.

- A run is a sub-folder holding a ``run.json`` (``run_folder.py``). Nothing is parsed but the run's
  description, the done records and the score files: listing a folder of large runs stays quick.
- A pass rate is over the cells that have that bool score (a failed scorer's cell is left out).
- :func:`find_run` turns what a user typed (a run's name in the folder, or a path) into its folder, with
  a one-line error that lists the runs there.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from silo_nb.experiments.run_folder import RunFolder

__all__ = ["RunInfo", "find_run", "list_runs"]


@dataclass(frozen=True)
class RunInfo:
    """One run of a folder, as ``%silo runs`` lists it."""

    name: str
    path: Path
    cells: int
    done: int
    failed: int
    size_bytes: int
    modified: float  # seconds since the epoch, the newest file of the run
    pass_rates: dict[str, tuple[int, int]] = field(default_factory=dict)  # score -> (passed, scored)

    @property
    def age_seconds(self) -> float:
        return max(0.0, time.time() - self.modified)


def _scan(path: Path) -> tuple[int, float]:
    size, newest = 0, 0.0
    for folder, _dirs, names in os.walk(path):
        for name in names:
            try:
                info = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            size += info.st_size
            newest = max(newest, info.st_mtime)
    return size, newest


def run_info(path: Path) -> RunInfo:
    """What :func:`list_runs` says of one run folder."""
    run = RunFolder.open(path)
    done = failed = 0
    rates: dict[str, list[int]] = {}
    for cell in run.cells:
        record = run.record(cell["cell"])
        if record is None:
            continue
        done += 1
        failed += record["status"] == "failed"
        for name, value in (run.scores(cell["cell"]).get("values") or {}).items():
            if isinstance(value, bool):
                counts = rates.setdefault(name, [0, 0])
                counts[0] += value
                counts[1] += 1
    size, newest = _scan(path)
    pass_rates = {name: (passed, scored) for name, (passed, scored) in rates.items()}
    return RunInfo(run.name, path, len(run.cells), done, failed, size, newest, pass_rates)


def list_runs(folder: str | os.PathLike[str]) -> list[RunInfo]:
    """The runs under ``folder``, newest first (an unreadable run is left out)."""
    root = Path(folder).expanduser()
    found: list[RunInfo] = []
    if not root.is_dir():
        return found
    for path in sorted(root.iterdir()):
        if (path / "run.json").is_file():
            try:
                found.append(run_info(path))
            except (OSError, ValueError, json.JSONDecodeError):
                continue
    return sorted(found, key=lambda info: info.modified, reverse=True)


def find_run(name: str | os.PathLike[str], folder: str | os.PathLike[str]) -> Path:
    """The folder of the run ``name``: a path to a run folder, or a run's name under ``folder``."""
    given = Path(name).expanduser()
    for candidate in (given, Path(folder).expanduser() / given):
        if (candidate / "run.json").is_file():
            return candidate.resolve()
    known = ", ".join(info.name for info in list_runs(folder)) or "none"
    raise ValueError(
        f"No run {os.fspath(name)!r} — give a run folder or the name of a run in {os.fspath(folder)!r} "
        f"(runs there: {known})."
    )
