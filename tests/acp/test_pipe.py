"""``BytePipe``: the in-memory byte stream the in-process transport (and test harnesses) run over."""

from __future__ import annotations

import random

import anyio
import pytest
from anyio.abc import ByteReceiveStream, ByteSendStream

from silo_nb.acp import BytePipe, InProcessTransport, memory_byte_pipe

TIMEOUT = 5.0


async def test_pipe_delivers_every_byte_in_order_under_arbitrary_chunking() -> None:
    rng = random.Random(7)
    data = rng.randbytes(300_000)
    send, receive = memory_byte_pipe(max_buffer_bytes=4096)
    got = bytearray()

    async def writer() -> None:
        position = 0
        while position < len(data):
            size = rng.randint(0, 5000)
            await send.send(data[position : position + size])
            position += size
        send.close()

    async def reader() -> None:
        while True:
            limit = rng.randint(1, 7000)
            try:
                chunk = await receive.receive(limit)
            except anyio.EndOfStream:
                return
            assert 0 < len(chunk) <= limit
            got.extend(chunk)

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            tg.start_soon(reader)
    assert bytes(got) == data


async def test_pipe_keeps_write_boundaries_and_splits_to_max_bytes() -> None:
    send, receive = memory_byte_pipe()
    await send.send(b"abc")
    await send.send(b"defgh")
    assert await receive.receive(100) == b"abc"
    assert await receive.receive(2) == b"de"
    assert await receive.receive(100) == b"fgh"
    assert receive.pipe.buffered_bytes == 0


async def test_pipe_writer_waits_while_buffer_is_full() -> None:
    send, receive = memory_byte_pipe(max_buffer_bytes=10)
    await send.send(b"12345678")
    await send.send(b"90abc")  # accepted: the buffer was below the limit
    assert receive.pipe.buffered_bytes == 13
    with anyio.move_on_after(0.1) as scope:
        await send.send(b"blocked")
    assert scope.cancelled_caught
    assert receive.pipe.buffered_bytes == 13  # a cancelled write leaves nothing behind
    sent = anyio.Event()

    async def write() -> None:
        await send.send(b"later")
        sent.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(write)
        await anyio.sleep(0.05)
        assert not sent.is_set()
        assert await receive.receive(100) == b"12345678"  # 5 left: below the limit again
        with anyio.fail_after(TIMEOUT):
            await sent.wait()
    assert [await receive.receive() for _ in range(2)] == [b"90abc", b"later"]


async def test_pipe_single_write_far_larger_than_the_buffer_passes() -> None:
    send, receive = memory_byte_pipe(max_buffer_bytes=1024)
    blob = b"x" * (5 << 20)
    with anyio.fail_after(TIMEOUT):
        await send.send(blob)
        got = bytearray()
        while len(got) < len(blob):
            got += await receive.receive(1 << 16)
    assert got == blob


async def test_pipe_writer_close_gives_queued_bytes_then_end_of_stream() -> None:
    send, receive = memory_byte_pipe()
    await send.send(b"last words")
    await send.aclose()
    assert await receive.receive() == b"last words"
    for _ in range(2):
        with pytest.raises(anyio.EndOfStream):
            await receive.receive()
    with pytest.raises(anyio.ClosedResourceError):
        await send.send(b"more")


async def test_pipe_waiting_reader_wakes_at_end_of_stream() -> None:
    send, receive = memory_byte_pipe()
    outcome: list[str] = []

    async def read() -> None:
        try:
            await receive.receive()
        except anyio.EndOfStream:
            outcome.append("eof")

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.sleep(0.02)
            send.close()
    assert outcome == ["eof"]


async def test_pipe_reader_close_breaks_waiting_and_later_writers() -> None:
    send, receive = memory_byte_pipe(max_buffer_bytes=4)
    await send.send(b"full")
    errors: list[type[BaseException]] = []

    async def write() -> None:
        try:
            await send.send(b"waits")
        except anyio.BrokenResourceError as exc:
            errors.append(type(exc))

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            await anyio.sleep(0.02)
            await receive.aclose()
    assert errors == [anyio.BrokenResourceError]
    with pytest.raises(anyio.BrokenResourceError):
        await send.send(b"again")
    with pytest.raises(anyio.ClosedResourceError):
        await receive.receive()


def test_pipe_and_transport_can_be_built_outside_a_loop() -> None:
    pipe = BytePipe(16)
    assert pipe.buffered_bytes == 0

    async def agent(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        return None

    transport = InProcessTransport(agent)
    assert transport.name == "in-process agent"
    assert InProcessTransport(agent, name="demo").name == "in-process demo"
    assert not transport.finished
    with pytest.raises(ValueError):
        BytePipe(0)
