"""The demo agent's JSON-RPC 2.0 endpoint over newline-delimited JSON.

- Transport-neutral: it reads through a ``ByteReader`` (an ``async () -> bytes`` returning ``b""`` at end of
  stream) and writes through a ``ByteWriter`` (an ``async (bytes) -> None``). ``main`` adapts stdin/stdout to
  these, ``serve`` adapts anyio byte streams; nothing here knows which.
- Framing: one compact JSON object per line, written by one lock-protected ``LineWriter`` so lines never
  interleave. A line longer than the limit is dropped (logged), the stream carries on at the next newline.
- Dispatch: every incoming request runs in its own task (a ``session/prompt`` stays open for the whole turn
  while ``session/cancel`` and the answer to the agent's own requests arrive). ``route(method, params)`` is
  called synchronously, in wire order, so it can register state before any later line is read; it returns
  the call that the request's task then awaits. Notifications are
  handled inline, in arrival order; responses to the agent's requests resolve futures matched by id.
- End of stream: in-flight tasks are cancelled and awaited, pending requests cancelled, then ``run`` returns.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Final

JsonObject = dict[str, Any]
ByteReader = Callable[[], Awaitable[bytes]]
ByteWriter = Callable[[bytes], Awaitable[None]]

STREAM_LIMIT: Final = 64 * 1024 * 1024

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
AUTH_REQUIRED: Final = -32000
RESOURCE_NOT_FOUND: Final = -32002


def log(message: str) -> None:
    """Debug output (``SILO_NB_DEMO_DEBUG=1``) goes to stderr only; stdout carries the protocol."""
    if os.environ.get("SILO_NB_DEMO_DEBUG"):
        print(f"[silo-demo] {message}", file=sys.stderr, flush=True)


class RpcError(Exception):
    """An error answered to the client as a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> JsonObject:
        error: JsonObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class Reply:
    """A handler's result plus work to do once the response line has been written."""

    def __init__(self, result: JsonObject, after: Callable[[], Awaitable[None]] | None = None) -> None:
        self.result = result
        self.after = after


Outcome = JsonObject | Reply
Call = Callable[[], Awaitable[Outcome]]
Route = Callable[[str, Any], Call]
NotificationHandler = Callable[[str, Any], None]


class LineReader:
    """Cuts a byte stream into lines (without the newline); drops lines longer than ``limit``."""

    def __init__(self, read: ByteReader, limit: int = STREAM_LIMIT) -> None:
        self._read = read
        self._limit = limit
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer already known to hold no newline
        self._discarding = False  # inside an oversized line: skip up to its newline
        self._eof = False

    async def readline(self) -> bytes | None:
        """The next line, or None once the stream has ended and the buffer is empty."""
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                self._scanned = 0
                if self._discarding:
                    self._discarding = False
                    continue
                return line
            self._scanned = len(self._buffer)
            if self._scanned > self._limit:
                if not self._discarding:
                    log(f"dropped an oversized line (over {self._limit} bytes)")
                self._discarding = True
                self._buffer.clear()
                self._scanned = 0
            if self._eof:
                rest, discarding = bytes(self._buffer), self._discarding
                self._buffer.clear()
                self._scanned = 0
                self._discarding = False
                return rest if rest and not discarding else None
            # Let the requests dispatched so far start first: a read that returns at once (a regular file,
            # a buffered stream) would otherwise starve them, and end of stream would cancel them unstarted.
            await asyncio.sleep(0)
            data = await self._read()
            if data:
                self._buffer += data
            else:
                self._eof = True


class LineWriter:
    """Writes one JSON object per line; one writer at a time; a failed write closes it for good."""

    def __init__(self, write: ByteWriter) -> None:
        self._write = write
        self._lock = asyncio.Lock()
        self.closed = False

    async def send(self, message: JsonObject) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = line.encode("utf-8")
        async with self._lock:
            if self.closed:
                return
            try:
                await self._write(data)
            except (OSError, ValueError):
                self.closed = True


class Endpoint:
    """One JSON-RPC connection: dispatches incoming lines, sends requests of its own, owns their tasks."""

    def __init__(self, writer: LineWriter, route: Route, on_notification: NotificationHandler) -> None:
        self.writer = writer
        self._route = route
        self._on_notification = on_notification
        self._next_request_id = 0
        self._pending: dict[Any, asyncio.Future[JsonObject]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self, read: ByteReader, limit: int = STREAM_LIMIT) -> None:
        """Handle lines until the stream ends, then cancel what is still running."""
        reader = LineReader(read, limit)
        try:
            while (line := await reader.readline()) is not None:
                self.handle_line(line)
        finally:
            await self.shutdown()

    async def shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()

    def handle_line(self, line: bytes) -> None:
        text = line.strip()
        if not text:
            return
        try:
            message = json.loads(text)
        except ValueError:
            self._spawn(self._send_error(None, RpcError(PARSE_ERROR, "Parse error")))
            return
        for item in message if isinstance(message, list) else [message]:
            self._handle_message(item)

    def _handle_message(self, message: Any) -> None:
        if not isinstance(message, dict):
            self._spawn(self._send_error(None, RpcError(INVALID_REQUEST, "Invalid request")))
            return
        method = message.get("method")
        if isinstance(method, str):
            params = message.get("params")
            if "id" in message:
                self._spawn(self._run_request(message["id"], method, self._route(method, params)))
            else:
                self._on_notification(method, params)
        elif "id" in message and ("result" in message or "error" in message):
            request_id = message["id"]
            hashable = isinstance(request_id, (int, str)) or request_id is None
            future = self._pending.pop(request_id, None) if hashable else None
            if future is not None and not future.done():
                future.set_result(message)
        else:
            self._spawn(self._send_error(message.get("id"), RpcError(INVALID_REQUEST, "Invalid request")))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_error(self, request_id: Any, error: RpcError) -> None:
        await self.writer.send({"jsonrpc": "2.0", "id": request_id, "error": error.to_json()})

    async def notify(self, method: str, params: JsonObject) -> None:
        await self.writer.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: JsonObject) -> asyncio.Future[JsonObject]:
        """Send a request to the client; the returned future resolves to its response message."""
        request_id = self._next_request_id
        self._next_request_id += 1
        future: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        await self.writer.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return future

    async def _run_request(self, request_id: Any, method: str, call: Call) -> None:
        try:
            outcome = await call()
        except RpcError as exc:
            await self._send_error(request_id, exc)
            return
        except Exception as exc:  # any bug becomes a JSON-RPC internal error, never a crash
            log(f"{method} failed: {exc!r}")
            await self._send_error(
                request_id, RpcError(INTERNAL_ERROR, "Internal error", {"details": str(exc)})
            )
            return
        reply = outcome if isinstance(outcome, Reply) else Reply(outcome)
        await self.writer.send({"jsonrpc": "2.0", "id": request_id, "result": reply.result})
        if reply.after is not None:
            await reply.after()


def refuse(error: RpcError) -> Call:
    """A call that answers ``error`` (for routes that refuse a request before any work starts)."""

    async def call() -> Outcome:
        raise error

    return call
