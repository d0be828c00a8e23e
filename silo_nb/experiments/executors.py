"""Where cells run: on this event loop, as Dask tasks on a ``dask.distributed`` cluster, or your own way.

- :class:`CellExecutor` is the protocol ``run_grid(executor=)`` accepts: a ``label`` and an
  ``async def run(spec) -> CellResult``. The two below implement it; so can a user's own class.
- :class:`LocalExecutor` awaits :func:`cells.run_cell` on the caller's loop (the kernel's in a notebook).
- :class:`DaskExecutor` submits :func:`run_cell_counted` per cell; the agent is spawned on the worker,
  and the cell's journal lines, diff, scores and record come back in the task's result, so the notebook
  writes them under the run's folder exactly as for a local cell. The kernel's loop is never blocked:
  with a synchronous ``Client`` the future's done-callback (a Dask thread) fetches the result and hands it
  to the loop with ``call_soon_threadsafe``; an ``asynchronous=True`` client's futures are simply awaited.
- A worker that dies mid-cell: the scheduler gives the task to another worker (Dask's own rule), and
  the task counts its attempts on the scheduler (``distributed.Event`` s named for the cell). The second
  attempt runs; a third one does not run the cell again but reports it failed ("its worker died twice"). When
  the scheduler gives up first (``KilledWorker``: its ``allowed-failures`` is below 2), the cell is
  submitted once more by hand under the same count. Only a finished task's result is written, so a
  cell is never lost nor counted twice: one record, one row, its ``attempts`` column says how many.
- :func:`executor_for` turns what ``executor=`` was given into one of these (see its docstring).
- dask is an optional extra and is imported by the caller's own ``Client`` only; nothing here imports it.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from typing import Any, Protocol, runtime_checkable

from silo_nb.experiments.grid_cell import CellResult, CellSpec, run_cell, run_cell_blocking

__all__ = ["CellExecutor", "DaskExecutor", "LocalExecutor", "executor_for", "run_cell_counted"]

# How long past the cell's own timeout the notebook waits for a Dask task (queueing, a slow worker).
DASK_GRACE_SECONDS = 120.0
MAX_ATTEMPTS = 2  # a cell whose worker died is run once more, on another worker
WORKER_DIED_TWICE = "the Dask worker running this cell died twice; it is not run a third time"


@runtime_checkable
class CellExecutor(Protocol):
    """Runs one grid cell somewhere and gives back what happened: what ``run_grid(executor=)`` accepts.

    ``label`` (a short string, e.g. ``"local"``, ``"dask tcp://10.0.0.5:8786"``) names the executor in
    the progress line and in the DataFrame's ``executor`` column (and in each cell's done record).

    ``async def run(spec: CellSpec) -> CellResult`` runs the cell ``spec`` describes: it calls
    :func:`silo_nb.experiments.run_cell` (a coroutine, on a running loop) or
    :func:`silo_nb.experiments.run_cell_blocking` (a plain function that makes its own loop: for a thread,
    a process or a remote machine; a ``CellSpec`` pickles), or does the equivalent, wherever it likes,
    and returns that ``CellResult``. ``run_grid`` calls it from its own loop (the kernel's in a notebook),
    at most ``concurrency`` cells at a time, so it must not block: hand blocking work to a thread or a
    pool (``await asyncio.to_thread(run_cell_blocking, spec)``). The result's journal lines and record
    are written under the run's folder by ``run_grid``, wherever the cell ran.

    Failure: ``run_cell`` never raises for the agent's own failures (a failed connect or turn, the
    timeout); they come back as ``status="failed"`` with a one-line ``error``. If ``run`` itself raises
    an ``Exception`` (a lost worker), or returns something other than a ``CellResult``, that cell is
    recorded as failed with that one line and the other cells go on; ``retry_failed=True`` redoes it.

    Cancellation: when ``run_grid`` is cancelled (the stop button) every running ``run`` is cancelled.
    It should stop its cell (cancel its task; ``run_cell`` closes the session and kills the agent's
    process group when cancelled) and let the cancellation propagate; no record is written, so the next
    call redoes that cell. A cell in a thread cannot be interrupted (``asyncio.to_thread``, a Dask task
    already running): it goes on until it ends or reaches ``spec.timeout``, then closes its session.
    ``spec.timeout`` bounds the cell itself; an executor that queues cells may wait a little longer
    before it gives up on one.
    """

    label: str

    async def run(self, spec: CellSpec) -> CellResult: ...


class LocalExecutor:
    """Runs each cell on this event loop (the default: ``executor=None``)."""

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
        counter = f"silo-grid-attempts-{spec.cell}-{uuid.uuid4().hex}"
        try:
            return await self._submit(spec, counter)
        except Exception as exc:
            if type(exc).__name__ != "KilledWorker":
                raise
        try:  # the scheduler gave up on the task: once more, by hand, under the same count
            return await self._submit(spec, counter)
        except Exception as exc:
            if type(exc).__name__ != "KilledWorker":
                raise
            return CellResult(spec.cell, error=f"{WORKER_DIED_TWICE} ({type(exc).__name__})", attempts=2)

    async def _submit(self, spec: CellSpec, counter: str) -> CellResult:
        future = self.client.submit(
            run_cell_counted,
            spec,
            counter,
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


def run_cell_counted(spec: CellSpec, counter: str) -> CellResult:
    """The Dask task: :func:`run_cell_blocking`, counting its attempts on the scheduler under ``counter``.

    The first two attempts run the cell (the second after the first one's worker died); a third reports
    the cell failed without running it. The count is two ``distributed.Event`` s, one set per attempt
    (asking one never fails on the scheduler's side); both are cleared, and so gone, when the cell ends.
    """
    import distributed  # on a Dask worker, where distributed is installed

    make: Any = distributed.Event  # distributed is not fully typed
    marks = [make(f"{counter}-{number}") for number in range(1, MAX_ATTEMPTS + 1)]
    attempt = next((number for number, mark in enumerate(marks, 1) if not mark.is_set()), MAX_ATTEMPTS + 1)
    try:
        if attempt > MAX_ATTEMPTS:
            return CellResult(spec.cell, error=WORKER_DIED_TWICE, attempts=attempt)
        marks[attempt - 1].set()
        result = run_cell_blocking(spec)
        result.attempts = attempt
        return result
    finally:  # a worker killed mid-cell runs no finally: its mark stays, for the next attempt to see
        for mark in marks:
            mark.clear()


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
    """What ``run_grid(executor=)`` was given, as a :class:`CellExecutor`.

    ``None`` → :class:`LocalExecutor`; an object with a string ``label`` and an ``async def run`` (the
    protocol: a user's own executor, or one of the two here) → as it is; an object with a callable
    ``submit`` (a ``dask.distributed.Client``) → :class:`DaskExecutor`; anything else → ``TypeError``.
    """
    if executor is None:
        return LocalExecutor()
    # The protocol comes first: an executor of one's own that also has a ``submit`` is used as written.
    # ``isinstance`` against the protocol only checks that the names exist, so async-ness is checked too.
    if (
        not isinstance(executor, type)
        and isinstance(executor, CellExecutor)
        and isinstance(executor.label, str)
        and inspect.iscoroutinefunction(executor.run)
    ):
        return executor
    if not isinstance(executor, type) and callable(getattr(executor, "submit", None)):
        return DaskExecutor(executor)
    raise TypeError(_not_an_executor(executor))


def _not_an_executor(executor: Any) -> str:
    accepts = (
        "executor= takes None (this loop), a dask.distributed.Client, or a CellExecutor "
        "(a str `label` and an `async def run(spec) -> CellResult`)"
    )
    if isinstance(executor, type):
        return f"{accepts} — not the class {executor.__name__}; pass an instance, e.g. {executor.__name__}()."
    name = type(executor).__name__
    if hasattr(executor, "run") and hasattr(executor, "label"):
        problem = (
            "its `label` is not a str" if not isinstance(executor.label, str) else "its `run` is not async"
        )
        return f"{accepts} — {name} has both, but {problem}."
    return f"{accepts} — not {name}."
