"""The kernel's end of the notebook channel: requests to the Jupyter server that started this kernel, to
read and change the notebook it runs for (``extension.py`` is the other end).

- :meth:`NotebookChannel.from_environment`: the socket, the token and the notebook, as the server put them
  in the kernel's environment; a one-line reason instead when this kernel has no such server (plain
  nbclient or papermill, VS Code, a server without silo_nb's extension).
- :meth:`NotebookChannel.request`: one connection per request, bounded in time; any failure is a
  :class:`NotebookUnavailable` with one line the agent can read.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from typing import Any

from silo_nb.server.channel_names import MAX_LINE_BYTES, PATH_ENV, SOCKET_ENV, TOKEN_ENV

__all__ = ["NO_CHANNEL", "NO_NOTEBOOK", "NotebookChannel", "NotebookUnavailable"]

NO_CHANNEL = (
    "This kernel was not started by a Jupyter server with silo_nb's extension and real-time collaboration "
    "(JupyterLab or Notebook 7 with jupyter-collaboration): the notebook cannot be edited from here, and "
    "nothing was changed."
)
NO_NOTEBOOK = "This kernel runs for no notebook (Jupyter named none): nothing was changed."
REQUEST_SECONDS = 20.0


class NotebookUnavailable(RuntimeError):
    """The notebook could not be read or changed; the message is one line for the agent."""


class NotebookChannel:
    """Requests about this kernel's notebook (see the module docstring)."""

    def __init__(self, socket_path: str, token: str, notebook: str) -> None:
        self.socket_path = socket_path
        self.token = token
        self.notebook = notebook

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> NotebookChannel | str:
        """The channel, or why there is none (one line)."""
        socket_path, token = environ.get(SOCKET_ENV), environ.get(TOKEN_ENV)
        if not socket_path or not token:
            return NO_CHANNEL
        notebook = environ.get(PATH_ENV)
        if not notebook:
            return NO_NOTEBOOK
        return cls(socket_path, token, notebook)

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """The server's answer to ``op``; :class:`NotebookUnavailable` for an error answer or no answer."""
        line = json.dumps({"token": self.token, "path": self.notebook, "op": op, **fields}).encode() + b"\n"
        if len(line) > MAX_LINE_BYTES:
            raise NotebookUnavailable(f"The request is over {MAX_LINE_BYTES:,} bytes: nothing was changed.")
        try:
            async with asyncio.timeout(REQUEST_SECONDS):
                reader, writer = await asyncio.open_unix_connection(self.socket_path, limit=MAX_LINE_BYTES)
                try:
                    writer.write(line)
                    await writer.drain()
                    answer_line = await reader.readline()
                finally:
                    writer.close()
        except TimeoutError:
            raise NotebookUnavailable(
                f"The Jupyter server did not answer within {REQUEST_SECONDS:g} s: the change may not be made."
            ) from None
        except (OSError, ValueError, asyncio.LimitOverrunError) as exc:
            raise NotebookUnavailable(
                f"The Jupyter server's notebook channel is gone ({type(exc).__name__}): was the server "
                "restarted? Nothing was changed."
            ) from None
        try:
            answer = json.loads(answer_line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise NotebookUnavailable("The Jupyter server gave no answer: nothing was changed.")
        if not answer.get("ok"):
            raise NotebookUnavailable(str(answer.get("error") or "The Jupyter server refused the change."))
        return answer
