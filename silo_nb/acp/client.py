"""An ACP client connection: a transport to an agent plus the JSON-RPC peer that talks over it.

- ``AgentConnection.open(transport)`` wires a ``JsonRpcConnection`` to the transport's byte streams and
  starts one background task on the running loop that reads, writes and runs ``transport.run()`` (a
  subprocess drains its stderr there) for the life of the connection. The task is detached
  (``asyncio.create_task``) on purpose: a handle must outlive the notebook cell that connected it.
- ``AgentConnection.start(command, args, ...)`` is ``open`` over a freshly spawned
  ``SubprocessTransport``; tests and embedded agents use ``open(InProcessTransport(agent_fn))``.
- ``on_closed`` fires once when the agent goes away on its own (not after :meth:`aclose`), with the
  transport's own words for how it ended.
- What the client advertises in ``initialize`` lives here too (``client_capabilities``): Silo's client
  is not a safety boundary, so it offers no ``fs`` and no ``terminal``; every such request gets -32601.
  It does advertise ``auth.terminal`` (unlike Silo): agents then list their terminal login methods, and
  a sign-in error can name the exact command for the user to run (``%silo login`` runs it only where
  the kernel has a terminal).
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
from silo_nb.acp.transport import SubprocessTransport, Transport
from silo_nb.task_set import TaskSet
from silo_nb.version import VERSION

__all__ = [
    "CLOSING",
    "PROTOCOL_VERSION",
    "AgentConnection",
    "background_closes",
    "client_capabilities",
    "client_info",
]

log = logging.getLogger("silo_nb.acp")

PROTOCOL_VERSION = 1

atexit.register(kill_all_agent_groups)

# Background closes in flight (``close_in_background``): an agent whose session gave up on it is shut
# down after its owner is gone, so the closes belong to the process (the atexit kill is their backstop).
CLOSING = TaskSet()


async def background_closes() -> None:
    """Wait for every ``close_in_background`` in flight (tests; a clean shutdown)."""
    await CLOSING.wait()


def client_capabilities(
    *, fs_read: bool = False, fs_write: bool = False, terminal: bool = False, elicitation: bool = False
) -> dict[str, Any]:
    """What the client offers in ``initialize``: the requests it answers (files, terminals, questions in
    form and url modes), terminal sign-in, boolean config options, and what ACP v1.25 sends only to a
    client that says it takes it: the session's live notices and context compactions, named plans
    (``plan_update``/``plan_removed``, unstable) and subagents (unstable: child sessions announced by
    ``subagent_update``, their traffic under their own session id)."""
    caps: dict[str, Any] = {
        "fs": {"readTextFile": fs_read, "writeTextFile": fs_write},
        "terminal": terminal,
        "auth": {"terminal": True},
        "session": {"configOptions": {"boolean": {}}, "notices": {}, "compaction": {}},
        "plan": {},
        "subagents": {},
    }
    if elicitation:
        caps["elicitation"] = {"form": {}, "url": {}}
    return caps


def client_info() -> dict[str, Any]:
    return {"name": "silo-nb", "title": "Silo (Jupyter)", "version": VERSION}


class AgentConnection:
    """A live agent (behind a :class:`Transport`) and its JSON-RPC peer."""

    def __init__(self, transport: Transport, rpc: JsonRpcConnection) -> None:
        self.transport = transport
        self.rpc = rpc
        self._closing = False
        self._closed_callbacks: list[Callable[[str], None]] = []
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def open(
        cls,
        transport: Transport,
        *,
        request_handlers: Mapping[str, RequestHandler] | None = None,
        notification_handlers: Mapping[str, NotificationHandler] | None = None,
    ) -> AgentConnection:
        """Connect over ``transport`` and start the background task. Call inside a running event loop."""
        rpc = JsonRpcConnection(
            transport.receive,
            transport.send,
            request_handlers=request_handlers,
            notification_handlers=notification_handlers,
            describe_close=transport.describe_end,
        )
        connection = cls(transport, rpc)
        connection._task = asyncio.get_running_loop().create_task(
            connection._run(), name=f"silo_nb agent {transport.name}"
        )
        return connection

    @classmethod
    async def start(
        cls,
        command: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        request_handlers: Mapping[str, RequestHandler] | None = None,
        notification_handlers: Mapping[str, NotificationHandler] | None = None,
    ) -> AgentConnection:
        """Spawn ``command args`` as a subprocess and :meth:`open` it; raises ``AgentSpawnError``."""
        transport = await SubprocessTransport.spawn(command, args, env=env, cwd=cwd)
        return cls.open(
            transport, request_handlers=request_handlers, notification_handlers=notification_handlers
        )

    @property
    def process(self) -> AgentProcess | None:
        """The agent process for a subprocess transport; ``None`` for any other transport."""
        return self.transport.process if isinstance(self.transport, SubprocessTransport) else None

    def on_closed(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(reason)`` if the agent goes away before :meth:`aclose`."""
        self._closed_callbacks.append(callback)

    @property
    def is_open(self) -> bool:
        return not self._closing and not self.rpc.is_closed

    def stderr_tail(self, lines: int = 5) -> list[str]:
        return self.transport.stderr_tail(lines)

    async def _run(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.transport.run)
            await self.rpc.run()
            tg.cancel_scope.cancel()
        if not self._closing:
            reason = self.rpc.close_message or "ACP connection closed"
            log.info("agent %s closed: %s", self.transport.name, reason)
            for callback in self._closed_callbacks:
                try:
                    callback(reason)
                except Exception:
                    log.exception("on_closed callback failed")
            # Reap the peer too: an agent process that died may have left children behind.
            await self.transport.aclose()

    async def aclose(self, reason: str = "ACP client disposed") -> None:
        """Fail pending requests with ``reason`` and end the agent (for a process, its whole group)."""
        self._closing = True
        self.rpc.close(reason)
        await self.transport.aclose()
        if self._task is not None and not self._task.done():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._task), 5)

    def close_in_background(self, reason: str) -> asyncio.Task[None]:
        """Fail pending requests now and end the agent in a task: the caller can report at once (a
        process that ignores stdin EOF takes seconds to end). The task is kept until it is done."""
        self._closing = True
        self.rpc.close(reason)
        task = asyncio.get_running_loop().create_task(self.aclose(reason), name=f"silo_nb close {reason}")
        CLOSING.add(task)
        return task

    def kill_now(self) -> None:
        """Synchronous last resort when no loop can run the graceful shutdown."""
        self._closing = True
        self.rpc.close()
        self.transport.kill_now()
