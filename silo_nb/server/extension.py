"""silo_nb's Jupyter server extension: the open notebooks' shared models, for the kernels of this server.

- Enabled the Jupyter way, by ``jupyter-config/jupyter_server_config.d/silo_nb.json``, which the package
  installs into ``<prefix>/etc/jupyter/jupyter_server_config.d/`` (no command to run).
- At load: a fresh 0700 folder for a socket, and a random token, both put in the server's environment
  (:data:`SOCKET_ENV`, :data:`TOKEN_ENV`). jupyter_server starts every kernel with ``{**os.environ,
  "JPY_SESSION_NAME": path}``, so each kernel it starts knows its notebook and the way to this channel;
  no port is opened beyond the server's own.
- At start, on the server's event loop: listens. A request is one JSON line ``{token, path, op, …}`` from
  this user (peer credentials) with the token (compared in constant time); the answer one line,
  ``{"ok": true, …}`` or ``{"error": "one line"}``. A wrong token is refused and the connection closed.
- The document is collaboration's shared model of the notebook (``jupyter_server_ydoc``'s
  ``get_document(copy=False, create=True)``): the one every open tab shows and the server saves; a
  notebook no tab has open gets its room, and is saved the same way. Without ``jupyter-collaboration``
  every request answers why (:data:`NO_COLLABORATION`); a notebook whose file is gone (deleted or renamed
  under the open tab) is one line too, never a change made in a room nobody will save.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hmac
import inspect
import json
import logging
import os
import secrets
import shutil
from typing import Any

from silo_nb.private_sockets import same_user, socket_folder
from silo_nb.server.cell_ops import apply
from silo_nb.server.channel_names import MAX_LINE_BYTES, SOCKET_ENV, TOKEN_ENV, notebook_path_of

__all__ = ["NO_COLLABORATION", "NotebookChannelServer"]

log = logging.getLogger("silo_nb.server")

FOLDER_PREFIX = "silo-nb-"
NO_COLLABORATION = (
    "This Jupyter server has no real-time collaboration (pip install jupyter-collaboration, then restart "
    "it): the notebook was not changed."
)


class NotebookChannelServer:
    """The channel of one Jupyter server (see the module docstring)."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp
        self.token = secrets.token_urlsafe(32)
        self.folder = socket_folder(FOLDER_PREFIX)
        self.socket_path = os.path.join(self.folder, "s")
        self.refused = 0
        self._server: asyncio.AbstractServer | None = None

    def advertise(self) -> None:
        """Put the socket and token in the environment every kernel of this server inherits."""
        os.environ[SOCKET_ENV] = self.socket_path
        os.environ[TOKEN_ENV] = self.token

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(
            self._serve, path=self.socket_path, limit=MAX_LINE_BYTES
        )
        os.chmod(self.socket_path, 0o600)
        log.info("silo_nb: the notebook channel listens at %s", self.socket_path)

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        for name, value in ((SOCKET_ENV, self.socket_path), (TOKEN_ENV, self.token)):
            if os.environ.get(name) == value:
                del os.environ[name]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if not same_user(writer):
                self.refused += 1
                return
            while self._server is not None:
                line = await reader.readline()
                if not line:
                    return
                try:
                    request = json.loads(line)
                except ValueError:
                    request = None
                if not isinstance(request, dict) or not hmac.compare_digest(
                    str(request.get("token", "")).encode(), self.token.encode()
                ):
                    self.refused += 1
                    writer.write(b'{"error": "refused: a request without this server\'s token"}\n')
                    await writer.drain()
                    return
                answer = await self.answer(request)
                writer.write(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        finally:
            writer.close()

    async def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request's answer (never raises)."""
        ydoc_app = self.serverapp.web_app.settings.get("jupyter_server_ydoc")
        if ydoc_app is None:
            return {"error": NO_COLLABORATION}
        try:
            path = notebook_path_of(str(request.get("path") or ""), str(self.serverapp.root_dir))
            exists = self.serverapp.contents_manager.file_exists(path)
            if not (await exists if inspect.isawaitable(exists) else exists):
                # A room outlives its file: a change there would be answered and then lost.
                return {"error": f"{path} is gone (deleted or renamed): nothing was changed."}
            notebook = await ydoc_app.get_document(
                path=path, content_type="notebook", file_format="json", copy=False, create=True
            )
            if notebook is None:
                return {"error": f"{path} is not open as a shared notebook: nothing was changed."}
            return {"ok": True, "path": path, **apply(notebook, request)}
        except ValueError as exc:  # a CellOpError, or a path that is no notebook of this server
            return {"error": str(exc)}
        except Exception as exc:  # the server goes on whatever a request does
            log.warning("silo_nb: a notebook request failed", exc_info=True)
            return {"error": f"The notebook could not be changed: {type(exc).__name__}: {exc}"[:500]}


_CHANNEL: list[NotebookChannelServer] = []  # the one of this server process (the extension's state)


def load(serverapp: Any) -> None:
    """``_load_jupyter_server_extension``: make the channel and advertise it to the kernels to come."""
    try:
        channel = NotebookChannelServer(serverapp)
    except OSError as exc:
        serverapp.log.warning("silo_nb: no notebook channel (%s); agents cannot edit notebooks here", exc)
        return
    channel.advertise()
    atexit.register(channel.close)  # the socket's folder goes with the server (a killed one's: next start)
    _CHANNEL.append(channel)


async def start(serverapp: Any) -> None:
    """``_start_jupyter_server_extension``: listen, on the server's running loop."""
    for channel in _CHANNEL:
        with contextlib.suppress(OSError):
            await channel.start()
