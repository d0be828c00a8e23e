"""Which cell and which notebook a turn belongs to, whether a run samples, and what this notebook connected
to last.

- A turn is tied to its cell: the execute request's ``metadata.cellId`` (JupyterLab and Notebook 7 send
  it), else a hash of the cell's source and its position (the how-many-th ``%%prompt`` run of this
  kernel), which is stable under "Run All" after a restart.
- A notebook is ``$JPY_SESSION_NAME`` (its path, set by Jupyter Server) when present, else the workspace.
- Headless (issue 34): nbclient and papermill send neither, so the folder alone would let another notebook
  of the folder, or another parameterized run, repaint its turn as this one's. Without both, the cell's
  key also holds a :class:`RunDigest` of every cell this kernel ran before it, in order (papermill's
  injected parameters included): a turn restores only in a run that ran the very same cells.
- ``ConnectionRecords``: a small JSON file in the data dir mapping (notebook, NAME) → (profile, session
  id), so ``%silo connect NAME`` after a restart resumes the session this notebook last used. Read and
  written like a journal (``sessions.safe_files``: no link followed, a regular file only, folders this
  user's alone, 0600), and at most :data:`RECORD_LIMIT` bytes are read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from silo_nb.sessions import RECORD_LIMIT, now_iso, read_small_file, replace_file

__all__ = [
    "ConnectionRecords",
    "RunDigest",
    "execute_cell_id",
    "fallback_cell_key",
    "notebook_identity",
    "prompt_cell_key",
]

log = logging.getLogger("silo_nb.notebook")


def execute_cell_id(shell: Any) -> str | None:
    """The ``cellId`` the frontend sent with the running execute request, if any."""
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return None
    try:
        parent = get_parent("shell")
    except Exception:
        return None
    metadata = parent.get("metadata") if isinstance(parent, dict) else None
    cell_id = metadata.get("cellId") if isinstance(metadata, dict) else None
    return cell_id if isinstance(cell_id, str) and cell_id else None


def fallback_cell_key(source: str, position: int) -> str:
    digest = hashlib.sha256(f"{position}\0{source}".encode()).hexdigest()[:16]
    return f"src-{position}-{digest}"


def notebook_identity(workspace_folder: Path) -> str:
    session_name = os.environ.get("JPY_SESSION_NAME")
    return session_name if session_name else str(workspace_folder)


class RunDigest:
    """A running digest of the raw sources of the cells this kernel ran, in order (IPython's input history,
    read once: each call hashes only the cells run since the last)."""

    def __init__(self) -> None:
        self._seen = 0
        self._hash = hashlib.sha256()

    def of(self, shell: Any) -> str:
        history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
        if not isinstance(history, list):
            history = []
        if len(history) < self._seen:  # %reset started the history over: so does the digest
            self._seen, self._hash = 0, hashlib.sha256()
        for source in history[self._seen :]:
            data = str(source).encode("utf-8", "surrogatepass")
            self._hash.update(b"%d\0" % len(data) + data)
        self._seen = len(history)
        return self._hash.hexdigest()[:16]


def prompt_cell_key(shell: Any, source: str, position: int, runs: RunDigest) -> str:
    """The key a ``%%prompt`` turn is recorded and restored under: the front end's cell id; else source and
    position, in a notebook Jupyter Server named; else (headless, nothing names the notebook) those and
    the digest of every cell run so far, so only a run of the very same cells finds the turn again."""
    cell_id = execute_cell_id(shell)
    if cell_id is not None:
        return cell_id
    key = fallback_cell_key(source, position)
    if os.environ.get("JPY_SESSION_NAME"):
        return key
    return f"{key}-run-{runs.of(shell)}"


class ConnectionRecords:
    """(notebook, NAME) → {profile, session_id}; one 0600 JSON file per notebook."""

    def __init__(self, data_dir: Path, workspace_id: str, notebook: str) -> None:
        digest = hashlib.sha256(notebook.encode("utf-8", "surrogatepass")).hexdigest()[:20]
        self.root = data_dir
        self.path = data_dir / "workspaces" / workspace_id / "notebooks" / f"{digest}.json"
        self.notebook = notebook

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(read_small_file(self.path, root=self.root, limit=RECORD_LIMIT))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring the connection record %s: %s", self.path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, name: str) -> dict[str, Any] | None:
        record = self._read().get("connections", {}).get(name)
        return record if isinstance(record, dict) and isinstance(record.get("session_id"), str) else None

    def put(self, name: str, *, profile_id: str, session_id: str, **details: Any) -> None:
        """``details``: what the agents list shows of a dormant session (``can_resume``, ``agent``)."""
        data = self._read()
        data["notebook"] = self.notebook
        connections = data.setdefault("connections", {})
        record = {"profile": profile_id, "session_id": session_id, "updated": now_iso()}
        connections[name] = {**record, **details}
        self._write(data)

    def _write(self, data: dict[str, Any]) -> None:
        try:
            text = json.dumps(data, indent=1, ensure_ascii=True)  # ASCII: a lone surrogate is escaped
            replace_file(self.path, text.encode("ascii"), root=self.root)
        except OSError as exc:
            log.warning("could not save the connection record %s: %s", self.path, exc)
