"""The conversation's checkpoint by fork (issue 32): with the profile's ``checkpoint_conversation = "fork"``,
before each turn the session is forked (``session/fork`` on the same connection, where the agent offers it),
so that an undo can point at the conversation as it was before the turn.

- The fork's id is journaled on the turn's ``turn_end`` line (``checkpointFork``): an undo reads it there,
  after a restart too. The fork itself lives on the agent's side (an agent that keeps its sessions resumes it
  in a new process: ``connect(resume={"session_id": id})``).
- The fork is quiet: whatever the agent sends for it on this connection (its commands, say) is dropped, not
  shown as an unannounced subagent.
- A fork that fails (refused, no answer in the request timeout) is a log line: the turn goes on, and its
  undo says the agent still remembers it. It costs the agent's fork per turn, which is why it is asked for,
  not the default (``"rewind"``: the ``_session/rewind`` extension where offered, nothing before a turn).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from silo_nb.acp import AcpRpcError
from silo_nb.model import AgentSessionError

__all__ = ["ConversationForks"]

log = logging.getLogger("silo_nb.sessions")

MAX_QUIET = 1_000  # fork ids whose traffic is dropped (the oldest forgotten past this)


class ConversationForks:
    """The forks taken before this session's turns (see the module docstring)."""

    def __init__(self) -> None:
        self._quiet: dict[str, None] = {}
        self._pending: str | None = None

    def is_quiet(self, session_id: str) -> bool:
        """Whether ``session_id`` is one of the forks taken here (its traffic is not this session's)."""
        return session_id in self._quiet

    async def before_turn(
        self, request: Callable[[str, dict[str, Any]], Awaitable[Any]], session_id: str, cwd: str
    ) -> None:
        """Fork the session as it is now; the fork's id goes on the turn's ``turn_end`` (:meth:`take`)."""
        self._pending = None
        try:
            answer = await request("session/fork", {"sessionId": session_id, "cwd": cwd, "mcpServers": []})
        except (AcpRpcError, AgentSessionError) as exc:
            log.warning("the conversation's checkpoint (session/fork) failed: %s", str(exc).splitlines()[0])
            return
        fork_id = answer.get("sessionId") if isinstance(answer, Mapping) else None
        if not isinstance(fork_id, str) or not fork_id:
            log.warning("the conversation's checkpoint: session/fork answered without a session id")
            return
        self._quiet[fork_id] = None
        while len(self._quiet) > MAX_QUIET:
            del self._quiet[next(iter(self._quiet))]
        self._pending = fork_id

    def take(self) -> str | None:
        """The fork taken before the turn that is ending (once)."""
        pending, self._pending = self._pending, None
        return pending
