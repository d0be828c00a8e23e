"""Where things live on disk: the data dir, workspace ids, and journal file names.

- Data dir: ``$SILO_NB_DATA_DIR`` or ``jupyter_data_dir()/silo`` (``silo_nb_agents/user_dirs.py``).
- Workspace folder: ``$SILO_NB_WORKSPACE`` or the kernel's working directory (Jupyter sets it to the
  notebook's folder). Its id is ``<folder name>-<hash of the absolute path>``: stable and file-safe.
- Journal: ``<data dir>/workspaces/<workspace id>/chat-sessions/<encoded session id>.jsonl``. Agent-chosen
  session ids are never used as paths directly: an id that is not a plain safe name is encoded as
  ``~`` + base64url, which no safe name can start with, so encoding is reversible and collision-free
  (a lone surrogate, valid in JSON, is encoded as its UTF-8-style bytes: ``surrogatepass``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from pathlib import Path

from silo_nb_agents.user_dirs import data_dir, ensure_private_dir

__all__ = [
    "checkpoint_store",
    "data_dir",
    "decode_session_id",
    "encode_session_id",
    "ensure_private_dir",
    "journal_dir",
    "journal_path",
    "workspace_folder",
    "workspace_id_for",
]

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,150}$")
_SAFE_WORKSPACE = re.compile(r"[^a-z0-9-]+")


def workspace_folder() -> Path:
    override = os.environ.get("SILO_NB_WORKSPACE")
    return Path(override).expanduser().resolve() if override else Path.cwd().resolve()


def workspace_id_for(folder: Path) -> str:
    resolved_path = folder.expanduser().resolve()
    resolved = str(resolved_path)
    name = _SAFE_WORKSPACE.sub("-", resolved_path.name.lower()).strip("-")[:40] or "root"
    digest = hashlib.sha256(resolved.encode("utf-8")).hexdigest()[:12]
    return f"{name}-{digest}"


def encode_session_id(session_id: str) -> str:
    if _SAFE_NAME.fullmatch(session_id) and not session_id.endswith(".jsonl"):
        return session_id
    data = session_id.encode("utf-8", "surrogatepass")
    encoded = base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")
    if len(encoded) > 200:
        # Very long ids: keep a readable prefix and make the rest a digest (still unique, one-way).
        encoded = encoded[:120] + "." + hashlib.sha256(data).hexdigest()
    return "~" + encoded


def decode_session_id(file_stem: str) -> str | None:
    """The session id a journal file name stands for; ``None`` when it cannot be recovered."""
    if not file_stem.startswith("~"):
        return file_stem
    body = file_stem[1:]
    if "." in body:
        return None
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8", "surrogatepass")
    except (ValueError, UnicodeDecodeError):
        return None


def _check_workspace_id(workspace_id: str) -> str:
    if not _SAFE_NAME.fullmatch(workspace_id) or workspace_id in (".", ".."):
        raise ValueError(
            f"workspace_id {workspace_id!r} is not a plain name — use letters, digits, '.', '_' and '-'."
        )
    return workspace_id


def journal_dir(root: Path, workspace_id: str) -> Path:
    return root / "workspaces" / _check_workspace_id(workspace_id) / "chat-sessions"


def journal_path(root: Path, workspace_id: str, session_id: str) -> Path:
    return journal_dir(root, workspace_id) / f"{encode_session_id(session_id)}.jsonl"


def checkpoint_store(journal: Path) -> Path:
    """Where the file checkpoints of the session whose journal is ``journal`` are kept (issue 32): a folder
    beside it, ``<journal stem>.checkpoints`` (``session/file_checkpoints.py``); it goes with the journal."""
    return journal.with_name(journal.stem + ".checkpoints")
