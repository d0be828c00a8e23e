"""The ``turn_end`` journal line: how each prompt turn ended, so a journal alone describes its turns.

- Improvement over Silo (whose journal keeps no stop reason, no timing and no settings): after every
  ``prompt()`` a synthesized ``turn_end`` line is recorded (journal and ``on_transcript``, like the
  permission lines): ``stopReason`` (``None`` when the turn failed), ``error`` (the one-line reason of a
  failed or interrupted turn), ``startedAt``/``endedAt`` (ISO), ``durationMs``, and the session's
  ``profile``, ``agent`` and ``config`` (each config option's current value) at the turn's end.
- ``silo_nb.frame`` reads it; a journal without it (Silo's own, or older ones) still yields rows, with
  those columns empty. Transcripts do not show it (``parse.METADATA_KINDS``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import Any, Protocol

from silo_nb.sessions.errors import AgentSessionError
from silo_nb.sessions.models import AgentPromptResult, AgentSessionConfigOption, AgentSessionUpdate
from silo_nb.sessions.status import now_iso

__all__ = ["TURN_END_KIND", "recorded_turn"]

TURN_END_KIND = "turn_end"


class _Session(Protocol):
    @property
    def profile_id(self) -> str: ...
    @property
    def agent_name(self) -> str: ...
    @property
    def config_options(self) -> tuple[AgentSessionConfigOption, ...]: ...
    def _record(self, update: AgentSessionUpdate) -> None: ...


async def recorded_turn(session: _Session, call: Awaitable[AgentPromptResult]) -> AgentPromptResult:
    """Await one ``session/prompt`` call and record its ``turn_end`` line, however it ends."""
    started_at, start = now_iso(), time.monotonic()
    stop_reason: str | None = None
    error: str | None = None
    try:
        result = await call
        stop_reason = result.stop_reason
        return result
    except AgentSessionError as exc:
        error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise
    except BaseException as exc:  # the caller was cancelled (stop button, timeout): the turn was cancelled
        stop_reason = "cancelled"
        error = f"interrupted by the caller ({type(exc).__name__})"
        raise
    finally:
        raw: dict[str, Any] = {
            "synthesized": True,
            "stopReason": stop_reason,
            "error": error,
            "startedAt": started_at,
            "endedAt": now_iso(),
            "durationMs": round((time.monotonic() - start) * 1000, 1),
            "profile": session.profile_id,
            "agent": session.agent_name,
            "config": {option.id: option.current_value for option in session.config_options},
        }
        session._record(AgentSessionUpdate(kind=TURN_END_KIND, raw=raw))
