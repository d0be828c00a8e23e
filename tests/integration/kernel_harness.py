"""A real kernel driven by jupyter_client, playing the browser: execute, watch IOPub, click, interrupt."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_client.manager import AsyncKernelManager

if TYPE_CHECKING:
    from tests.conftest import Workspace

Message = dict[str, Any]
SHELL_POLL_SECONDS = 0.05  # the longest a reply waits in the socket after a lost wake-up (see _pump_shell)


class KernelHarness:
    def __init__(self, km: AsyncKernelManager, kc: Any) -> None:
        self.km = km
        self.kc = kc
        self.iopub: list[Message] = []
        self.replies: dict[str, Message] = {}
        self._replied = asyncio.Event()  # set at each reply: a waiter wakes at once, not at a poll tick
        self._idle: set[str] = set()  # requests whose outputs are all published (IOPub status idle)
        self._went_idle = asyncio.Event()
        self._pumps: list[asyncio.Task[None]] = []

    @classmethod
    async def start(cls, cwd: Path, env: dict[str, str], kernel_name: str = "python3") -> KernelHarness:
        km = AsyncKernelManager(kernel_name=kernel_name)
        await km.start_kernel(env={**os.environ, **env}, cwd=str(cwd))
        kc = km.client()
        kc.start_channels()
        await kc.wait_for_ready(timeout=60)
        harness = cls(km, kc)
        harness._pumps = [
            asyncio.create_task(harness._pump_iopub()),
            asyncio.create_task(harness._pump_shell()),
        ]
        return harness

    async def _pump_iopub(self) -> None:
        while True:
            message = await self.kc.get_iopub_msg()
            self.iopub.append(message)
            if message["msg_type"] == "status" and message["content"].get("execution_state") == "idle":
                self._idle.add(message["parent_header"].get("msg_id"))
                self._went_idle.set()
                self._went_idle = asyncio.Event()

    async def _pump_shell(self) -> None:
        # Polled with a short timeout, never waited on for good: requests are sent on this same socket
        # (``execute``, ``click``), and a send can consume the wake-up of a poll already waiting on it (a
        # zmq.asyncio socket's descriptor is edge-triggered). One such poll waited forever, with the
        # kernel's reply in the socket — what the benchmarks took for a wedged kernel: the kernel had
        # answered (its IOPub said so) and its sockets held nothing. A new poll looks at the socket first.
        while True:
            try:
                message = await self.kc.get_shell_msg(timeout=SHELL_POLL_SECONDS)
            except queue.Empty:
                continue
            self.replies[message["parent_header"].get("msg_id")] = message
            self._replied.set()
            self._replied = asyncio.Event()

    def execute(self, code: str, *, cell_id: str | None = None) -> str:
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        message = self.kc.session.msg("execute_request", content)
        if cell_id is not None:
            message["metadata"]["cellId"] = cell_id
        self.kc.shell_channel.send(message)
        return str(message["header"]["msg_id"])

    async def reply(self, msg_id: str, timeout: float = 60, *, settled: bool = True) -> Message:
        """The execute reply; with ``settled`` (the default) also every output of the request (its IOPub
        "idle"), which a test reading outputs needs. A latency probe takes the reply alone: the answer."""
        async with asyncio.timeout(timeout):
            while msg_id not in self.replies:
                await self._replied.wait()
            # The reply and the outputs travel on different sockets: the request is done once the kernel
            # said "idle" for it on IOPub (everything it printed or displayed was published before).
            while settled and msg_id not in self._idle:
                await self._went_idle.wait()
        return self.replies[msg_id]

    async def run(self, code: str, timeout: float = 60, **kwargs: Any) -> Message:
        msg_id = self.execute(code, **kwargs)
        reply = await self.reply(msg_id, timeout)
        assert reply["content"]["status"] == "ok", (code, reply["content"], self.outputs(msg_id, "stream"))
        return reply

    async def wait_for(self, predicate: Callable[[Message], bool], timeout: float = 30) -> Message:
        async with asyncio.timeout(timeout):
            while True:
                for message in self.iopub:
                    if predicate(message):
                        return message
                await asyncio.sleep(0.02)

    def outputs(self, msg_id: str, *types: str) -> list[Message]:
        return [
            m
            for m in self.iopub
            if m["parent_header"].get("msg_id") == msg_id and (not types or m["msg_type"] in types)
        ]

    def click(self, comm_id: str) -> None:
        content = {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}}
        self.kc.shell_channel.send(self.kc.session.msg("comm_msg", content))

    async def stop(self) -> None:
        for task in self._pumps:
            task.cancel()
        self.kc.stop_channels()
        await self.km.shutdown_kernel(now=True)


def button_opened(label: str) -> Callable[[Message], bool]:
    def matches(message: Message) -> bool:
        if message["msg_type"] != "comm_open":
            return False
        state = message["content"].get("data", {}).get("state", {})
        return state.get("_model_name") == "ButtonModel" and str(state.get("description", "")).startswith(
            label
        )

    return matches


def kernel_env(
    workspace: Workspace, *, demo_delay: str | None = None, profiles: Path | bool = False, **extra: str
) -> dict[str, str]:
    """A test kernel's environment on ``workspace``: its data folder; with ``demo_delay`` the demo agent's
    store and pace; with ``profiles`` the workspace's profiles file (True) or that one; then ``extra``."""
    env = {"SILO_NB_DATA_DIR": str(workspace.data), "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    if demo_delay is not None:
        env |= {
            "SILO_NB_DEMO_STATE_DIR": str(workspace.root / "demo-state"),
            "SILO_NB_DEMO_DELAY": demo_delay,
        }
    if profiles is not False:
        path = workspace.config / "silo" / "profiles.json" if profiles is True else profiles
        env["SILO_NB_PROFILES"] = str(path)
    return env | extra


@contextlib.asynccontextmanager
async def silo_kernel(
    workspace: Workspace, env: dict[str, str], *setup: str, kernel_name: str = "python3"
) -> AsyncIterator[KernelHarness]:
    """A real kernel (the kernelspec ``kernel_name``) in the workspace's folder with silo_nb loaded and
    each of ``setup`` run; stopped after, whatever happened."""
    harness = await KernelHarness.start(workspace.folder, env, kernel_name)
    try:
        await harness.run("%load_ext silo_nb")
        for code in setup:
            await harness.run(code)
        yield harness
    finally:
        await harness.stop()
