"""A raw JSON-RPC driver for the demo agent, in-process (``serve`` over memory streams) or as a subprocess.

- ``AgentWire`` speaks raw JSON lines through a ``Link``; it can record every message both ways (for the
  golden fixtures).
- ``running_agent`` serves the agent in this event loop through two anyio memory object streams turned
  into byte streams (``MemoryByteSend``/``MemoryByteReceive``); ``spawned_agent`` runs
  ``python -m silo_nb_agents.demo`` as a real process. Both take the same flags.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from silo_nb_agents.demo import serve

REPO_ROOT = Path(__file__).resolve().parents[2]
TEST_TIMEOUT = 20.0
RECV_TIMEOUT = 5.0
CWD = "/home/demo/project"
MAX_LINE = 64 * 1024 * 1024

Message = dict[str, Any]
RequestHandler = Callable[["AgentWire", Message], Awaitable[Message | None]]


def bounded(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., Coroutine[Any, Any, None]]:
    """Fail a test instead of hanging: the whole body runs under ``asyncio.wait_for``."""

    @functools.wraps(test)
    async def wrapper(*args: Any, **kwargs: Any) -> None:
        await asyncio.wait_for(test(*args, **kwargs), TEST_TIMEOUT)

    return wrapper


# --------------------------------------------------------------------------- byte streams over memory


class MemoryByteSend(anyio.abc.ByteSendStream):
    """A byte send stream writing chunks into a memory object stream."""

    def __init__(self, items: MemoryObjectSendStream[bytes]) -> None:
        self._items = items

    async def send(self, item: bytes) -> None:
        if item:
            await self._items.send(item)

    async def aclose(self) -> None:
        await self._items.aclose()


class MemoryByteReceive(anyio.abc.ByteReceiveStream):
    """A byte receive stream reading chunks from a memory object stream (``EndOfStream`` once closed)."""

    def __init__(self, items: MemoryObjectReceiveStream[bytes]) -> None:
        self._items = items
        self._rest = b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while not self._rest:
            self._rest = await self._items.receive()
        chunk, self._rest = self._rest[:max_bytes], self._rest[max_bytes:]
        return chunk

    async def aclose(self) -> None:
        await self._items.aclose()


def byte_pipe(buffer: int = 64) -> tuple[MemoryByteSend, MemoryByteReceive]:
    """A one-way in-memory byte pipe holding up to ``buffer`` chunks (so writers feel back-pressure)."""
    send, receive = anyio.create_memory_object_stream[bytes](buffer)
    return MemoryByteSend(send), MemoryByteReceive(receive)


# --------------------------------------------------------------------------- links


class Link(Protocol):
    async def write(self, data: bytes) -> None: ...

    async def read_line(self) -> bytes: ...

    async def close_input(self) -> None: ...

    async def wait(self) -> int: ...


class InProcessLink:
    """``serve`` running as a task of this loop; ``wait`` returns 0 once it returned (or raises its error)."""

    def __init__(self, argv: Sequence[str]) -> None:
        self._to_agent, agent_stdin = byte_pipe()
        agent_stdout, from_agent = byte_pipe()
        self._from_agent = BufferedByteReceiveStream(from_agent)
        self.task = asyncio.ensure_future(serve(agent_stdin, agent_stdout, argv))

    async def write(self, data: bytes) -> None:
        await self._to_agent.send(data)

    async def read_line(self) -> bytes:
        try:
            return await self._from_agent.receive_until(b"\n", MAX_LINE) + b"\n"
        except (anyio.IncompleteRead, anyio.EndOfStream):
            return bytes(self._from_agent.buffer)  # what came after the last newline: b"" at a clean end

    async def close_input(self) -> None:
        await self._to_agent.aclose()

    async def wait(self) -> int:
        await self.task
        return 0


class ProcessLink:
    """``python -m silo_nb_agents.demo`` as a subprocess; ``wait`` returns its exit status."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def read_line(self) -> bytes:
        assert self.proc.stdout is not None
        return await self.proc.stdout.readline()

    async def close_input(self) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.is_closing():
            self.proc.stdin.close()

    async def wait(self) -> int:
        return await self.proc.wait()


# --------------------------------------------------------------------------- the driver


class AgentWire:
    """A tiny raw JSON-RPC peer for the demo agent."""

    def __init__(self, link: Link, record: list[Message] | None = None) -> None:
        self.link = link
        self.record = record
        self._next_id = 1

    async def send_raw(self, data: bytes) -> None:
        await self.link.write(data)

    async def send(self, *messages: Message) -> None:
        """Send messages, several at once in one write (so the agent reads them together)."""
        data = b""
        for message in messages:
            if self.record is not None:
                self.record.append({"from": "client", "message": message})
            data += (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        await self.link.write(data)

    async def recv(self, within: float = RECV_TIMEOUT) -> Message:
        line = await asyncio.wait_for(self.link.read_line(), within)
        assert line, "the agent closed its output"
        assert line.endswith(b"\n")
        message = json.loads(line)
        assert isinstance(message, dict)
        assert message["jsonrpc"] == "2.0"
        if self.record is not None:
            self.record.append({"from": "agent", "message": message})
        return message

    async def at_end_of_output(self, within: float = RECV_TIMEOUT) -> bool:
        return await asyncio.wait_for(self.link.read_line(), within) == b""

    async def request(self, method: str, params: Message) -> int:
        request_id = self._next_id
        self._next_id += 1
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    async def notify(self, method: str, params: Message) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def answer(self, request: Message, result: Message) -> None:
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def until_response(
        self, request_id: int, on_request: RequestHandler | None = None
    ) -> tuple[list[Message], Message]:
        """Collect everything up to the response to ``request_id``; agent requests go to ``on_request``."""
        seen: list[Message] = []
        while True:
            message = await self.recv()
            if message.get("id") == request_id and "method" not in message:
                return seen, message
            seen.append(message)
            if "method" in message and "id" in message:
                assert on_request is not None, f"unexpected agent request {message}"
                result = await on_request(self, message)
                if result is not None:
                    await self.answer(message, result)

    async def call(
        self, method: str, params: Message, on_request: RequestHandler | None = None
    ) -> tuple[list[Message], Message]:
        return await self.until_response(await self.request(method, params), on_request)

    async def initialize(self, boolean: bool = True) -> Message:
        capabilities: Message = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        if boolean:
            capabilities["session"] = {"configOptions": {"boolean": {}}}
        _, response = await self.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": capabilities,
                "clientInfo": {"name": "wire-test", "version": "0"},
            },
        )
        result: Message = response["result"]
        return result

    async def new_session(self, cwd: str = CWD) -> tuple[str, Message]:
        """Create a session and swallow the available_commands_update that follows it."""
        seen, response = await self.call("session/new", {"cwd": cwd, "mcpServers": []})
        assert seen == []
        result: Message = response["result"]
        follow_up = await self.recv()
        assert updates([follow_up])[0]["sessionUpdate"] == "available_commands_update"
        return result["sessionId"], result

    async def prompt(
        self,
        session_id: str,
        text: str,
        on_request: RequestHandler | None = None,
        extra: list[Message] | None = None,
    ) -> tuple[list[Message], Message]:
        blocks: list[Message] = [{"type": "text", "text": text}, *(extra or [])]
        return await self.call("session/prompt", {"sessionId": session_id, "prompt": blocks}, on_request)

    async def stop(self) -> int:
        """Close the agent's input (its stdin) and wait for it to finish: its exit status."""
        await self.link.close_input()
        return await asyncio.wait_for(self.link.wait(), 5.0)


def agent_argv(state_dir: Path, flags: Sequence[str], delay: str) -> list[str]:
    return ["--delay", delay, "--state-dir", str(state_dir), *flags]


@contextlib.asynccontextmanager
async def running_agent(
    state_dir: Path, *flags: str, delay: str = "0", record: list[Message] | None = None
) -> AsyncIterator[AgentWire]:
    """The demo agent served in-process by ``serve``."""
    link = InProcessLink(agent_argv(state_dir, flags, delay))
    wire = AgentWire(link, record)
    try:
        yield wire
    finally:
        if not link.task.done():
            try:
                await wire.stop()
            except TimeoutError:
                link.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await link.task


@contextlib.asynccontextmanager
async def spawned_agent(
    state_dir: Path,
    *flags: str,
    delay: str = "0",
    env: Mapping[str, str] | None = None,
    stderr: int = asyncio.subprocess.DEVNULL,
) -> AsyncIterator[AgentWire]:
    """``python -m silo_nb_agents.demo`` as a real subprocess."""
    environ = dict(os.environ if env is None else env)
    environ["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), environ.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "silo_nb_agents.demo",
        *agent_argv(state_dir, flags, delay),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        cwd=str(REPO_ROOT),
        env=environ,
        limit=MAX_LINE,
    )
    wire = AgentWire(ProcessLink(proc))
    try:
        yield wire
    finally:
        if proc.returncode is None:
            try:
                await wire.stop()
            except (TimeoutError, OSError):
                proc.kill()
                await proc.wait()


# --------------------------------------------------------------------------- message helpers


def updates(messages: list[Message]) -> list[Message]:
    """The ``update`` objects of the session/update notifications among ``messages``."""
    return [m["params"]["update"] for m in messages if m.get("method") == "session/update"]


def kinds(messages: list[Message]) -> list[str]:
    return [u["sessionUpdate"] for u in updates(messages)]


def collapse(sequence: list[str]) -> list[str]:
    """Merge runs of the same kind: [a, a, b, a] -> [a, b, a]."""
    return [kind for i, kind in enumerate(sequence) if i == 0 or sequence[i - 1] != kind]


def message_text(messages: list[Message], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"]["text"] for u in updates(messages) if u["sessionUpdate"] == kind)


def wire_sequence(messages: list[Message]) -> list[str]:
    return collapse(
        [
            m["params"]["update"]["sessionUpdate"] if m["method"] == "session/update" else m["method"]
            for m in messages
        ]
    )


def answer_with(option_id: str | None) -> RequestHandler:
    async def handler(wire: AgentWire, request: Message) -> Message | None:
        assert request["method"] == "session/request_permission"
        if option_id is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": option_id}}

    return handler


EDIT_SEQUENCE = [
    "agent_thought_chunk",
    "agent_message_chunk",
    "tool_call",
    "tool_call_update",
    "tool_call",
    "session/request_permission",
    "tool_call_update",
    "agent_message_chunk",
    "session_info_update",
    "usage_update",
]
