"""The reader's yield to the event loop between slices of a flood (``jsonrpc._reader``)."""

from __future__ import annotations

import asyncio

import anyio.lowlevel

__all__ = ["YIELD_MORE_TURNS", "give_way"]

YIELD_MORE_TURNS = 16  # more turns while other callbacks are queued


async def give_way() -> None:
    """A turn of the event loop, and more while other callbacks are queued (up to
    ``YIELD_MORE_TURNS``): a cell's request travels through several callbacks (the socket, the kernel's
    dispatch, the cell, its reply), each needing a turn of its own; one turn per slice of reading made a
    ``1+1`` wait a dozen slices. With nothing else queued this costs one turn, as before."""
    await anyio.lowlevel.checkpoint()
    try:
        ready = asyncio.get_running_loop()._ready  # type: ignore[attr-defined]
    except (RuntimeError, AttributeError):  # not asyncio's loop (trio): one turn
        return
    for _ in range(YIELD_MORE_TURNS):
        if not ready:
            return
        await anyio.lowlevel.checkpoint()
