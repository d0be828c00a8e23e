"""The ``session/prompt`` call and how a turn ended: the answer, a Stop and its bound, a sign-in error.

Also ``session/list`` (the sessions the agent keeps), which is asked on the same live connection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from silo_nb.acp import AcpConnectionClosed, AcpRpcError, AgentConnection
from silo_nb.model import (
    AgentPromptBlock,
    AgentPromptResult,
    AgentSessionError,
    AgentSessionSummary,
    AgentSignInError,
    AuthMethod,
    no_answer,
)
from silo_nb.sessions.connecting.auth_methods import is_auth_error
from silo_nb.sessions.connecting.handshake import sign_in_error
from silo_nb.sessions.session.prompt_blocks import wire_block
from silo_nb.sessions.session.stop_control import NOT_STOPPED, StopControl
from silo_nb.sessions.status import TurnOutcome
from silo_nb.updates import (
    parse_session_summary,
)

__all__ = ["TurnEnd", "list_sessions", "send_prompt"]


async def send_prompt(
    connection: AgentConnection,
    session_id: str,
    blocks: Sequence[AgentPromptBlock],
    *,
    on_cancelled: Callable[[], None],
    stop: StopControl,
    sign_in: tuple[tuple[AuthMethod, ...], str],
) -> AgentPromptResult:
    """``session/prompt`` and its answer; agent errors become ``AgentSessionError`` (a sign-in one an
    ``AgentSignInError`` that says how, from ``sign_in``: the agent's methods and the profile id).

    A Stop (``stop.requested``) bounds the wait to ``stop.timeout``; with no answer by then the turn
    ends "cancelled" and the request is left overdue (``stop_control.py``). If the caller is cancelled (the
    notebook's stop button, a timeout), ``on_cancelled`` cancels the turn on the agent's side too, and
    the agent gets the same bound to answer so the transcript ends cleanly.
    """
    call = connection.rpc.start_request(
        "session/prompt", {"sessionId": session_id, "prompt": [wire_block(b) for b in blocks]}
    )
    try:
        with anyio.CancelScope() as scope:
            stop.scope, stop.asked = scope, False
            result = await call.wait(abandon_on_cancel=False)
    except AcpRpcError as exc:
        if is_auth_error(exc):
            raise sign_in_error("The prompt turn failed", exc, *sign_in) from exc
        raise AgentSessionError(f"The prompt turn failed: {exc.agent_message()}") from exc
    except AcpConnectionClosed as exc:
        raise AgentSessionError(f"The prompt turn failed: {exc}") from exc
    except BaseException:
        on_cancelled()
        with anyio.CancelScope(shield=True), anyio.move_on_after(stop.timeout) as waited:
            await call.wait_quietly()
        if waited.cancelled_caught:
            stop.went_unanswered(call)
        raise
    finally:
        stop.scope = None
    if scope.cancelled_caught:  # a Stop's bound passed and the agent has not answered
        stop.went_unanswered(call)
        return AgentPromptResult(stop_reason="cancelled")
    raw = dict(result) if isinstance(result, Mapping) else {}
    stop_reason = raw.get("stopReason")
    if not isinstance(stop_reason, str) or not stop_reason:
        stop_reason = "end_turn"
    if stop.asked:  # answered after a Stop: stopped, whatever the agent calls it (it is kept in raw)
        stop_reason = "cancelled"
    usage = raw.get("usage")
    return AgentPromptResult(
        stop_reason=stop_reason, raw=raw, usage=dict(usage) if isinstance(usage, Mapping) else None
    )


class TurnEnd:
    """How a prompt turn ended, for its journaled ``turn_end`` line (``turn_tracker.turn_end_line``): what the
    user saw — the stop reason, or the error as raised — the agent's own stop reason when it differs (a
    Stop answered ``end_turn``), and the sign-in methods an auth error named."""

    def __init__(self, stop: StopControl) -> None:
        self._stop = stop
        self.outcome: TurnOutcome = "failed"
        self.details: dict[str, Any] = {}

    def _note(self) -> str | None:
        return NOT_STOPPED if self._stop.overdue else None

    def answered(self, result: AgentPromptResult) -> AgentPromptResult:
        self.outcome = "cancelled" if result.stop_reason == "cancelled" else "finished"
        self.details = {"stop_reason": result.stop_reason, "error": self._note(), "usage": result.usage}
        agent_said = result.raw.get("stopReason")
        if isinstance(agent_said, str) and agent_said != result.stop_reason:
            self.details["agent_stop_reason"] = agent_said
        return result

    def raised(self, exc: BaseException) -> None:
        if isinstance(exc, AgentSessionError):
            sign_in = tuple(m.id for m in exc.methods) if isinstance(exc, AgentSignInError) else ()
            self.outcome, self.details = "failed", {"error": str(exc), "sign_in": sign_in}
        else:  # the caller was cancelled (the notebook's stop button)
            self.outcome, self.details = "cancelled", {"stop_reason": "cancelled", "error": self._note()}


async def list_sessions(connection: AgentConnection, label: str, seconds: float) -> list[AgentSessionSummary]:
    """``session/list`` (no caching, no pagination), within ``seconds`` (the profile's request_timeout)."""
    try:
        with anyio.fail_after(seconds):
            result = await connection.rpc.request("session/list", {})
    except TimeoutError:
        raise no_answer(label, "session/list", seconds) from None
    except (AcpRpcError, AcpConnectionClosed) as exc:
        message = exc.agent_message() if isinstance(exc, AcpRpcError) else str(exc)
        raise AgentSessionError(f"{label} could not list its sessions: {message}") from exc
    sessions = result.get("sessions") if isinstance(result, Mapping) else None
    return [s for s in map(parse_session_summary, sessions or []) if s is not None]
