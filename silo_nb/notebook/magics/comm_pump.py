"""ipykernel 6.x: widget messages reach a cell that awaits, as ipykernel 7.4 delivers them by itself.

- ipykernel 6 takes shell requests one at a time from its queue (``kernel.msg_queue``): while a cell
  awaits, a click's ``comm_msg`` waits behind the cell, so a blocking ``%%prompt`` would wait for ever for
  the permission that click answers. While a silo_nb cell blocks, :func:`comms_reach_the_cell` takes the
  comm messages (``comm_open``, ``comm_msg``, ``comm_close``) out of that queue every
  :data:`PUMP_INTERVAL_SECONDS` and hands them to the kernel's own ``dispatch_shell``; every other request
  (the next cells of "Run All", a completion) stays queued, in its order. This is what 7.4 does (its
  ``shell_main`` lets comm messages past a running async cell), done from the cell's side.
- ``dispatch_shell`` makes the message it handles the kernel's parent (where outputs and the cell's
  idle status go) and overwrites the SIGINT handler the kernel keeps for between requests; both are put
  back after each dispatch, or the cell's own outputs would go to the click and it would never be seen
  to end. A dispatch is never cancelled halfway: leaving waits for the one under way.
- jupyter-ui-poll is not used: it dispatches every queued request, keeps the queued cells aside and
  replays them when the cell ends; cells it did not take yet then ran at the same time as the replayed
  ones, out of order (measured on 6.29.5), and it loses clicks on 7.4.
- :func:`kernel_mode` says which kernel this is: "native" (7.4 and later), "pump" (6.29 up to 7.0) or
  "background" (7.0–7.3, whose requests each wait on a lock, and anything older or unknown: there
  ``%%prompt`` returns at once and the turn streams in the background).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Literal

__all__ = [
    "COMM_MESSAGES",
    "PUMP_INTERVAL_SECONDS",
    "comms_reach_the_cell",
    "dispatch_waiting_comms",
    "kernel_mode",
]

COMM_MESSAGES = frozenset({"comm_open", "comm_msg", "comm_close"})
PUMP_INTERVAL_SECONDS = 0.05  # the longest a click waits in the queue (7.4 dispatches it at once)

KernelMode = Literal["native", "pump", "background"]

# One dispatch at a time, whichever blocking coroutines pump: each puts back the parent it found.
_dispatching: asyncio.Lock | None = None


def kernel_mode(shell: Any) -> KernelMode:
    """How a cell of ``shell``'s kernel can await silo_nb's work and still get widget clicks."""
    kernel = getattr(shell, "kernel", None)
    try:
        import ipykernel

        version: str = getattr(ipykernel, "__version__", "0.0")
        major, minor = (int(part) for part in version.split(".")[:2])
    except (ImportError, ValueError):
        return "background"
    if (major, minor) >= (7, 4):
        return "native"
    if (
        (6, 29) <= (major, minor) < (7, 0)
        and hasattr(kernel, "msg_queue")
        and hasattr(kernel, "dispatch_shell")
    ):
        return "pump"
    return "background"


@contextlib.asynccontextmanager
async def comms_reach_the_cell(shell: Any) -> AsyncIterator[None]:
    """While the body runs (the cell's own awaited work), comm messages reach it on ipykernel 6.x."""
    if kernel_mode(shell) != "pump":
        yield
        return
    stopping = asyncio.Event()
    pump = asyncio.get_running_loop().create_task(_pump(shell.kernel, stopping))
    try:
        yield
    finally:
        stopping.set()
        # Awaited, never cancelled: a message taken from the queue and cancelled halfway would be lost, and
        # a dispatch still running after the cell would put this cell's parent back under the next one.
        await pump


async def _pump(kernel: Any, stopping: asyncio.Event) -> None:
    while not stopping.is_set():
        await dispatch_waiting_comms(kernel)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(PUMP_INTERVAL_SECONDS):
                await stopping.wait()


async def dispatch_waiting_comms(kernel: Any) -> int:
    """Dispatch the comm messages waiting in ``kernel``'s shell queue; the rest stay queued in order.
    Returns how many were dispatched."""
    global _dispatching
    if _dispatching is None:
        _dispatching = asyncio.Lock()
    async with _dispatching:
        queue = kernel.msg_queue
        waiting: list[Any] = []
        while not queue.empty():
            waiting.append(queue.get_nowait())
        comms = [_is_comm(kernel, item) for item in waiting]
        # Put back before any await: nothing can arrive in between, so the queue's order is unchanged.
        for item, comm in zip(waiting, comms, strict=True):
            if not comm:
                queue.put_nowait(item)
        for item, comm in zip(waiting, comms, strict=True):
            if comm:
                await _dispatch_for_the_cell(kernel, item)
        return sum(comms)


def _is_comm(kernel: Any, item: Any) -> bool:
    """Whether a queue entry ``(index, dispatch, args)`` is a shell message of a comm type. Anything
    else (another shape, a message that does not parse) stays in the queue for the kernel to handle."""
    try:
        _, dispatch, args = item
        if dispatch != kernel.dispatch_shell or len(args) != 1:
            return False
        _, frames = kernel.session.feed_identities(list(args[0]), copy=False)
        header = kernel.session.unpack(frames[1].bytes)
    except Exception:
        return False
    return isinstance(header, dict) and header.get("msg_type") in COMM_MESSAGES


async def _dispatch_for_the_cell(kernel: Any, item: Any) -> None:
    _, dispatch, args = item
    parent = kernel.get_parent("shell")
    ident = kernel._parent_ident.get("shell", b"")  # where the cell's stdin requests go
    sigint = getattr(kernel, "saved_sigint_handler", None)
    try:
        await dispatch(*args)
    finally:
        if sigint is not None:
            kernel.saved_sigint_handler = sigint
        kernel.set_parent(ident, parent, channel="shell")
