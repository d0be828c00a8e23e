"""The ACP wire layer: JSON-RPC over a transport (an agent subprocess's stdio, or an in-process agent
function joined by byte pipes). Knows nothing of Silo's session rules."""

from silo_nb.acp.client import PROTOCOL_VERSION, AgentConnection, client_capabilities, client_info
from silo_nb.acp.excerpt import error_excerpt
from silo_nb.acp.framing import DEFAULT_MAX_LINE_BYTES, cut_depth, has_long_number
from silo_nb.acp.jsonrpc import (
    METHOD_NOT_FOUND,
    AcpConnectionClosed,
    AcpRpcError,
    JsonRpcConnection,
    PendingRequest,
)
from silo_nb.acp.pipe import BytePipe, PipeReceiveStream, PipeSendStream, memory_byte_pipe
from silo_nb.acp.process import STDERR_RING_LINES, AgentProcess, AgentSpawnError
from silo_nb.acp.rpc_errors import INTERNAL_ERROR
from silo_nb.acp.sandbox import SANDBOX_KINDS, Sandbox, SandboxUnavailable, sandbox_problem
from silo_nb.acp.transport import AgentFn, InProcessTransport, SubprocessTransport, Transport

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "INTERNAL_ERROR",
    "METHOD_NOT_FOUND",
    "PROTOCOL_VERSION",
    "SANDBOX_KINDS",
    "STDERR_RING_LINES",
    "AcpConnectionClosed",
    "AcpRpcError",
    "AgentConnection",
    "AgentFn",
    "AgentProcess",
    "AgentSpawnError",
    "BytePipe",
    "InProcessTransport",
    "JsonRpcConnection",
    "PendingRequest",
    "PipeReceiveStream",
    "PipeSendStream",
    "Sandbox",
    "SandboxUnavailable",
    "SubprocessTransport",
    "Transport",
    "client_capabilities",
    "client_info",
    "cut_depth",
    "error_excerpt",
    "has_long_number",
    "memory_byte_pipe",
    "sandbox_problem",
]
