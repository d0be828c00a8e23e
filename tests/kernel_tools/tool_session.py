"""The kernel tools end to end, from the agent's side: a ``KernelToolServer`` on a namespace, bound to a real
demo session whose turn is held open (the demo agent waits for a permission to edit ``notes.md``), and the
official ``mcp`` SDK's client talking to the relay it starts (``python -m silo_nb.kernel_tools``)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

import silo_nb
from silo_nb.kernel_tools import KernelNamespace, KernelToolServer
from tests.conftest import Workspace


@dataclass
class ToolSession:
    client: Client
    handle: silo_nb.AgentSessionHandle
    server: KernelToolServer
    code_requests: list[silo_nb.AgentPermissionRequest] = field(default_factory=list)

    async def call(self, tool: str, **arguments: Any) -> tuple[bool, str, list[str]]:
        """(is_error, the text, the images' base64 data) of one tool call."""
        result = await self.client.call_tool(tool, arguments)
        texts = [block.text for block in result.content if block.type == "text"]
        images = [block.data for block in result.content if block.type == "image"]
        return bool(result.is_error), "\n".join(texts), images

    def lines(self, kind: str = "kernel_tool") -> list[dict[str, Any]]:
        return [u.raw for u in self.handle.journal_updates() if u.kind == kind]


def client_for(server: KernelToolServer) -> Client:
    config = server.server_config
    params = StdioServerParameters(command=config.command or "", args=list(config.args), env=config.env)
    return Client(stdio_client(params, errlog=sys.__stderr__ or sys.stderr))


@asynccontextmanager
async def tool_session(
    workspace: Workspace,
    namespace: dict[str, Any],
    *,
    answer_code: str | None = "run",
    turn: bool = True,
    **server_options: Any,
) -> AsyncIterator[ToolSession]:
    """See the module docstring; ``answer_code``: the option chosen for a ``run_code`` request (None:
    leave it unanswered); ``turn`` False: no turn is running."""
    server = await KernelToolServer(KernelNamespace(namespace), **server_options).start()
    handle = await workspace.service().sessions.connect("demo", mcp_servers=[server.server_config])
    server.bind(handle)
    held: list[silo_nb.AgentPermissionRequest] = []
    waiting = asyncio.Event()
    session = None

    def on_permission(request: silo_nb.AgentPermissionRequest) -> None:
        if request.tool_call is not None and request.tool_call.kind == "code":
            assert session is not None
            session.code_requests.append(request)
            if answer_code is not None:
                request.respond(answer_code)
        else:
            held.append(request)
            waiting.set()

    handle.on_permission(on_permission)
    prompt = asyncio.create_task(handle.prompt([{"type": "text", "text": "edit notes"}])) if turn else None
    try:
        if prompt is not None:
            await asyncio.wait_for(waiting.wait(), 30)
        async with client_for(server) as client:
            session = ToolSession(client, handle, server)
            yield session
    finally:
        for request in held:
            request.respond("reject-once")
        if prompt is not None:
            await prompt
        await handle.aclose()
        await server.aclose()
