"""Input to a running turn (``handle.steer``): the ``_session/steering`` extension request that Claude's
adapter advertises in ``initialize`` (``_meta.steering.supported``).

- The text is journaled as a ``steer`` line when sent (the transcript shows it where it came in the
  turn), then again with the agent's answer — ``injected`` (taken into the running turn),
  ``startedNewTurn``, or ``refused`` with why — so a restored cell shows what the live one did.
- Asked with ``idleBehavior: promptRequired``: a turn that ended meanwhile is not restarted behind the
  user's back; the answer ``promptRequired`` is an error that says to prompt instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from silo_nb.acp import AcpRpcError
from silo_nb.model import AgentSessionError, AgentSessionUpdate, SteerLine
from silo_nb.sessions.status import now_iso

__all__ = ["STEER_METHOD", "send_steer"]

STEER_METHOD = "_session/steering"
_OUTCOME_CHARS = 80


async def send_steer(
    text: str,
    *,
    session_id: str,
    label: str,
    record: Callable[[AgentSessionUpdate], None],
    request: Callable[[str, dict[str, Any]], Awaitable[Any]],
) -> str:
    """Send ``text`` into the running turn; the agent's outcome (``injected``…), or AgentSessionError."""
    steer_id = f"steer-{uuid.uuid4().hex[:12]}"

    def journal(outcome: str | None, note: str | None = None) -> None:
        fields = {"steerId": steer_id, "text": text, "outcome": outcome, "note": note}
        record(SteerLine.written({k: v for k, v in fields.items() if v is not None}, timestamp=now_iso()))

    journal(None)
    params = {
        "sessionId": session_id,
        "prompt": [{"type": "text", "text": text}],
        "_meta": {"steering": {"idleBehavior": "promptRequired"}},
    }
    try:
        result = await request(STEER_METHOD, params)
    except AcpRpcError as exc:
        journal("refused", exc.agent_message())
        raise AgentSessionError(f"{label} did not take the input: {exc.agent_message()}") from exc
    except AgentSessionError as exc:  # no answer in time, or the connection closed
        journal("refused", str(exc).splitlines()[0])
        raise
    outcome = result.get("outcome") if isinstance(result, Mapping) else None
    if outcome == "promptRequired":
        note = "the turn had ended — send it as a prompt"
        journal("refused", note)
        raise AgentSessionError(f"{label}: {note} (handle.prompt or %%prompt).")
    outcome = outcome[:_OUTCOME_CHARS] if isinstance(outcome, str) and outcome else "injected"
    journal(outcome)
    return outcome
