"""``comm_pump`` on a stand-in for ipykernel 6's kernel: its shell queue (a tornado ``Queue`` of
``(index, dispatch, args)``), real wire frames made by jupyter_client's ``Session``, and a
``dispatch_shell`` that does to the parent and the saved SIGINT handler what ipykernel's does.

- The comm messages waiting in the queue are dispatched; every other entry stays, in its order (the next
  cells of "Run All" run after the cell, one by one, as the kernel queued them).
- After each dispatch the cell's parent, its routing ident and the saved SIGINT handler are the cell's
  again.
- Leaving :func:`comms_reach_the_cell` waits for a dispatch under way instead of cancelling it.
- Which kernels are pumped: ipykernel 6.29–6.x; 7.4 delivers comm messages by itself; 7.0–7.3 and
  anything older keep background mode. The real-kernel side: ``tests/integration/test_kernel.py``.
"""

from __future__ import annotations

import asyncio
import types
from typing import Any

import ipykernel
import pytest
import zmq
from jupyter_client.session import Session
from tornado.queues import Queue

from silo_nb.notebook.magics.comm_pump import comms_reach_the_cell, dispatch_waiting_comms, kernel_mode
from silo_nb.notebook.magics.waker import can_block

CELL = {"header": {"msg_id": "cell", "msg_type": "execute_request"}}


class FakeKernel:
    """What ``comm_pump`` uses of ipykernel 6's ``IPythonKernel``, and nothing more."""

    def __init__(self) -> None:
        self.session = Session(key=b"secret")
        self.msg_queue: Queue[Any] = Queue()
        self.dispatched: list[str] = []
        self.parent: dict[str, Any] = CELL
        self._parent_ident = {"shell": b"cell-ident"}
        self.saved_sigint_handler: Any = "the kernel's own"
        self.hold: asyncio.Event | None = None  # a dispatch waits for it, when set

    async def dispatch_shell(self, frames: list[Any]) -> None:
        _, parts = self.session.feed_identities(frames, copy=False)
        message = self.session.deserialize(parts, content=True, copy=False)
        # ipykernel's dispatch_shell: the message becomes the parent; pre_handler_hook saves the handler
        self.set_parent([b"client"], message)
        self.saved_sigint_handler = "the cell's"
        if self.hold is not None:
            await self.hold.wait()
        self.dispatched.append(message["content"].get("name", message["msg_type"]))

    def get_parent(self, channel: str = "shell") -> dict[str, Any]:
        return self.parent

    def set_parent(self, ident: Any, parent: dict[str, Any], channel: str = "shell") -> None:
        self._parent_ident[channel] = ident
        self.parent = parent

    def queue(self, msg_type: str, name: str) -> tuple[int, Any, tuple[Any, ...]]:
        """Put a shell message on the queue as ipykernel 6's ``schedule_dispatch`` does."""
        message = self.session.msg(msg_type, {"name": name})
        frames = [zmq.Frame(part) for part in self.session.serialize(message, ident=b"client")]
        entry = (self.msg_queue.qsize(), self.dispatch_shell, (frames,))
        self.msg_queue.put_nowait(entry)
        return entry

    def queued(self) -> list[Any]:
        entries = []
        while not self.msg_queue.empty():
            entries.append(self.msg_queue.get_nowait())
        return entries


async def advance_eventloop() -> None:
    """Not a shell message: an entry ipykernel queues for its GUI event loop integration."""


async def test_comm_messages_are_dispatched_and_the_rest_stay_queued_in_order() -> None:
    kernel = FakeKernel()
    first = kernel.queue("execute_request", "cell 2")
    kernel.queue("comm_msg", "click")
    second = kernel.queue("execute_request", "cell 3")
    kernel.queue("comm_open", "new widget")
    other = (99, advance_eventloop, ())
    kernel.msg_queue.put_nowait(other)
    broken = (100, kernel.dispatch_shell, ([zmq.Frame(b"no delimiter")],))
    kernel.msg_queue.put_nowait(broken)
    third = kernel.queue("comm_info_request", "not a comm message")

    assert await dispatch_waiting_comms(kernel) == 2
    assert kernel.dispatched == ["click", "new widget"]
    assert kernel.queued() == [first, second, other, broken, third]
    assert kernel.parent is CELL and kernel._parent_ident["shell"] == b"cell-ident"
    assert kernel.saved_sigint_handler == "the kernel's own"


async def test_an_empty_queue_dispatches_nothing() -> None:
    kernel = FakeKernel()
    assert await dispatch_waiting_comms(kernel) == 0
    assert kernel.parent is CELL


def pumped_shell(kernel: FakeKernel, monkeypatch: pytest.MonkeyPatch, version: str = "6.29.5") -> Any:
    monkeypatch.setattr(ipykernel, "__version__", version)
    return types.SimpleNamespace(kernel=kernel, autoawait=True)


async def test_a_click_queued_while_the_cell_awaits_reaches_it(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = FakeKernel()
    shell = pumped_shell(kernel, monkeypatch)
    clicked = asyncio.Event()

    async def dispatch_and_note(frames: list[Any]) -> None:
        await FakeKernel.dispatch_shell(kernel, frames)
        clicked.set()

    kernel.dispatch_shell = dispatch_and_note  # type: ignore[method-assign]
    async with comms_reach_the_cell(shell):
        kernel.queue("execute_request", "next cell")
        kernel.queue("comm_msg", "click")
        await clicked.wait()  # the cell's own work, waiting for the click (a hang here fails the test)
    assert kernel.dispatched == ["click"]
    assert [entry[1] for entry in kernel.queued()] == [kernel.dispatch_shell]  # the next cell, still queued


async def test_leaving_waits_for_a_dispatch_under_way(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = FakeKernel()
    shell = pumped_shell(kernel, monkeypatch)
    kernel.hold = asyncio.Event()
    kernel.queue("comm_msg", "slow handler")

    async def cell() -> None:
        async with comms_reach_the_cell(shell):
            while kernel.parent is CELL:  # the dispatch has begun (it set its own parent)
                await asyncio.sleep(0)

    leaving = asyncio.ensure_future(cell())
    while kernel.parent is CELL:
        await asyncio.sleep(0)
    await asyncio.sleep(0.1)
    assert not leaving.done()  # the cell waits for the handler rather than cancelling it halfway
    kernel.hold.set()
    await leaving
    assert kernel.dispatched == ["slow handler"] and kernel.parent is CELL


@pytest.mark.parametrize(
    ("version", "mode"),
    [
        ("6.28.0", "background"),
        ("6.29.5", "pump"),
        ("6.31.0", "pump"),
        ("7.3.0", "background"),
        ("7.4.0", "native"),
    ],
)
def test_which_kernels_block_and_how(version: str, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    shell = pumped_shell(FakeKernel(), monkeypatch, version)
    assert kernel_mode(shell) == mode
    assert can_block(shell) is (mode != "background")


def test_a_plain_ipython_shell_always_blocks() -> None:
    assert can_block(types.SimpleNamespace(kernel=None, autoawait=True))
