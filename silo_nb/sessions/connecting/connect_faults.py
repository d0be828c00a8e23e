"""What a ``connect`` (or an in-place resume) does when it fails half-way, so that nothing is left behind.

- ``request_or_undo``: ``session/resume`` / ``session/load`` whose failure of any kind (an error answer,
  the agent dying, the connect timing out) puts the journal back exactly as it was before the call: the
  updates the agent replayed before failing are not the transcript (the prior lines are). A closed
  connection becomes Silo's ``AgentSessionError``, not a raw wire exception.
- ``abandon``: every failed handshake hands the journal writer back (flushed; its write lock released,
  so another kernel may take the session) before the agent is shut down (in the background) — on a
  timeout too.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from silo_nb.acp import AcpConnectionClosed, AgentConnection
from silo_nb.model import (
    AgentSessionError,
)

if TYPE_CHECKING:
    from silo_nb.sessions.session.core import SessionCore

__all__ = ["abandon", "request_or_undo"]

log = logging.getLogger("silo_nb.sessions")


async def request_or_undo(
    core: SessionCore, connection: AgentConnection, method: str, params: dict[str, Any]
) -> Any:
    """``method``'s result; on any failure the journal is left as it was before the call."""
    writer = core.journal.writer
    mark = writer.mark() if writer is not None else None  # nothing read: a failure undoes only the replay
    try:
        return await connection.rpc.request(method, params)
    except BaseException as exc:
        if writer is not None and mark is not None and (dropped := writer.undo_to(mark)):
            log.info(
                "%s: %s failed after the agent replayed %d updates; the journal is left as it was",
                core.label,
                method,
                dropped,
            )
        if isinstance(exc, AcpConnectionClosed):
            raise AgentSessionError(
                f"{core.label} could not {method.rsplit('/', maxsplit=1)[-1]} the session: {exc}"
            ) from exc
        raise


def abandon(core: SessionCore, connection: AgentConnection, reason: str) -> None:
    """A handshake failed: hand the journal writer back, then shut the agent down in the background
    (the caller reports the failure at once; ``AgentConnection.close_in_background``)."""
    core.journal.hand_back()
    connection.close_in_background(reason)
