"""An in-memory, one-way byte pipe with anyio's byte-stream interfaces (the in-process transport's stdio).

- One writer end (:class:`PipeSendStream`) and one reader end (:class:`PipeReceiveStream`), like an OS
  pipe but inside one event loop; :func:`memory_byte_pipe` returns both, as
  ``anyio.create_memory_object_stream`` does for objects.
- A byte stream, not a message queue: a reader gets at most ``max_bytes`` per ``receive``, so one write
  may arrive in several pieces. Write boundaries are kept otherwise (two writes never come back as one
  chunk), which lets tests choose the exact chunking a reader sees.
- Back-pressure without a size cap on a single write: a writer waits while ``max_buffer_bytes`` or more
  are queued, then queues its whole write. A line of many MB therefore passes, and a writer that outruns
  its reader still stops.
- Ends like a pipe: closing the writer gives the reader the queued bytes, then ``EndOfStream``; closing
  the reader makes writes fail with ``BrokenResourceError``. Using an end after closing *it* raises
  ``ClosedResourceError``. ``close()`` is synchronous so it can run from ``finally`` blocks and without a
  loop.
"""

from __future__ import annotations

from collections import deque

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["DEFAULT_PIPE_BUFFER_BYTES", "BytePipe", "PipeReceiveStream", "PipeSendStream", "memory_byte_pipe"]

DEFAULT_PIPE_BUFFER_BYTES = 1 << 20


class BytePipe:
    """The shared buffer of one pipe. Use :attr:`send_stream` and :attr:`receive_stream`."""

    def __init__(self, max_buffer_bytes: int = DEFAULT_PIPE_BUFFER_BYTES) -> None:
        if max_buffer_bytes < 1:
            raise ValueError("max_buffer_bytes must be at least 1")
        self.max_buffer_bytes = max_buffer_bytes
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._writer_closed = False
        self._reader_closed = False
        # Created on first wait: an anyio.Event needs a running loop, a pipe may be built before one.
        self._changed: anyio.Event | None = None
        self.send_stream = PipeSendStream(self)
        self.receive_stream = PipeReceiveStream(self)

    @property
    def buffered_bytes(self) -> int:
        """Bytes written and not yet received."""
        return self._buffered

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def _wait_for_change(self) -> None:
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()

    async def _send(self, data: bytes) -> None:
        await anyio.lowlevel.checkpoint()
        while True:
            if self._writer_closed:
                raise anyio.ClosedResourceError
            if self._reader_closed:
                raise anyio.BrokenResourceError
            if self._buffered < self.max_buffer_bytes:
                break
            await self._wait_for_change()
        if data:
            self._chunks.append(bytes(data))
            self._buffered += len(data)
            self._notify()

    async def _receive(self, max_bytes: int) -> bytes:
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        await anyio.lowlevel.checkpoint()
        while True:
            if self._reader_closed:
                raise anyio.ClosedResourceError
            if self._chunks:
                break
            if self._writer_closed:
                raise anyio.EndOfStream
            await self._wait_for_change()
        head = self._chunks[0]
        if len(head) > max_bytes:
            data, self._chunks[0] = head[:max_bytes], head[max_bytes:]
        else:
            data = self._chunks.popleft()
        self._buffered -= len(data)
        self._notify()
        return data

    def close_writer(self) -> None:
        self._writer_closed = True
        self._notify()

    def close_reader(self) -> None:
        self._reader_closed = True
        self._chunks.clear()
        self._buffered = 0
        self._notify()


class PipeSendStream(ByteSendStream):
    """The writing end of a :class:`BytePipe` (an agent's stdout, or our side of its stdin)."""

    def __init__(self, pipe: BytePipe) -> None:
        self.pipe = pipe

    async def send(self, item: bytes) -> None:
        await self.pipe._send(item)

    def close(self) -> None:
        """End the stream now: the reader gets what is queued, then ``EndOfStream``."""
        self.pipe.close_writer()

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()


class PipeReceiveStream(ByteReceiveStream):
    """The reading end of a :class:`BytePipe`."""

    def __init__(self, pipe: BytePipe) -> None:
        self.pipe = pipe

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self.pipe._receive(max_bytes)

    def close(self) -> None:
        """Stop reading: queued bytes are dropped and the writer's next send is ``BrokenResourceError``."""
        self.pipe.close_reader()

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()


def memory_byte_pipe(
    max_buffer_bytes: int = DEFAULT_PIPE_BUFFER_BYTES,
) -> tuple[PipeSendStream, PipeReceiveStream]:
    """A new pipe's two ends: ``(send, receive)``."""
    pipe = BytePipe(max_buffer_bytes)
    return pipe.send_stream, pipe.receive_stream
