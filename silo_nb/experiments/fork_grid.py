"""``fork_grid``: a live session forked into a grid of cells (configs × system prompts × repeats × prompts),
scored like ``run_grid``'s, and the record ``promote`` reads to make one fork the notebook's session.

- It *is* ``run_grid`` (same folder, rows, scorers, report, rescore, diffs): each cell's session is a
  ``session/fork`` of the live one instead of a new session (``CellSpec.fork_of``). Following the choice of
  issue 31 (``handle.fork``), each fork runs in its own agent process that forks the parent by id — the live
  session's process is never shared, so a fork that crashes or hangs takes nothing of the live session with
  it — and works in the cell's own working copy (``template=``, else an empty folder), not the live
  session's folder, so forks never write over each other or over the user's files.
- A fork's journal starts as a copy of the parent's and lives in the parent's data folder (the kernel's
  journal store), besides the copy in the run's folder: ``promote`` resumes it there.
- ``fork.json`` in the run's folder names the parent (profile, session id) and, once promoted, the cell:
  a run is promoted once; another of its cells would silently drop the promoted conversation.
- Refused in one line, before anything runs: a handle that is closed, whose agent does not offer
  ``session/fork``, or whose turn is running (a fork then would copy half a turn).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from silo_nb.experiments.grid import DEFAULT_RUNS_FOLDER, run_grid
from silo_nb.experiments.run_folder import RunFolder, atomic_write
from silo_nb.experiments.table import frame
from silo_nb.model import AgentSessionError
from silo_nb.sessions import AgentSessionHandle

__all__ = ["ForkedCell", "fork_grid", "forked_cell", "mark_promoted"]

_FORK_FILE = "fork.json"
# run_grid's options a fork grid refuses, and why (cache and sandbox: run_grid's of issue 33, where merged).
_NOT_FOR_FORKS = {
    "fork_of": "the forks are of {label}",
    "profiles": "the forks are of {label}, in its profile",
    "agents": "the forks are of {label}, with its agent",
    "executor": "the forks are made from {label}, on this kernel's loop",
    "sandbox": "each fork is started like {label}'s agent, which runs unsandboxed",
    "cache": "a fork's answer depends on {label}'s conversation, which a cache key does not hold",
}


async def fork_grid(
    handle: AgentSessionHandle,
    *,
    prompts: Sequence[str | Sequence[str]],
    configs: Sequence[Mapping[str, Any]] = ({},),
    system_prompts: Sequence[str | None] = (None,),
    repeats: int = 1,
    scorers: Mapping[str, Any] | None = None,
    name: str | None = None,
    folder: str | os.PathLike[str] | None = None,
    **grid_options: Any,
) -> Any:
    """Fork ``handle``'s session once per cell, run the cell's prompt(s) in the fork, score it; return
    ``run_grid``'s DataFrame (its ``attrs["run_folder"]`` is the run). ``grid_options`` are ``run_grid``'s
    others (``policy``, ``answers``, ``timeout``, ``concurrency``, ``template``, ``progress``, budgets…);
    ``executor`` is refused: the forks are made from this kernel's session."""
    if not isinstance(handle, AgentSessionHandle):
        raise TypeError(
            f"fork_grid takes a session handle (silo_nb.agents.sessions.connect) — not {handle!r}."
        )
    if not handle.is_live:
        raise AgentSessionError(f"{handle.label} is closed — connect (or resume) it, then fork_grid it.")
    if not handle.can_fork:
        raise AgentSessionError(
            f"{handle.label} does not offer session/fork (its sessionCapabilities.fork) — run_grid starts "
            "new sessions instead."
        )
    if handle.turn_running:
        raise AgentSessionError(
            f"{handle.label} has a turn running — await it (or cancel it), then fork_grid."
        )
    for refused, why in _NOT_FOR_FORKS.items():
        if refused in grid_options:
            raise TypeError(f"fork_grid does not take {refused}= — {why.format(label=handle.label)}.")
    grid = [prompts, list(map(dict, configs)), list(system_prompts), repeats]
    grid_key = hashlib.sha256(json.dumps(grid, default=str).encode()).hexdigest()[:10]
    root = Path(folder if folder is not None else DEFAULT_RUNS_FOLDER).expanduser().resolve()
    promoted = _promoted_into(root, name, handle.session_id, grid_key)
    if promoted is not None:
        # Run All after a promote (and a restart): ``handle`` is this run's promoted fork, so the call is
        # the one that made the run: its table as it was, no fork of the fork.
        return frame(promoted)
    if name is None:  # the same forks of the same session find their run again; another session's do not
        key = [handle.session_id, grid_key]
        name = "fork-" + hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest()[:10]
    _check_parent(root / name, handle)
    path = root / name
    try:
        return await run_grid(
            prompts,
            configs=configs,
            system_prompts=system_prompts,
            repeats=repeats,
            scorers=scorers,
            name=name,
            folder=root,
            fork_of=handle,
            **grid_options,
        )
    finally:  # an interrupted run's finished cells can be promoted too
        if (path / "run.json").is_file() and not (path / _FORK_FILE).is_file():
            parent = {
                "profile": handle.profile_id,
                "session_id": handle.session_id,
                "grid": grid_key,
                "promoted": None,
            }
            atomic_write(path / _FORK_FILE, json.dumps(parent, indent=1) + "\n", root=path)


def _promoted_into(root: Path, name: str | None, session_id: str, grid_key: str) -> Path | None:
    """The run (``name``'s, else any ``fork-*`` of ``root`` made by the same grid) whose promoted fork is
    ``session_id``, if there is one."""
    paths = [root / name] if name is not None else sorted(root.glob("fork-*"))
    for path in paths:
        try:
            data = json.loads((path / _FORK_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("promoted_session_id") != session_id:
            continue
        if name is not None or data.get("grid") == grid_key:
            return path
    return None


def _check_parent(path: Path, handle: AgentSessionHandle) -> None:
    """A run of this name made of another session's forks is refused (its done cells would be skipped)."""
    try:
        parent = json.loads((path / _FORK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(parent, dict) and parent.get("session_id") != handle.session_id:
        raise ValueError(
            f"The run {path.name!r} forked session {parent.get('session_id')!r}, not {handle.session_id!r} — "
            "pick another name=."
        )


@dataclass(frozen=True)
class ForkedCell:
    """One finished cell of a ``fork_grid`` run, as ``promote`` needs it."""

    run: Path
    cell: str
    profile: str
    session_id: str  # the fork's
    parent_session_id: str
    promoted: str | None  # the run's cell promoted already, if any


def forked_cell(run: Any, cell: str) -> ForkedCell:
    """The fork of ``cell`` in ``run`` (a DataFrame from ``fork_grid``, or its folder); ``ValueError`` in
    one line when the run is not a fork grid, the cell is unknown, or it did not finish."""
    path = Path(run.attrs["run_folder"]) if hasattr(run, "attrs") else Path(run).expanduser().resolve()
    folder = RunFolder.open(path)
    try:
        parent = json.loads((path / _FORK_FILE).read_text(encoding="utf-8"))
        profile, parent_id = str(parent["profile"]), str(parent["session_id"])
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError(
            f"{path} is not a fork_grid run (no {_FORK_FILE}) — promote takes fork_grid's."
        ) from None
    names = [c["cell"] for c in folder.cells]
    if cell not in names:
        raise ValueError(f"No cell {cell!r} in the run {folder.name!r} — its cells: {', '.join(names)}.")
    record = folder.record(cell)
    if record is None or record.get("status") != "finished" or not record.get("session_id"):
        why = "did not run" if record is None else (record.get("error") or record.get("status"))
        raise ValueError(f"Cell {cell!r} of {folder.name!r} failed ({why}) — promote a finished cell.")
    promoted = parent.get("promoted")
    return ForkedCell(
        path,
        cell,
        profile,
        str(record["session_id"]),
        parent_id,
        promoted if isinstance(promoted, str) else None,
    )


def mark_promoted(fork: ForkedCell) -> None:
    """Note in the run's ``fork.json`` that ``fork.cell`` was promoted."""
    data = json.loads((fork.run / _FORK_FILE).read_text(encoding="utf-8"))
    data["promoted"] = fork.cell
    data["promoted_session_id"] = fork.session_id  # fork_grid of it again (Run All) finds this run
    atomic_write(fork.run / _FORK_FILE, json.dumps(data, indent=1) + "\n", root=fork.run)
