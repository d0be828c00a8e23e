"""JSON-RPC error values: the error object a peer answers with, and the end of a connection.

Split from :mod:`silo_nb.acp.jsonrpc` (which re-exports them) so the connection module stays about the
connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "AcpConnectionClosed",
    "AcpRpcError",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800


class AcpRpcError(Exception):
    """An error object a peer returned (or that we return) for a JSON-RPC request."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def agent_message(self) -> str:
        """The agent's own words: the message plus any human-readable detail in ``data``."""
        detail: str | None = None
        if isinstance(self.data, str):
            detail = self.data
        elif isinstance(self.data, Mapping):
            for key in ("details", "message", "detail", "error"):
                value = self.data.get(key)
                if isinstance(value, str) and value.strip():
                    detail = value
                    break
        text = self.message.strip() or f"error {self.code}"
        if detail and detail.strip() and detail.strip() not in text:
            text = f"{text}: {detail.strip()}"
        return text

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class AcpConnectionClosed(Exception):
    """The connection ended (the agent exited, or we disposed it) while a request was pending."""
