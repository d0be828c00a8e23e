"""The ACP wire layer: JSON-RPC over a process's stdio. Knows nothing of Silo's session rules."""

from silo_nb.acp.client import PROTOCOL_VERSION, AgentConnection, client_capabilities, client_info
from silo_nb.acp.jsonrpc import METHOD_NOT_FOUND, AcpConnectionClosed, AcpRpcError, JsonRpcConnection
from silo_nb.acp.process import AgentProcess, AgentSpawnError

__all__ = [
    "METHOD_NOT_FOUND",
    "PROTOCOL_VERSION",
    "AcpConnectionClosed",
    "AcpRpcError",
    "AgentConnection",
    "AgentProcess",
    "AgentSpawnError",
    "JsonRpcConnection",
    "client_capabilities",
    "client_info",
]
