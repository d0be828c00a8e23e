"""Newline-delimited JSON-RPC 2.0 over a pair of anyio byte streams.

- One reader loop per connection. Notifications go straight to their (synchronous) handler in arrival
  order, without awaiting or copying (the decoded params are the handler's): updates are recorded in the
  order the agent sent them, at the cost of one dict lookup each.
- Requests from the agent each run in their own task, so a slow answer (a permission the user has not
  clicked yet) never stalls the reader. Unknown requests get -32601; unknown notifications are ignored.
- The reader survives every line (framing and decoding: :mod:`silo_nb.acp.framing`): any error while
  decoding or dispatching one message is logged with the line's start and that message skipped; one
  dropped whole (too deep, too long, not JSON) is still answered if it was a request, and fails our request
  if it was its answer, when its id can be read (:mod:`silo_nb.acp.salvage`). If reading itself fails,
  the connection closes as if the agent had exited.
- Responses match our requests by JSON type and value (``true``, ``1.0``, ``"1"`` are not id 1).
- Writes go through one outbox drained by a single writer task, so ``notify`` can be called from
  synchronous code (``cancel()``) and messages never interleave on the wire. A write that fails (the
  agent closed its stdin) ends the connection, unless the reader sees the agent exit first.
- ``$/cancel_request`` from the agent cancels the matching in-flight handler, which is answered -32800.
This module knows nothing about ACP sessions or Silo; it moves JSON-RPC messages.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup

from silo_nb.acp._give_way import give_way
from silo_nb.acp.framing import (
    DEFAULT_MAX_LINE_BYTES,
    MAX_NESTING,
    LineFramer,
    decode_counted,
    encode_message,
)
from silo_nb.acp.pending import PendingRequest
from silo_nb.acp.rpc_errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    AcpConnectionClosed,
    AcpRpcError,
)
from silo_nb.acp.salvage import answer_dropped, why_dropped

__all__ = [
    "MAX_NESTING",
    "METHOD_NOT_FOUND",
    "AcpConnectionClosed",
    "AcpRpcError",
    "JsonRpcConnection",
    "NotificationHandler",
    "PendingRequest",
    "RequestHandler",
]

log = logging.getLogger("silo_nb.acp")

CANCEL_REQUEST = "$/cancel_request"
YIELD_CHECK_LINES = 32  # how often the reader looks at the clock while handling one read's lines
YIELD_AFTER_SECONDS = 0.002  # and gives the event loop turns (give_way) once it has worked this long
STOPPED_READING_GRACE_SECONDS = 1.0  # after a failed write, for the reader to see the agent's exit
MAX_SKIP_WARNINGS = 20  # per connection, then at debug: a flood of bad lines must not flood the log
RequestHandler = Callable[[Any], Awaitable[Any]]
NotificationHandler = Callable[[Any], None]
CloseDescriber = Callable[[], Awaitable[str]]


class JsonRpcConnection:
    """One JSON-RPC peer. Construct inside a running event loop; drive it with :meth:`run`."""

    def __init__(
        self,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        *,
        request_handlers: Mapping[str, RequestHandler] | None = None,
        notification_handlers: Mapping[str, NotificationHandler] | None = None,
        describe_close: CloseDescriber | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self._receive = receive
        self._send = send
        self.request_handlers: dict[str, RequestHandler] = dict(request_handlers or {})
        self.notification_handlers: dict[str, NotificationHandler] = dict(notification_handlers or {})
        self._describe_close = describe_close
        self._max_line_bytes = max_line_bytes
        self._next_id = 0
        self._skipped = 0
        self._pending: dict[int, PendingRequest] = {}
        self._outbox: deque[bytes] = deque()
        self._wake = anyio.Event()
        self._incoming_scopes: dict[Any, anyio.CancelScope] = {}
        self._task_group: TaskGroup | None = None
        self._close_message: str | None = None
        self.closed = anyio.Event()
        # While a notification handler runs: at most how deep the message being handled nests (how many
        # arrays and objects its line opens) and its line's length, a bound on any string's: a handler
        # may skip walking a value that cannot be deep or hold a long string.
        self.nesting_bound = MAX_NESTING
        self.line_bytes = max_line_bytes

    # -- public API -------------------------------------------------------------------------------

    @property
    def is_closed(self) -> bool:
        return self.closed.is_set()

    @property
    def close_message(self) -> str | None:
        """Why the connection ended (``agent exited with code 1: …``), once it has."""
        return self._close_message

    def start_request(self, method: str, params: Any = None) -> PendingRequest:
        """Send a request now; await the returned object's :meth:`PendingRequest.wait` for the result."""
        if self._close_message is not None:
            raise AcpConnectionClosed(self._close_message)
        request_id = self._next_id
        self._next_id += 1
        call = PendingRequest(request_id, abandon=self._abandon, forget=self._forget)
        self._pending[request_id] = call
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._enqueue(message)
        return call

    async def request(self, method: str, params: Any = None) -> Any:
        """Send a request and wait for its result; raises :class:`AcpRpcError` or ``AcpConnectionClosed``."""
        return await self.start_request(method, params).wait()

    def notify(self, method: str, params: Any = None) -> None:
        """Queue a notification. Synchronous; a closed connection drops it (and logs at debug)."""
        if self._close_message is not None:
            log.debug("dropping %s: connection closed", method)
            return
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._enqueue(message)

    def _forget(self, request_id: int) -> None:
        self._pending.pop(request_id, None)

    def _abandon(self, request_id: int) -> None:
        # The waiter was cancelled (a timeout, a stop button): tell the agent it may stop working.
        if self._pending.pop(request_id, None) is not None and self._close_message is None:
            self.notify("$/cancel_request", {"requestId": request_id})

    def close(self, message: str = "ACP client disposed") -> None:
        """End the connection now: every pending request fails with ``message``."""
        self._finish(message)

    async def run(self) -> None:
        """Read and write until the agent's stdout ends or :meth:`close` is called."""
        try:
            async with anyio.create_task_group() as tg:
                self._task_group = tg
                tg.start_soon(self._writer)
                tg.start_soon(self._watch_closed, tg)
                await self._reader()
                if self._close_message is None:
                    reason = "ACP connection closed"
                    if self._describe_close is not None:
                        with anyio.move_on_after(5):
                            try:
                                reason = await self._describe_close()
                            except Exception:
                                log.exception("describing how the agent ended failed")
                    self._finish(reason)
                tg.cancel_scope.cancel()
        finally:
            self._task_group = None
            self._finish(self._close_message or "ACP connection closed")

    # -- internals --------------------------------------------------------------------------------

    def _finish(self, message: str) -> None:
        if self._close_message is not None:
            return
        self._close_message = message
        for call in list(self._pending.values()):
            if not call.done.is_set():
                call.error = AcpConnectionClosed(message)
                call.done.set()
        for scope in list(self._incoming_scopes.values()):
            scope.cancel()
        self.closed.set()
        self._wake.set()

    async def _watch_closed(self, tg: TaskGroup) -> None:
        await self.closed.wait()
        tg.cancel_scope.cancel()

    def _enqueue(self, message: Mapping[str, Any]) -> None:
        self._outbox.append(encode_message(message))
        self._wake.set()

    async def _writer(self) -> None:
        while self._close_message is None:
            while self._outbox:
                data = self._outbox.popleft()
                try:
                    await self._send.send(data)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                    log.debug("write to agent failed: %r", exc)
                    self._outbox.clear()
                    await self._peer_stopped_reading(exc)
                    return
                except Exception as exc:
                    log.warning("writing to the agent failed: %r", exc)
                    self._finish(f"writing to the agent failed: {type(exc).__name__}: {exc}")
                    return
            self._wake = anyio.Event()
            if not self._outbox and self._close_message is None:
                await self._wake.wait()

    async def _peer_stopped_reading(self, error: BaseException) -> None:
        # Usually the agent exited and the reader sees EOF next (its exit code is the better message). An
        # agent that only closed its stdin keeps running, but nothing can reach it any more: end the
        # connection rather than leave every request (a prompt has no timeout) waiting forever.
        with anyio.move_on_after(STOPPED_READING_GRACE_SECONDS):
            await self.closed.wait()
        if self._close_message is None:
            log.warning("the agent stopped reading its stdin (%r); closing the connection", error)
            why = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            self._finish(f"the agent stopped reading its input ({why}) — reconnect to continue the session")

    async def _reader(self) -> None:
        drops: deque[tuple[bytes, bytes]] = deque()  # answered once the lines before them are handled
        framer = LineFramer(self._max_line_bytes, on_drop=lambda start, end: drops.append((start, end)))
        while True:
            try:
                chunk = await self._receive.receive(1 << 16)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                break
            except Exception as exc:  # not an end of stream, still the end: closed like an exit
                log.warning("reading from the agent failed: %r", exc)
                self._finish(f"reading from the agent failed: {type(exc).__name__}: {exc}")
                return
            if self._close_message is not None:
                break
            # A receive with data already buffered does not yield: without these checkpoints an agent that
            # writes faster than we read (a flood of updates, a storm of requests) holds the kernel's loop
            # for all of it. Yield every couple of milliseconds of work (a cell's `1+1` waits no longer).
            handle = self._handle_line
            started = time.monotonic()
            for count, line in enumerate(framer.feed(chunk), 1):
                handle(line)
                if count % YIELD_CHECK_LINES == 0 and time.monotonic() - started >= YIELD_AFTER_SECONDS:
                    await give_way()
                    started = time.monotonic()
            while drops:
                answer_dropped(
                    *drops.popleft(), why_dropped(self._max_line_bytes), self._reply_error, self._pending
                )
            await give_way()
        if self._close_message is None and (last := framer.end()) is not None:  # not when we closed
            self._handle_line(last)

    def _handle_line(self, line: bytes) -> None:
        try:
            message, self.nesting_bound = decode_counted(line)
            self.line_bytes = len(line)
        except Exception as exc:  # not JSON, not UTF-8, too deep, an integer over the digit limit...
            if line and not line.isspace():  # blank lines are allowed between messages
                self._skip(line, exc)
                answer_dropped(line, line, why_dropped(exc), self._reply_error, self._pending)
            return
        if type(message) is dict:  # a streamed update: straight to its handler (nothing else runs per line)
            method = message.get("method")
            handler = self.notification_handlers.get(method) if type(method) is str else None
            if handler is not None and "id" not in message and method != CANCEL_REQUEST:
                try:
                    handler(message.get("params"))
                except Exception:
                    log.exception("handler for %s failed", method)
                return
        for item in message if type(message) is list else (message,):  # a batch, or one message
            try:
                if not isinstance(item, dict):
                    raise ValueError("a JSON value that is not a message object")
                self._dispatch(item)
            except Exception as exc:
                self._skip(line, exc)

    def _skip(self, line: bytes, error: Exception) -> None:
        self._skipped += 1
        level = logging.WARNING if self._skipped <= MAX_SKIP_WARNINGS else logging.DEBUG
        why, preview = f"{type(error).__name__}: {str(error)[:160]}", line[:120].decode("utf-8", "replace")
        log.log(level, "skipped a message from the agent (%s): %r", why, preview)
        if self._skipped == MAX_SKIP_WARNINGS:
            log.warning("further skipped messages on this connection are logged at debug level")

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._start_incoming_request(message["id"], method, message.get("params"))
                return
            # Notifications (every streamed update): one lookup and the handler, nothing in between.
            handler = self.notification_handlers.get(method)
            if handler is None or method == CANCEL_REQUEST:
                if method == CANCEL_REQUEST:
                    self._cancel_incoming(message.get("params"))
                else:
                    log.debug("ignored notification %s", method)
                return
            try:
                handler(message.get("params"))
            except Exception:
                log.exception("handler for %s failed", method)
            return
        if "id" not in message:
            log.debug("ignored a message with neither method nor id: %.200r", message)
            return
        response_id = message["id"]
        # By JSON type: Python's True == 1 and 1.0 == 1, but only an integer is one of our ids.
        is_ours = type(response_id) is int and 0 <= response_id < self._next_id
        call = self._pending.get(response_id) if is_ours else None
        if call is None or call.done.is_set():
            if is_ours:  # a late answer to a request we abandoned (or a duplicate): expected
                log.debug("ignored a response to finished request %d", response_id)
            else:
                raise ValueError(f"a response with an unknown id {json.dumps(response_id)[:60]}")
            return
        error = message.get("error")
        if error is not None:
            if isinstance(error, dict):
                code = error.get("code")
                call.error = AcpRpcError(
                    code if isinstance(code, int) else INTERNAL_ERROR,
                    str(error.get("message") or ""),
                    error.get("data"),
                )
            else:
                call.error = AcpRpcError(INTERNAL_ERROR, str(error))
        else:
            call.result = message.get("result")
        call.done.set()

    def _cancel_incoming(self, params: Any) -> None:
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if (scope := self._incoming_scopes.get(_hashable(request_id))) is not None:
            scope.cancel()

    def _start_incoming_request(self, request_id: Any, method: str, params: Any) -> None:
        handler = self.request_handlers.get(method)
        if handler is None or self._task_group is None:
            self._reply_error(
                request_id,
                AcpRpcError(METHOD_NOT_FOUND, f"method not supported: {method}", {"method": method}),
            )
            return
        scope = anyio.CancelScope()
        self._incoming_scopes[_hashable(request_id)] = scope
        self._task_group.start_soon(self._answer, request_id, method, params, handler, scope)

    async def _answer(
        self, request_id: Any, method: str, params: Any, handler: RequestHandler, scope: anyio.CancelScope
    ) -> None:
        try:
            with scope:
                try:
                    result = await handler(params)
                except AcpRpcError as exc:
                    self._reply_error(request_id, exc)
                    return
                except Exception as exc:
                    log.exception("handling %s from the agent failed", method)
                    self._reply_error(request_id, AcpRpcError(INTERNAL_ERROR, f"client error: {exc}"))
                    return
                try:
                    self._enqueue({"jsonrpc": "2.0", "id": request_id, "result": result})
                except Exception as exc:  # a result JSON cannot carry: still an answer, not a dead task
                    log.exception("answering %s from the agent failed", method)
                    self._reply_error(request_id, AcpRpcError(INTERNAL_ERROR, f"client error: {exc}"))
            if scope.cancelled_caught and self._close_message is None:
                self._reply_error(request_id, AcpRpcError(REQUEST_CANCELLED, "Request cancelled"))
        finally:
            self._incoming_scopes.pop(_hashable(request_id), None)

    def _reply_error(self, request_id: Any, error: AcpRpcError) -> None:
        self._enqueue({"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()})


def _hashable(value: Any) -> Any:
    # Keyed by JSON type too, so that incoming ids true and 1 (or "1" and 1) stay apart.
    key = value if isinstance(value, (int, str)) else json.dumps(value, sort_keys=True)
    return type(value).__name__, key
