"""What silo_nb itself sends and answers, recorded: its real client (``AgentsService``) against the demo
agent served in-process, the bytes both ways split into messages.

Each conversation is one agent connection, so request ids stay unambiguous:

- ``silo-client-files``: initialize, session/new, a prompt whose edit asks permission and goes through
  ``fs/read_text_file``/``fs/write_text_file``, then ``session/delete``.
- ``silo-client-terminal``: a prompt that runs a command in a client terminal (``terminal/create``,
  ``wait_for_exit``, ``output``, ``release``), a config option set, a prompt cancelled (``session/cancel``),
  then ``session/close``.
- ``silo-client-question``: a question answered (``elicitation/create``), a prompt with an image.
- ``silo-client-logout``: ``logout`` on a demo agent that asks for a sign-in.

``test_golden.py`` checks the recorded files and a fresh recording against the official schema models;
they are not compared as text (terminal output and timings differ between runs). Re-record with
``PYTHONPATH=. python -m tests.golden.record silo-client-files`` (and the others).
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

import silo_nb
from silo_nb.acp import InProcessTransport, Transport
from silo_nb.sessions.profiles import AgentProfile
from silo_nb_agents.demo import serve

Line = dict[str, Any]
PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
_TERMINAL_ID = re.compile(r"^term-[0-9a-f]+$")


class _Splitter:
    """Bytes of one direction → one recorded line per JSON-RPC message."""

    def __init__(self, sender: str, lines: list[Line]) -> None:
        self.sender, self.lines, self.buffer = sender, lines, b""

    def feed(self, data: bytes) -> None:
        self.buffer += data
        *complete, self.buffer = self.buffer.split(b"\n")
        for raw in complete:
            if raw.strip():
                self.lines.append({"from": self.sender, "message": json.loads(raw)})


class _TeeReceive(ByteReceiveStream):
    def __init__(self, inner: ByteReceiveStream, splitter: _Splitter) -> None:
        self.inner, self.splitter = inner, splitter

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = await self.inner.receive(max_bytes)
        self.splitter.feed(data)
        return data

    async def aclose(self) -> None:
        await self.inner.aclose()


class _TeeSend(ByteSendStream):
    def __init__(self, inner: ByteSendStream, splitter: _Splitter) -> None:
        self.inner, self.splitter = inner, splitter

    async def send(self, item: bytes) -> None:
        self.splitter.feed(item)
        await self.inner.send(item)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Recorder:
    """A transport factory that serves the demo agent in-process and records each connection."""

    def __init__(self) -> None:
        self.conversations: list[list[Line]] = []

    async def __call__(self, profile: AgentProfile, cwd: str) -> Transport:
        lines: list[Line] = []
        self.conversations.append(lines)
        argv = list(profile.args)[2:]  # after "-m silo_nb_agents.demo"

        async def agent(receive: ByteReceiveStream, send: ByteSendStream) -> None:
            await serve(
                _TeeReceive(receive, _Splitter("client", lines)),
                _TeeSend(send, _Splitter("agent", lines)),
                argv,
            )

        return InProcessTransport(agent, name="recorded demo agent")


@asynccontextmanager
async def _service(root: Path) -> AsyncIterator[tuple[silo_nb.AgentsService, Recorder, Path]]:
    folder, config = root / "project", root / "config" / "silo"
    folder.mkdir()
    config.mkdir(parents=True)
    demo = ["-m", "silo_nb_agents.demo", "--delay", "0", "--state-dir", str(root / "demo-state")]
    profiles = [
        {"id": "golden", "label": "Golden demo", "command": "python", "args": demo},
        {
            "id": "golden-auth",
            "label": "Golden auth",
            "command": "python",
            "args": [*demo, "--auth-on-prompt"],
        },
    ]
    (config / "profiles.json").write_text(json.dumps({"profiles": profiles}))
    recorder = Recorder()
    service = silo_nb.AgentsService(
        workspace_dir=folder,
        config_dirs=[root / "config"],
        data_dir=root / "data",
        transport_factory=recorder,
    )
    try:
        yield service, recorder, folder
    finally:
        await service.aclose()


def _text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


async def record_client(root: Path) -> dict[str, list[Line]]:
    """Every conversation above, normalised (session and terminal ids, the working folder, times)."""
    async with _service(root) as (service, recorder, folder):
        handle = await service.sessions.connect("golden")
        handle.on_permission(lambda request: request.respond("allow-once"))
        await handle.prompt(_text("edit: recorded through the client"))
        assert await handle.delete() is True

        async with await service.sessions.connect("golden") as handle:
            await handle.prompt(_text("please run the tests"))
            await handle.set_config_option("mode", "plan")
            async with anyio.create_task_group() as group:
                group.start_soon(handle.prompt, _text("slow please"))
                await anyio.sleep(0.05)
                handle.cancel()

        async with await service.sessions.connect("golden") as handle:
            handle.on_elicitation(lambda request: request.accept({"confirm": True, "reason": "golden"}))
            await handle.prompt(_text("a risky step"))
            image = {"type": "image", "mimeType": "image/png", "data": base64.b64encode(PNG_1PX).decode()}
            await handle.prompt([*_text("what is this?"), image])

        await service.sessions.logout("golden-auth")
    names = ("silo-client-files", "silo-client-terminal", "silo-client-question", "silo-client-logout")
    assert len(recorder.conversations) == len(names), len(recorder.conversations)
    return {
        name: _normalise(lines, folder) for name, lines in zip(names, recorder.conversations, strict=True)
    }


def _normalise(lines: list[Line], folder: Path) -> list[Line]:
    from tests.golden.record import normalise

    terminals: dict[str, str] = {}

    def walk(value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if key == "terminalId" and isinstance(value, str) and _TERMINAL_ID.match(value):
            return terminals.setdefault(value, f"term-{len(terminals) + 1:012x}")
        if key == "version" and isinstance(value, str) and value == silo_nb.__version__:
            return "0.0.0"  # silo_nb's own version in clientInfo
        if key == "output" and isinstance(value, str):
            return re.sub(r"python 3\.\d+\.\d+", "python 3.x", value)
        return value

    return [walk(line) for line in normalise(lines, folder.resolve() if os.path.isdir(folder) else folder)]
