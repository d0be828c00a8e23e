"""The line protocol between the relay (``relay.py``, in the process an agent starts) and the kernel
(``socket_server.py``) over the Unix socket: one JSON object per line each way.

- Request: ``{"token", "id", "tool", "arguments"}``. The token (random, per session, in the relay's
  environment) is checked on every request; a request without the right one is answered
  ``{"id", "refused": <why>}`` and the connection is closed.
- Answer: ``{"id", "isError", "content": [{"type": "text", "text"} | {"type": "image", "mimeType", "data"}]}``
  (MCP's content blocks, which the relay hands on as they are), and for the cell tools
  ``"structuredContent": {"cell_id"}``.
- Lines are bounded: :data:`MAX_REQUEST_BYTES` one way, :data:`MAX_ANSWER_BYTES` the other.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "CELL_TOOL_NAMES",
    "MAX_ANSWER_BYTES",
    "MAX_REQUEST_BYTES",
    "SERVER_NAME",
    "SOCKET_ENV",
    "TOKEN_ENV",
    "TOOL_NAMES",
    "decode",
    "encode",
    "text_answer",
]

SOCKET_ENV = "SILO_NB_KERNEL_TOOLS_SOCKET"
TOKEN_ENV = "SILO_NB_KERNEL_TOOLS_TOKEN"
SERVER_NAME = "notebook"
KERNEL_TOOL_NAMES = ("list_variables", "inspect_variable", "run_code", "read_cells", "show_figure")
# The tools on the open notebook (notebook_tools.py), through the Jupyter server's channel.
CELL_TOOL_NAMES = (
    "read_notebook",
    "insert_cell",
    "edit_cell",
    "replace_cell",
    "delete_cell",
    "move_cell",
    "run_cell",
)
TOOL_NAMES = KERNEL_TOOL_NAMES + CELL_TOOL_NAMES
MAX_REQUEST_BYTES = 1 << 20  # run_code's code is at most 100,000 characters
MAX_ANSWER_BYTES = 1 << 26  # eight figures of at most 1 MB each, base64, and 20,000 characters of text


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def decode(line: bytes) -> dict[str, Any] | None:
    """The object on ``line``; None when it is not a JSON object."""
    try:
        value = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def text_answer(request_id: Any, text: str, *, error: bool) -> dict[str, Any]:
    return {"id": request_id, "isError": error, "content": [{"type": "text", "text": text}]}
