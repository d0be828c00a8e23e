"""A request we sent and have not had answered yet (the JSON-RPC connection keeps them by id).

- ``wait`` gives the result or raises the error; a waiter cancelled first abandons the request (the
  connection tells the agent with ``$/cancel_request``) unless asked not to.
- It knows its connection only through two callables, so this module imports nothing of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

__all__ = ["PendingRequest"]


class PendingRequest:
    """A request in flight. ``wait`` gives its result; cancelling the waiter sends ``$/cancel_request``."""

    __slots__ = ("_abandon", "_forget", "done", "error", "request_id", "result")

    def __init__(
        self, request_id: int, *, abandon: Callable[[int], None], forget: Callable[[int], None]
    ) -> None:
        self._abandon = abandon
        self._forget = forget
        self.request_id = request_id
        self.done = anyio.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    async def wait(self, *, abandon_on_cancel: bool = True) -> Any:
        """The result. If the waiter is cancelled first, the request is abandoned (and the agent told)
        unless ``abandon_on_cancel`` is false, in which case :meth:`wait_quietly` can still collect it."""
        try:
            await self.done.wait()
        except BaseException:
            if not self.done.is_set() and abandon_on_cancel:
                self._abandon(self.request_id)
            raise
        self._forget(self.request_id)
        if self.error is not None:
            raise self.error
        return self.result

    async def wait_quietly(self) -> None:
        """Wait for the answer without raising (used after a cancel, to let the turn end cleanly)."""
        try:
            await self.done.wait()
        finally:
            self._forget(self.request_id)
