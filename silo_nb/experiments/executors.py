"""Where cells run: on this event loop, or as Dask tasks on a ``dask.distributed`` cluster.

- :class:`LocalExecutor` awaits :func:`cells.run_cell` on the caller's loop (the kernel's in a notebook).
- :class:`DaskExecutor` submits :func:`cells.run_cell_blocking` per cell; the agent is spawned on the
  worker, and the cell's journal lines and record come back in the task's result, so the notebook writes
  them under the run's folder exactly as for a local cell. The kernel's loop is never blocked: with a
  synchronous ``Client`` the future's done-callback (a Dask thread) fetches the result and hands it to the
  loop with ``call_soon_threadsafe``; an ``asynchronous=True`` client's futures are simply awaited.
- dask is an optional extra and is imported by the caller's own ``Client`` only; nothing here imports it.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Protocol

from silo_nb.experiments.grid_cell import CellResult, CellSpec, run_cell, run_cell_blocking

__all__ = ["CellExecutor", "DaskExecutor", "LocalExecutor", "executor_for"]

# How long past the cell's own timeout the notebook waits for a Dask task (queueing, a slow worker).
DASK_GRACE_SECONDS = 120.0


class CellExecutor(Protocol):
    label: str

    async def run(self, spec: CellSpec) -> CellResult: ...


class LocalExecutor:
    label = "local"

    async def run(self, spec: CellSpec) -> CellResult:
        return await run_cell(spec)


class DaskExecutor:
    """Runs each cell as a task of a ``dask.distributed.Client``."""

    def __init__(self, client: Any) -> None:
        if not callable(getattr(client, "submit", None)):
            raise TypeError(f"executor= takes a dask.distributed.Client — not {type(client).__name__}.")
        self.client = client
        info: Any = getattr(client, "scheduler_info", dict)()
        self.label = f"dask {info.get('address', '') if isinstance(info, dict) else ''}".strip()

    async def run(self, spec: CellSpec) -> CellResult:
        future = self.client.submit(
            run_cell_blocking,
            spec,
            key=f"silo-grid-{spec.cell}-{uuid.uuid4().hex[:8]}",
            pure=False,
            retries=0,
        )
        try:
            async with asyncio.timeout(spec.timeout + DASK_GRACE_SECONDS):
                if getattr(self.client, "asynchronous", False):
                    result: CellResult = await future
                    return result
                return await _awaitable(future)
        except BaseException:
            future.cancel()
            raise


def _awaitable(future: Any) -> asyncio.Future[CellResult]:
    """A loop future resolved from a synchronous Dask future's done-callback (run in a Dask thread)."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[CellResult] = loop.create_future()

    def settle(outcome: Any, failed: bool) -> None:
        if waiter.done():
            return
        if failed:
            waiter.set_exception(outcome)
        else:
            waiter.set_result(outcome)

    def done(finished: Any) -> None:
        try:
            value = finished.result()  # in Dask's callback thread: fetching may block, the loop does not
        except BaseException as exc:
            loop.call_soon_threadsafe(settle, exc, True)
        else:
            loop.call_soon_threadsafe(settle, value, False)

    future.add_done_callback(done)
    return waiter


def executor_for(executor: Any) -> CellExecutor:
    """``None`` → local; a Dask ``Client`` → :class:`DaskExecutor`; an executor object as is."""
    if executor is None:
        return LocalExecutor()
    if isinstance(executor, LocalExecutor | DaskExecutor):
        return executor
    return DaskExecutor(executor)
