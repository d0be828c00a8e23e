"""The Jupyter server side of silo_nb, and the kernel's way to it: the agent edits the notebook the user has
open through the shared model of Jupyter's real-time collaboration, never the ``.ipynb`` file.

- ``extension.py``: the server extension (the three functions below are what Jupyter looks up on this
  module), a Unix-socket channel advertised to the server's kernels through their environment.
- ``channel.py``: the kernel's client of it; ``channel_names.py``: the names both ends share.
- ``cell_ops.py``: the changes on a ``YNotebook`` (insert, edit, replace, delete, move, outputs, read).

A layer of its own below ``kernel_tools`` (whose tools use the channel); it imports nothing of silo_nb's
other layers, and jupyter_server's modules only inside the server process.
"""

from __future__ import annotations

from typing import Any

from silo_nb.server.cell_ops import CELL_TYPES, MAX_CELLS, MAX_SOURCE_CHARS, CellOpError
from silo_nb.server.channel import NO_CHANNEL, NO_NOTEBOOK, NotebookChannel, NotebookUnavailable
from silo_nb.server.channel_names import PATH_ENV, SOCKET_ENV, TOKEN_ENV

__all__ = [
    "CELL_TYPES",
    "MAX_CELLS",
    "MAX_SOURCE_CHARS",
    "NO_CHANNEL",
    "NO_NOTEBOOK",
    "PATH_ENV",
    "SOCKET_ENV",
    "TOKEN_ENV",
    "CellOpError",
    "NotebookChannel",
    "NotebookUnavailable",
]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "silo_nb.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from silo_nb.server.extension import load

    load(serverapp)


async def _start_jupyter_server_extension(serverapp: Any) -> None:
    from silo_nb.server.extension import start

    await start(serverapp)
