"""The ACP wire layer: JSON-RPC over a transport (an agent subprocess's stdio, or an in-process agent
function joined by byte pipes). Knows nothing of Silo's session rules."""

from silo_nb.acp.client import PROTOCOL_VERSION, AgentConnection, client_capabilities, client_info
from silo_nb.acp.excerpt import error_excerpt
from silo_nb.acp.jsonrpc import METHOD_NOT_FOUND, AcpConnectionClosed, AcpRpcError, JsonRpcConnection
from silo_nb.acp.pipe import BytePipe, PipeReceiveStream, PipeSendStream, memory_byte_pipe
from silo_nb.acp.process import AgentProcess, AgentSpawnError
from silo_nb.acp.transport import AgentFn, InProcessTransport, SubprocessTransport, Transport

__all__ = [
    "METHOD_NOT_FOUND",
    "PROTOCOL_VERSION",
    "AcpConnectionClosed",
    "AcpRpcError",
    "AgentConnection",
    "AgentFn",
    "AgentProcess",
    "AgentSpawnError",
    "BytePipe",
    "InProcessTransport",
    "JsonRpcConnection",
    "PipeReceiveStream",
    "PipeSendStream",
    "SubprocessTransport",
    "Transport",
    "client_capabilities",
    "client_info",
    "error_excerpt",
    "memory_byte_pipe",
]
