"""Stop (cancel) of a turn that ends it: ``session/cancel``, a bound, then a kill on a second Stop.

- First Stop (``handle.cancel()``: the turn view's button, ``%silo cancel``; or the cell's task being
  cancelled — the kernel's stop button): ``session/cancel``, then the turn waits up to the profile's
  ``cancel_timeout`` (default 3 s) for the agent's answer to ``session/prompt``.
- No answer in time (gemini-cli 0.61 ignores ``session/cancel`` while it retries a model call): the turn
  ends "cancelled" with :data:`NOT_STOPPED` in its journal line and view, and the request stays pending
  ("overdue"); if the agent answers later, the overdue mark goes away.
- A Stop while a cancel is overdue kills the agent's process group and closes the connection with
  :data:`KILLED`: the session is no longer live (``is_live`` False; a prompt says to reconnect).
- An answer after a Stop is the turn's end, whatever its ``stopReason``: the user asked to stop, so the
  turn is "cancelled" (opencode answers ``end_turn``; the agent's own reason stays in the result's
  ``raw`` and the journal's ``agentStopReason``).
- Improvement over Silo, whose cancel is fire-and-forget: the turn ended while the agent kept working.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from silo_nb.acp import AgentConnection, PendingRequest

__all__ = ["KILLED", "NOT_STOPPED", "StopControl"]

log = logging.getLogger("silo_nb.sessions")

NOT_STOPPED = "the agent did not stop; Stop again to end it"
KILLED = "the agent did not stop, so it was ended (Stop twice)"


class StopControl:
    """The Stop state of one session: the running prompt's wait, and a cancel that went unanswered."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.scope: anyio.CancelScope | None = None  # the running prompt's wait for its answer
        self.asked = False  # a Stop came while the running prompt waited (its answer means "stopped")
        self._overdue: PendingRequest | None = None
        self._watch: asyncio.Task[None] | None = None

    @property
    def overdue(self) -> bool:
        """A cancelled turn's prompt is still unanswered (the agent may still be working on it)."""
        return self._overdue is not None

    def requested(self) -> None:
        """A Stop sent ``session/cancel``: the running prompt's wait now ends after ``timeout``."""
        scope = self.scope
        if scope is None:
            return
        self.asked = True
        if math.isinf(scope.deadline):
            scope.deadline = anyio.current_time() + self.timeout

    def went_unanswered(self, call: PendingRequest) -> None:
        """The bound passed with no answer: remember the request until the agent answers it."""
        self._overdue = call
        self._watch = asyncio.get_running_loop().create_task(self._clear_when_answered(call))

    async def _clear_when_answered(self, call: PendingRequest) -> None:
        await call.wait_quietly()
        if self._overdue is call:
            self._overdue = None

    def kill(self, connection: AgentConnection) -> None:
        """The second Stop: end the agent's whole process group; the connection closes with KILLED."""
        self._overdue = None
        log.warning("the agent did not answer session/cancel; ending its process group")
        connection.transport.kill_now()
        connection.rpc.close(KILLED)  # pending requests fail; on_closed marks the session closed
