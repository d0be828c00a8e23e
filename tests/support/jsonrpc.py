"""The far end of a ``JsonRpcConnection`` played in-process over two in-memory byte pipes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from silo_nb.acp import PipeReceiveStream, PipeSendStream, memory_byte_pipe
from silo_nb.acp.jsonrpc import (
    JsonRpcConnection,
)

TEST_TIMEOUT = 10.0
RECV_TIMEOUT = 3.0

Message = dict[str, Any]


class Agent:
    """The far end of the connection: raw writes in, parsed lines out."""

    def __init__(self, to_client: PipeSendStream, from_client: PipeReceiveStream) -> None:
        self._to_client = to_client
        self._from_client = from_client
        self._buffer = bytearray()

    async def write(self, data: bytes) -> None:
        with anyio.fail_after(RECV_TIMEOUT):
            await self._to_client.send(data)

    async def write_chunks(self, chunks: Iterable[bytes]) -> None:
        for chunk in chunks:
            await self.write(chunk)

    async def send(self, message: Any) -> None:
        await self.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")

    async def read_line(self) -> bytes:
        with anyio.fail_after(RECV_TIMEOUT):
            while (newline := self._buffer.find(b"\n")) < 0:
                self._buffer += await self._from_client.receive()
        line = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        return line

    async def recv(self) -> Message:
        value = json.loads(await self.read_line())
        assert isinstance(value, dict)
        return value

    def end(self) -> None:
        """The agent's stdout ends (the process exited)."""
        self._to_client.close()


@dataclass
class Harness:
    conn: JsonRpcConnection
    agent: Agent
    run_done: anyio.Event

    async def wait_run_done(self) -> None:
        with anyio.fail_after(RECV_TIMEOUT):
            await self.run_done.wait()


@asynccontextmanager
async def connected(**kwargs: Any) -> AsyncIterator[Harness]:
    to_client_send, to_client_recv = memory_byte_pipe()
    from_client_send, from_client_recv = memory_byte_pipe()
    conn = JsonRpcConnection(to_client_recv, from_client_send, **kwargs)
    harness = Harness(conn, Agent(to_client_send, from_client_recv), anyio.Event())

    async def run() -> None:
        try:
            await conn.run()
        finally:
            harness.run_done.set()

    try:
        with anyio.fail_after(TEST_TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                try:
                    yield harness
                finally:
                    conn.close()
    finally:
        for stream in (to_client_send, to_client_recv, from_client_send, from_client_recv):
            stream.close()


def notification(method: str, params: Any) -> Message:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def encode(message: Any) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"
