"""A minimal in-process ACP agent for tests: an ``AgentFn`` whose turns are scripted by the test.

``scripted_agent(turn)`` answers ``initialize`` and ``session/new``; on each ``session/prompt`` it calls
``await turn(peer, prompt_text)``, where ``peer.update(dict)`` sends a ``session/update`` and
``await peer.ask_permission(params)`` sends ``session/request_permission`` and returns the client's
answer; then it answers ``{"stopReason": "end_turn"}`` (or the stop reason ``turn`` returned, or the
whole answer when it returned a dict).

``peer.update(dict, session_id=CHILD)`` and ``peer.ask_permission(params, session_id=CHILD)`` send under
another session id (a subagent's traffic, ACP v1.25); ``peer.client_capabilities`` is what ``initialize``
was sent, and ``peer.notifications`` every notification the client sent (``session/cancel``…).

``methods`` adds or replaces request handlers: ``await handler(peer, params)`` returns the result, or
``NEVER`` to leave the request unanswered, or raises ``AcpRpcError`` to answer with that error.
``agent_capabilities`` and ``new_result`` extend what ``initialize`` and ``session/new`` answer;
``init_meta`` is ``initialize``'s ``_meta`` (extensions such as steering are advertised there).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

import silo_nb
from silo_nb.acp import AcpRpcError, AgentFn, InProcessTransport
from silo_nb.sessions.profiles import AgentProfile


class Peer:
    def __init__(self, send: ByteSendStream, session_id: str) -> None:
        self._send = send
        self.session_id = session_id
        self._ids = itertools.count(1000)
        self._waiting: dict[int, anyio.Event] = {}
        self._answers: dict[int, Any] = {}
        self.client_capabilities: dict[str, Any] = {}
        self.notifications: list[dict[str, Any]] = []

    async def write(self, message: dict[str, Any]) -> None:
        await self._send.send((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())

    async def update(self, update: dict[str, Any], *, session_id: str | None = None) -> None:
        sent_for = session_id or self.session_id
        await self.write({"method": "session/update", "params": {"sessionId": sent_for, "update": update}})

    async def ask_permission(self, params: dict[str, Any], *, session_id: str | None = None) -> Any:
        return await self.ask("session/request_permission", params, session_id=session_id)

    async def ask(self, method: str, params: dict[str, Any], *, session_id: str | None = None) -> Any:
        """Send the request ``method`` (under ``session_id``, else this session's) and return its result."""
        request_id = next(self._ids)
        self._waiting[request_id] = anyio.Event()
        await self.write(
            {
                "id": request_id,
                "method": method,
                "params": {"sessionId": session_id or self.session_id, **params},
            }
        )
        await self._waiting[request_id].wait()
        return self._answers.pop(request_id)

    def answered(self, message: dict[str, Any]) -> None:
        event = self._waiting.pop(message["id"], None)
        if event is not None:
            self._answers[message["id"]] = message.get("result")
            event.set()


Turn = Callable[[Peer, str], Awaitable[str | dict[str, Any] | None]]
Handler = Callable[[Peer, dict[str, Any]], Awaitable[Any]]
NEVER = object()  # a handler's result that leaves the request unanswered


def scripted_agent(
    turn: Turn,
    *,
    session_id: str = "scripted-1",
    methods: dict[str, Handler] | None = None,
    agent_capabilities: dict[str, Any] | None = None,
    new_result: dict[str, Any] | None = None,
    init_meta: dict[str, Any] | None = None,
) -> AgentFn:
    handlers = dict(methods or {})

    async def agent(receive: ByteReceiveStream, send: ByteSendStream) -> None:
        peer = Peer(send, session_id)
        buffer = b""
        async with anyio.create_task_group() as tg:

            async def custom(message: dict[str, Any]) -> None:
                try:
                    result = await handlers[message["method"]](peer, message.get("params") or {})
                except AcpRpcError as exc:  # the handler's way to answer with an error
                    await peer.write({"id": message["id"], "error": exc.to_wire()})
                    return
                if result is not NEVER:
                    await peer.write({"id": message["id"], "result": result})

            async def prompt(message: dict[str, Any]) -> None:
                blocks = message["params"].get("prompt", [])
                text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
                stop = await turn(peer, text)  # a dict: the whole answer (a usage, say)
                result = stop if isinstance(stop, dict) else {"stopReason": stop or "end_turn"}
                await peer.write({"id": message["id"], "result": result})

            while True:
                try:
                    buffer += await receive.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    break
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    message = json.loads(line)
                    method = message.get("method")
                    if method is None:
                        peer.answered(message)
                    elif "id" not in message:  # a notification: kept, and handled if asked
                        peer.notifications.append(message)
                        if method in handlers:
                            tg.start_soon(handlers[method], peer, message.get("params") or {})
                    elif method in handlers:
                        tg.start_soon(custom, message)
                    elif method == "initialize":
                        peer.client_capabilities = message.get("params", {}).get("clientCapabilities", {})
                        result = {
                            "protocolVersion": 1,
                            "agentCapabilities": agent_capabilities or {},
                            "agentInfo": {"name": "scripted"},
                            **({"_meta": init_meta} if init_meta is not None else {}),
                        }
                        await peer.write({"id": message["id"], "result": result})
                    elif method == "session/new":
                        result = {"sessionId": session_id, **(new_result or {})}
                        await peer.write({"id": message["id"], "result": result})
                    elif method == "session/prompt":
                        tg.start_soon(prompt, message)
                    elif "id" in message:
                        await peer.write(
                            {"id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
                        )
            tg.cancel_scope.cancel()

    return agent


def scripted_service(
    workspace: Any, turn: Turn, *, profile: dict[str, Any] | None = None, **agent: Any
) -> silo_nb.AgentsService:
    """An ``AgentsService`` on a test ``Workspace`` whose profile ``scripted`` runs
    ``scripted_agent(turn, **agent)`` in-process (``profile`` adds profile fields: timeouts, config…)."""
    workspace.add_profiles({"id": "scripted", "label": "Scripted", "command": "true", **(profile or {})})

    async def factory(_profile: AgentProfile, _cwd: str) -> InProcessTransport:
        return InProcessTransport(scripted_agent(turn, **agent))

    return silo_nb.AgentsService(
        workspace_dir=workspace.folder,
        config_dirs=[workspace.config],
        data_dir=workspace.data,
        transport_factory=factory,
    )
