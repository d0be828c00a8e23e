"""The notebook channel's names, shared by its two ends (the server extension and the kernel's client)."""

from __future__ import annotations

import os

__all__ = ["MAX_LINE_BYTES", "PATH_ENV", "SOCKET_ENV", "TOKEN_ENV", "notebook_path_of"]

SOCKET_ENV = "SILO_NB_NOTEBOOK_SOCKET"
TOKEN_ENV = "SILO_NB_NOTEBOOK_TOKEN"
PATH_ENV = "JPY_SESSION_NAME"  # set by jupyter_server on every kernel it starts for a notebook
MAX_LINE_BYTES = 16_000_000  # a request or an answer: a notebook's text, or a cell's outputs


def notebook_path_of(session_name: str, root_dir: str) -> str:
    """The server's API path (relative to its root, ``/``-separated) of a kernel's ``JPY_SESSION_NAME``
    (which jupyter_server sets to the notebook's absolute file path, or to its API path). ``ValueError``
    for a path outside the root or one that is not a notebook."""
    if not session_name:
        raise ValueError("the kernel names no notebook (JPY_SESSION_NAME is not set)")
    relative = os.path.relpath(session_name, root_dir) if os.path.isabs(session_name) else session_name
    relative = relative.replace(os.sep, "/").lstrip("/")
    if relative == ".." or relative.startswith("../") or not relative.endswith(".ipynb"):
        raise ValueError(f"{session_name} is not a notebook under the server's root")
    return relative
