"""``silo_nb.frame``: journals → a pandas DataFrame, one row per turn (the rows come from ``rows.py``).

- Built from journals alone, so it works on any past session and on Silo's own journals. A source is
  a live handle (its journal as written so far), a path to a ``.jsonl`` journal, a folder (every
  journal under it; a ``run_grid`` folder gives the run's frame with its grid columns), a session id
  (looked up in this workspace's journals, or ``workspace_id=``'s), or a list of these.
- After the fixed columns (``rows.COLUMNS``) come one column per config key (``mode``, ``model``…) and
  counts per tool kind and status (``tool_kind_edit``, ``tool_status_failed``), 0 where absent.
- pandas is imported only here and only when called (an optional extra; a clear message without it).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from silo_nb.experiments._pandas import require_pandas
from silo_nb.experiments.rows import COLUMNS, turn_rows
from silo_nb.sessions import (
    data_dir,
    decode_session_id,
    journal_path,
    parse_lines,
    read_lines,
    workspace_folder,
    workspace_id_for,
)

if TYPE_CHECKING:
    from silo_nb.sessions import AgentSessionHandle

__all__ = ["RUN_MARKER", "frame", "journal_rows", "rows_to_frame"]

RUN_MARKER = "run.json"  # a run_grid folder holds this file (see grid.py)


def frame(source: Any, *, workspace_id: str | None = None) -> Any:
    """A DataFrame with one row per turn of every journal ``source`` names (see the module docstring)."""
    pd = require_pandas()
    rows = journal_rows(source, workspace_id=workspace_id)
    table = rows_to_frame(rows, pd)
    if isinstance(source, str | os.PathLike) and (Path(source).expanduser() / RUN_MARKER).is_file():
        table.attrs["run_folder"] = str(Path(source).expanduser().resolve())  # as run_grid's frame says
    return table


def journal_rows(source: Any, *, workspace_id: str | None = None) -> list[dict[str, Any]]:
    """The rows of :func:`frame`, as dicts (no pandas needed)."""
    if isinstance(source, str | os.PathLike):
        return _rows_of_name(source, workspace_id)
    if hasattr(source, "session_id") and hasattr(source, "journal"):
        return _rows_of_handle(source)
    if isinstance(source, Iterable):
        rows: list[dict[str, Any]] = []
        for item in source:
            rows.extend(journal_rows(item, workspace_id=workspace_id))
        return rows
    raise TypeError(
        f"silo_nb.frame takes a session handle, a journal path, a folder or a session id — "
        f"not {type(source).__name__}."
    )


def _rows_of_handle(handle: AgentSessionHandle) -> list[dict[str, Any]]:
    return turn_rows(handle.journal_updates(), session=handle.session_id)


def _rows_of_name(name: str | os.PathLike[str], workspace_id: str | None) -> list[dict[str, Any]]:
    text = os.fspath(name)
    path = Path(text).expanduser()
    if path.is_dir():
        if (path / RUN_MARKER).is_file():
            from silo_nb.experiments.run_folder import RunFolder
            from silo_nb.experiments.run_rows import run_rows

            return run_rows(RunFolder.open(path))
        return [row for file in sorted(path.rglob("*.jsonl")) for row in journal_file_rows(file)]
    if path.is_file():
        return journal_file_rows(path)
    if text.endswith(".jsonl") or os.sep in text:
        raise FileNotFoundError(f"No journal at {text} — check the path (a .jsonl file or a folder).")
    workspace = workspace_id or workspace_id_for(workspace_folder())
    candidate = journal_path(data_dir(), workspace, text)
    if not candidate.is_file():
        raise FileNotFoundError(
            f"No journal for session {text!r} in workspace {workspace!r} — pass the .jsonl path, "
            "a live handle, or workspace_id=."
        )
    return journal_file_rows(candidate, session=text)


def journal_file_rows(path: Path, *, session: str | None = None) -> list[dict[str, Any]]:
    """Rows of one journal file; the session id is decoded from the file name unless given."""
    session_id = session if session is not None else (decode_session_id(path.stem) or path.stem)
    return turn_rows(parse_lines(read_lines(path)), session=session_id)


def rows_to_frame(rows: list[dict[str, Any]], pd: Any = None) -> Any:
    """Rows (from :func:`journal_rows` or a run) → a DataFrame with the config and tool count columns.

    A run's rows also have the grid's columns in front and the cell's (diff counts, usage, budget,
    ``score.NAME``…) after the turn's own; a score column of bools is pandas' nullable ``boolean`` (a
    scorer that failed: ``<NA>``), of numbers ``float64`` (NaN).
    """
    from silo_nb.experiments.run_rows import CELL_COLUMNS, GRID_COLUMNS, SCORE_PREFIX

    pd = pd if pd is not None else require_pandas()
    keys = list(dict.fromkeys(key for row in rows for key in row if key not in COLUMNS))
    lead = [key for key in GRID_COLUMNS if key in keys]
    cell = [key for key in CELL_COLUMNS if key in keys]
    scores = [key for key in keys if key.startswith(SCORE_PREFIX)]
    table = pd.DataFrame(rows, columns=[*lead, *COLUMNS, *cell, *scores])
    for column in scores:
        values = [row.get(column) for row in rows]
        known = [value for value in values if value is not None]
        if known and all(isinstance(value, bool) for value in known):
            table[column] = pd.array(values, dtype="boolean")
        else:
            table[column] = pd.to_numeric(table[column], errors="coerce").astype("float64")
    config_keys = list(dict.fromkeys(key for row in rows for key in row["config"]))
    for key in config_keys:
        column = key if key not in table.columns else f"config_{key}"
        table[column] = [row["config"].get(key) for row in rows]
    for field, prefix in (("tools_by_kind", "tool_kind_"), ("tools_by_status", "tool_status_")):
        names = sorted({name for row in rows for name in row[field]})
        for name in names:
            table[prefix + name] = [int(row[field].get(name, 0)) for row in rows]
    table["started"] = pd.to_datetime(table["started"], utc=True, errors="coerce", format="ISO8601")
    return table
