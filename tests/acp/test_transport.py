"""The in-process transport: a whole connection to an agent *function*, no process.

The agents here are small async functions speaking JSON lines over ``(stdin, stdout)``; the client side
is the real ``AgentConnection`` / ``JsonRpcConnection``, exactly as the sessions layer uses it. The
byte pipe itself is tested in ``test_pipe.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from anyio.abc import ByteReceiveStream, ByteSendStream

from silo_nb.acp import (
    AcpConnectionClosed,
    AgentConnection,
    InProcessTransport,
    Transport,
)

TIMEOUT = 5.0
Message = dict[str, Any]


class Wire:
    """The agent's side of the stdio: JSON lines in and out, with the chunking the test asks for."""

    def __init__(self, stdin: ByteReceiveStream, stdout: ByteSendStream, read_size: int = 65536) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self.read_size = read_size
        self._buffer = bytearray()

    async def recv(self) -> Message | None:
        """The next message, or ``None`` at end of stdin."""
        while (newline := self._buffer.find(b"\n")) < 0:
            try:
                self._buffer += await self.stdin.receive(self.read_size)
            except anyio.EndOfStream:
                return None
        line = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        value = json.loads(line)
        assert isinstance(value, dict)
        return value

    async def send(self, message: Message, *, rng: random.Random | None = None) -> None:
        data = json.dumps(message).encode() + b"\n"
        if rng is None:
            await self.stdout.send(data)
            return
        position = 0
        while position < len(data):
            size = rng.randint(1, 50)
            await self.stdout.send(data[position : position + size])
            position += size

    async def reply(self, request: Message, result: Any) -> None:
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})


@asynccontextmanager
async def opened(transport: InProcessTransport, **kwargs: Any) -> AsyncIterator[AgentConnection]:
    connection = AgentConnection.open(transport, **kwargs)
    try:
        with anyio.fail_after(TIMEOUT):
            yield connection
    finally:
        await connection.aclose()


async def wait_task_done(transport: InProcessTransport) -> None:
    with anyio.fail_after(TIMEOUT):
        while not transport.finished:
            await anyio.sleep(0.01)


# -- InProcessTransport under a real AgentConnection ------------------------------------------------


async def echo_agent(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
    """Answers ``initialize``; on ``ask`` sends an update, asks the client, and answers with its reply."""
    wire = Wire(stdin, stdout)
    asked = 500
    while (message := await wire.recv()) is not None:
        if message.get("method") == "initialize":
            await wire.reply(message, {"protocolVersion": 1, "echo": message["params"]})
        elif message.get("method") == "ask":
            await wire.send({"jsonrpc": "2.0", "method": "session/update", "params": {"n": 1}})
            asked += 1
            await wire.send(
                {"jsonrpc": "2.0", "id": asked, "method": "session/request_permission", "params": {}}
            )
            answer = await wire.recv()
            assert answer is not None and answer["id"] == asked
            await wire.reply(message, {"client said": answer["result"]})
        elif message.get("method") == "echo":
            await wire.reply(message, message["params"])


async def test_request_response_notification_and_agent_request_round_trip() -> None:
    async def permission(params: Any) -> Any:
        return {"outcome": "allow"}

    updates: list[Any] = []
    transport = InProcessTransport(echo_agent)
    assert isinstance(transport, Transport)
    async with opened(
        transport,
        request_handlers={"session/request_permission": permission},
        notification_handlers={"session/update": updates.append},
    ) as connection:
        assert transport.name == "in-process echo_agent"
        assert connection.transport is transport
        assert connection.process is None
        assert await connection.rpc.request("initialize", {"protocolVersion": 1}) == {
            "protocolVersion": 1,
            "echo": {"protocolVersion": 1},
        }
        assert await connection.rpc.request("ask") == {"client said": {"outcome": "allow"}}
        assert updates == [{"n": 1}]
        assert connection.is_open
        assert connection.stderr_tail() == []
    assert not connection.is_open
    assert transport.finished


async def test_agent_returning_is_end_of_stream_and_fails_pending_requests() -> None:
    async def answers_once(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        wire = Wire(stdin, stdout)
        first = await wire.recv()
        assert first is not None
        await wire.reply(first, "bye")
        await wire.recv()  # reads the second request, then exits without answering

    closed: list[str] = []
    transport = InProcessTransport(answers_once)
    async with opened(transport) as connection:
        connection.on_closed(closed.append)
        assert await connection.rpc.request("first") == "bye"
        with pytest.raises(AcpConnectionClosed) as caught:
            await connection.rpc.request("second")
        assert str(caught.value) == "agent exited with code 0"
        assert await transport.describe_end() == "agent exited with code 0"
        await wait_task_done(transport)
        assert not connection.is_open
        assert connection.rpc.close_message == "agent exited with code 0"
        with anyio.fail_after(TIMEOUT):
            while not closed:
                await anyio.sleep(0.01)
    assert closed == ["agent exited with code 0"]


@pytest.mark.parametrize("when", ["at-start", "mid-request"])
async def test_agent_exception_becomes_the_close_message_and_stderr_tail(
    when: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def crashes(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        if when == "mid-request":
            wire = Wire(stdin, stdout)
            await wire.send({"jsonrpc": "2.0", "method": "session/update", "params": "partial"})
            await wire.recv()
        raise RuntimeError("the model backend went away\nsecond line of detail")

    updates: list[Any] = []
    closed: list[str] = []
    expected = "agent exited with an error:\nRuntimeError: the model backend went away"
    transport = InProcessTransport(crashes)
    with caplog.at_level(logging.WARNING, logger="silo_nb"):
        async with opened(transport, notification_handlers={"session/update": updates.append}) as conn:
            conn.on_closed(closed.append)
            with pytest.raises(AcpConnectionClosed) as caught:
                await conn.rpc.request("session/prompt")
            assert str(caught.value) == expected
            assert conn.stderr_tail() == ["RuntimeError: the model backend went away"]
            assert conn.stderr_tail(0) == []
            assert await transport.describe_end() == expected
            with anyio.fail_after(TIMEOUT):
                while not closed:
                    await anyio.sleep(0.01)
    assert closed == [expected]
    assert updates == (["partial"] if when == "mid-request" else [])
    failures = [r for r in caplog.records if r.getMessage() == "in-process crashes failed"]
    assert len(failures) == 1 and failures[0].exc_info is not None


async def test_aclose_cancels_an_agent_that_ignores_end_of_stdin_after_the_grace() -> None:
    seen: list[str] = []

    async def stubborn(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        wire = Wire(stdin, stdout)
        while await wire.recv() is not None:
            pass
        seen.append("eof")
        try:
            await anyio.sleep_forever()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    transport = InProcessTransport(stubborn, grace=0.3)
    connection = AgentConnection.open(transport)
    call = connection.rpc.start_request("session/prompt")
    await anyio.sleep(0.05)
    with anyio.fail_after(TIMEOUT):
        await connection.aclose()
    assert seen == ["eof", "cancelled"]  # EOF first, then cancelled once the grace ran out
    assert transport.finished
    with pytest.raises(AcpConnectionClosed, match=r"^ACP client disposed$"):
        await call.wait()
    with anyio.fail_after(TIMEOUT):
        await transport.aclose()  # idempotent


async def test_aclose_does_not_wait_the_grace_for_an_agent_that_exits_on_eof() -> None:
    seen: list[str] = []

    async def polite(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        try:
            await echo_agent(stdin, stdout)
            seen.append("returned")
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    transport = InProcessTransport(polite, grace=300)  # waiting it out would trip the hang guard
    connection = AgentConnection.open(transport)
    assert await connection.rpc.request("echo", "x") == "x"
    with anyio.fail_after(TIMEOUT):
        await connection.aclose("done here")
    assert seen == ["returned"]
    assert connection.rpc.close_message == "done here"


async def test_kill_now_cancels_the_agent_without_awaiting() -> None:
    cancelled = anyio.Event()

    async def sleeper(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    transport = InProcessTransport(sleeper)
    connection = AgentConnection.open(transport)
    call = connection.rpc.start_request("x")
    await anyio.sleep(0.02)
    connection.kill_now()
    assert not connection.is_open
    with anyio.fail_after(TIMEOUT):
        await cancelled.wait()
        with pytest.raises(AcpConnectionClosed):
            await call.wait()
    await wait_task_done(transport)


async def test_cancelling_run_leaves_the_agent_running_until_aclose() -> None:
    async def sleeper(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        await anyio.sleep_forever()

    transport = InProcessTransport(sleeper, grace=0.05)
    with anyio.move_on_after(0.05):
        await transport.run()
    assert transport.task is not None and not transport.finished
    with anyio.fail_after(TIMEOUT):
        await transport.aclose()
    assert transport.finished and transport.task.cancelled()
    assert await transport.describe_end() == "ACP connection closed"


async def test_agent_that_closes_stdout_then_finishes_is_described_after_it_returns() -> None:
    async def closes_early(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        await stdout.aclose()
        await anyio.sleep(0.1)

    transport = InProcessTransport(closes_early, grace=2)
    async with opened(transport) as connection:
        with pytest.raises(AcpConnectionClosed, match=r"^agent exited with code 0$"):
            await connection.rpc.request("x")


async def test_five_mebibyte_lines_pass_both_ways() -> None:
    blob = "0123456789abcdef" * (5 << 16)  # 5 MiB
    big_updates: list[Any] = []

    async def big_talker(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        wire = Wire(stdin, stdout)
        while (message := await wire.recv()) is not None:
            await wire.send({"jsonrpc": "2.0", "method": "session/update", "params": {"blob": blob}})
            await wire.reply(message, {"length": len(message["params"]["blob"]), "blob": blob})

    async with opened(
        InProcessTransport(big_talker), notification_handlers={"session/update": big_updates.append}
    ) as connection:
        result = await connection.rpc.request("echo", {"blob": blob})
    assert result == {"length": len(blob), "blob": blob}
    assert big_updates == [{"blob": blob}]


async def test_arbitrary_chunking_both_ways_keeps_every_message_in_order() -> None:
    count = 200
    seen: list[int] = []

    async def choppy(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        rng = random.Random(99)
        wire = Wire(stdin, stdout, read_size=7)  # reads the client's lines in 7-byte pieces
        while (message := await wire.recv()) is not None:
            for i in range(count):
                await wire.send({"jsonrpc": "2.0", "method": "n", "params": i}, rng=rng)
            await wire.send({"jsonrpc": "2.0", "id": message["id"], "result": message["params"]}, rng=rng)

    async with opened(InProcessTransport(choppy), notification_handlers={"n": seen.append}) as connection:
        params = {"text": "é🙂 line\nbreak", "pad": "z" * 500}
        assert await connection.rpc.request("go", params) == params
    assert seen == list(range(count))


async def test_aclose_gives_up_on_an_agent_that_swallows_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = anyio.Event()

    async def swallows(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        try:
            await anyio.sleep_forever()
        except asyncio.CancelledError:
            await release.wait()  # refuses to stop until the test lets it

    transport = InProcessTransport(swallows, grace=0.1)
    connection = AgentConnection.open(transport)
    await anyio.sleep(0.02)
    with caplog.at_level(logging.WARNING, logger="silo_nb"), anyio.fail_after(TIMEOUT):
        await connection.aclose()
    assert not connection.is_open
    assert not transport.finished
    assert any("did not stop after being cancelled" in r.getMessage() for r in caplog.records)
    release.set()
    await wait_task_done(transport)


async def test_aclose_interrupted_during_the_grace_still_cancels_the_agent() -> None:
    async def ignores_eof(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        await anyio.sleep_forever()

    transport = InProcessTransport(ignores_eof, grace=5)
    connection = AgentConnection.open(transport)
    await anyio.sleep(0.02)
    with anyio.move_on_after(0.1) as scope:
        await transport.aclose()
    assert scope.cancelled_caught
    await wait_task_done(transport)
    assert transport.task is not None and transport.task.cancelled()
    with pytest.raises(anyio.ClosedResourceError):
        await transport.receive.receive()
    await connection.aclose()


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (3, "agent exited with code 3"),
        ("usage: agent [--flag]", "agent exited with code 1:\nusage: agent [--flag]"),
    ],
)
async def test_an_agent_calling_sys_exit_ends_like_a_process_not_the_loop(
    code: object, expected: str
) -> None:
    """``SystemExit`` from an agent function (sys.exit, argparse) must not escape into the caller's loop."""

    async def exits(stdin: ByteReceiveStream, stdout: ByteSendStream) -> None:
        await Wire(stdin, stdout).recv()
        raise SystemExit(code)

    transport = InProcessTransport(exits)
    async with opened(transport) as conn:
        with pytest.raises(AcpConnectionClosed) as caught:
            await conn.rpc.request("session/prompt")
        assert str(caught.value) == expected
        assert await transport.describe_end() == expected
    await anyio.sleep(0.01)  # the loop is alive and well
