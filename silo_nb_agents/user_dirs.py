"""Per-user folders: on a shared server (JupyterHub) several users share one machine and one ``/tmp``,
so what silo_nb keeps for a user is never shared through ``/tmp`` when the user has a place of their own.

- :func:`data_dir`: ``$SILO_NB_DATA_DIR`` or ``jupyter_data_dir()/silo`` (journals, run folders).
- :func:`agent_state_dir`: where the demo and replay agents keep their sessions when not told: the data
  folder's ``agents/<name>``; when that cannot be made (no home to write: a service account), the private
  runtime folder's ``silo-nb/<name>``; only last ``<temp>/silo-nb-<name>-<uid>``, a name another user can
  take first, so each agent checks the folder is this user's and private before it keeps anything there.
- :func:`private_runtime_dir`: ``$XDG_RUNTIME_DIR`` when it is a folder of this user's that nobody else
  may write (the spec makes it 0700; an inherited or mistyped variable may not be).
- :func:`ensure_private_dir`: the folders that are missing, made 0700 whatever the umask.

Kept with the agents, the lower package: the demo agent, the replay agent and ``silo_nb.sessions`` must
agree on these folders, and the agents import nothing of ``silo_nb``.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from pathlib import Path

__all__ = ["agent_state_dir", "data_dir", "ensure_private_dir", "private_runtime_dir"]


def data_dir() -> Path:
    """silo_nb's data folder: ``$SILO_NB_DATA_DIR``, else ``jupyter_data_dir()/silo`` (the user's)."""
    override = os.environ.get("SILO_NB_DATA_DIR")
    if override:
        return Path(override).expanduser()
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "silo"


def _owned_and_closed(path: str) -> bool:
    """A folder of this user's that no other user may write (so none can swap what is in it)."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022


def private_runtime_dir() -> Path | None:
    """``$XDG_RUNTIME_DIR`` if it is this user's and closed to others, else None."""
    if sys.platform == "win32":
        return None
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if not runtime or not os.path.isabs(runtime) or not _owned_and_closed(runtime):
        return None
    return Path(runtime)


def _can_make(path: Path) -> bool:
    """Whether ``path`` is there or could be made: its nearest existing folder is one we may write."""
    current = path
    while not os.path.lexists(current):
        if current.parent == current:
            return False
        current = current.parent
    return os.path.isdir(current) and os.access(current, os.W_OK | os.X_OK)


def _user_tag() -> str:
    return str(os.getuid()) if sys.platform != "win32" else os.environ.get("USERNAME", "user")


def agent_state_dir(name: str) -> Path:
    """Where the ``name`` agent (``demo``, ``replay``) keeps its sessions by default (module docstring)."""
    home = data_dir() / "agents" / name
    if _can_make(home):
        return home
    runtime = private_runtime_dir()
    if runtime is not None:
        return runtime / "silo-nb" / name
    return Path(tempfile.gettempdir()) / f"silo-nb-{name}-{_user_tag()}"


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` and its missing parents, each 0700 whatever the umask; folders already there are
    left as they are (only what this call made is chmod-ed: a name another user made first is not ours)."""
    missing: list[Path] = []
    current = path
    while not os.path.lexists(current):
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
            os.chmod(folder, 0o700)
