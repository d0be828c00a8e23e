"""stdin/stdout as the ``ByteReader``/``ByteWriter`` of the demo agent process (the ``main`` path only).

- stdin: a pipe or socket is read through the loop (``connect_read_pipe``). A terminal is polled with
  ``add_reader`` so the terminal the agent shares with its shell is never switched to non-blocking mode. A
  regular file (``< requests.jsonl``) or a device the selector refuses (``< /dev/null``) is read directly:
  such reads do not block (and epoll would refuse them).
  Where the loop can do neither (Windows), reads go to the loop's default executor.
- stdout: each line is written and flushed at once, so the client sees it without delay; a closed stdout
  surfaces as ``OSError``/``ValueError``, which closes the ``LineWriter``.
"""

from __future__ import annotations

import asyncio
import os
import selectors
import stat
import sys
from typing import Final

from silo_nb_agents.demo.rpc_endpoint import ByteReader

CHUNK: Final = 64 * 1024


async def open_stdin() -> ByteReader:
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    if stat.S_ISREG(os.fstat(fd).st_mode) or not _pollable(fd):

        async def read_file() -> bytes:
            return _read(fd)

        return read_file
    if not os.isatty(fd):
        reader = asyncio.StreamReader(limit=CHUNK)
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        except (OSError, ValueError, NotImplementedError):
            pass
        else:
            return lambda: reader.read(CHUNK)

    async def read_when_ready() -> bytes:
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        try:
            loop.add_reader(fd, wake)
        except (NotImplementedError, OSError, ValueError):
            return await loop.run_in_executor(None, _read, fd)
        try:
            await ready
        finally:
            loop.remove_reader(fd)
        return _read(fd)

    return read_when_ready


def _pollable(fd: int) -> bool:
    """Whether the loop's selector can watch ``fd``: epoll refuses files and some devices (``/dev/null``)."""
    with selectors.DefaultSelector() as probe:
        try:
            probe.register(fd, selectors.EVENT_READ)
        except (OSError, ValueError):
            return False
    return True


def _read(fd: int) -> bytes:
    """One chunk; a read error ends the stream like end of file does."""
    try:
        return os.read(fd, CHUNK)
    except OSError:
        return b""


async def write_stdout(data: bytes) -> None:
    stream = sys.stdout.buffer
    stream.write(data)
    stream.flush()
