"""An ACP client connection: an agent process plus the JSON-RPC peer that talks to it.

- ``AgentConnection.start`` spawns the agent and starts one background task on the running loop that
  reads stdout, writes stdin and drains stderr for the life of the connection. The task is detached
  (``asyncio.create_task``) on purpose: a handle must outlive the notebook cell that connected it.
- ``on_closed`` fires once when the agent goes away on its own (not after :meth:`aclose`).
- What the client advertises in ``initialize`` lives here too (``client_capabilities``): Silo's client
  is not a safety boundary, so it offers no ``fs`` and no ``terminal``; every such request gets -32601.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from silo_nb.acp.jsonrpc import JsonRpcConnection, NotificationHandler, RequestHandler
from silo_nb.acp.process import AgentProcess, kill_all_agent_groups

__all__ = ["PROTOCOL_VERSION", "AgentConnection", "client_capabilities", "client_info"]

log = logging.getLogger("silo_nb.acp")

PROTOCOL_VERSION = 1

atexit.register(kill_all_agent_groups)


def client_capabilities() -> dict[str, Any]:
    return {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
        "session": {"configOptions": {"boolean": {}}},
    }


def client_info() -> dict[str, Any]:
    from silo_nb import __version__

    return {"name": "silo-nb", "title": "Silo (Jupyter)", "version": __version__}


class AgentConnection:
    """A live agent process and its JSON-RPC peer."""

    def __init__(self, process: AgentProcess, rpc: JsonRpcConnection) -> None:
        self.process = process
        self.rpc = rpc
        self._closing = False
        self._closed_callbacks: list[Callable[[str], None]] = []
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls,
        command: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        request_handlers: Mapping[str, RequestHandler] | None = None,
        notification_handlers: Mapping[str, NotificationHandler] | None = None,
    ) -> AgentConnection:
        process = await AgentProcess.spawn(command, args, env=env, cwd=cwd)
        rpc = JsonRpcConnection(
            process.stdout,
            process.stdin,
            request_handlers=request_handlers,
            notification_handlers=notification_handlers,
            describe_close=process.describe_exit,
        )
        connection = cls(process, rpc)
        connection._task = asyncio.get_running_loop().create_task(
            connection._run(), name=f"silo_nb agent {process.pid}"
        )
        return connection

    def on_closed(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(reason)`` if the agent goes away before :meth:`aclose`."""
        self._closed_callbacks.append(callback)

    @property
    def is_open(self) -> bool:
        return not self._closing and not self.rpc.is_closed

    def stderr_tail(self, lines: int = 5) -> list[str]:
        return self.process.stderr_tail(lines)

    async def _run(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.process.drain_stderr)
            await self.rpc.run()
            tg.cancel_scope.cancel()
        if not self._closing:
            reason = self.rpc.close_message or "ACP connection closed"
            log.info("agent %d closed: %s", self.process.pid, reason)
            for callback in self._closed_callbacks:
                try:
                    callback(reason)
                except Exception:
                    log.exception("on_closed callback failed")
            # Reap the group too: an agent that died may have left children behind.
            await self.process.terminate()

    async def aclose(self, reason: str = "ACP client disposed") -> None:
        """Fail pending requests with ``reason`` and end the whole process group."""
        self._closing = True
        self.rpc.close(reason)
        await self.process.terminate()
        if self._task is not None and not self._task.done():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._task), 5)

    def kill_now(self) -> None:
        """Synchronous last resort when no loop can run the graceful shutdown."""
        self._closing = True
        self.rpc.close()
        self.process.kill_now()
