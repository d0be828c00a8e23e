"""The replay agent process's stdin and stdout as anyio byte streams (``python -m silo_nb.replay_agent``).

stdin is read through the event loop (``connect_read_pipe``: the client spawns agents with pipes); each
line written to stdout is flushed at once so the client sees it without delay.
"""

from __future__ import annotations

import asyncio
import sys

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["open_stdio"]


class _Stdin(ByteReceiveStream):
    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = await self._reader.read(max_bytes)
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        return None


class _Stdout(ByteSendStream):
    async def send(self, item: bytes) -> None:
        try:
            sys.stdout.buffer.write(item)
            sys.stdout.buffer.flush()
        except (OSError, ValueError) as exc:  # the client closed our stdout
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        return None


async def open_stdio() -> tuple[ByteReceiveStream, ByteSendStream]:
    reader = asyncio.StreamReader(limit=1 << 20)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    return _Stdin(reader), _Stdout()
