"""Tasks that run in the background of their owner: referenced (asyncio keeps only weak references to
tasks, so an unreferenced one can be collected mid-way), awaitable together, and countable."""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["TaskSet"]


class TaskSet:
    """A set of running tasks; a task leaves it when it ends."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def add(self, task: asyncio.Task[Any]) -> asyncio.Task[Any]:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def wait(self) -> None:
        """Until every task (those added meanwhile too) has ended; their errors are theirs to report."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def cancel(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def __len__(self) -> int:
        return len(self._tasks)

    def __bool__(self) -> bool:
        return bool(self._tasks)
