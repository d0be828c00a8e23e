"""Prompt blocks: strict validation of what the user passes, their wire shape, the journal's synthesized
user prompt (Silo §3.4: ACP never echoes the prompt back), and the ``session/prompt`` call itself."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import anyio
from pydantic import ConfigDict, TypeAdapter

from silo_nb.acp import AcpConnectionClosed, AcpRpcError, AgentConnection
from silo_nb.sessions._auth import AuthMethod, is_auth_error
from silo_nb.sessions._handshake import sign_in_error
from silo_nb.sessions._stop import NOT_STOPPED, StopControl
from silo_nb.sessions.errors import AgentSessionError, AgentSessionInputError, AgentSignInError
from silo_nb.sessions.models import (
    AgentContentBlock,
    AgentPromptBlock,
    AgentPromptResult,
    AgentSessionSummary,
    AgentSessionUpdate,
    ResourceBlock,
    ResourceLinkBlock,
    TextBlock,
)
from silo_nb.sessions.parse import parse_session_summary
from silo_nb.sessions.prompt_attachments import describe_attachments
from silo_nb.sessions.status import TurnOutcome, now_iso

__all__ = ["TurnEnd", "list_sessions", "prompt_line", "send_prompt", "validate_prompt_blocks", "wire_block"]

# Built on first use, not at import (a schema build, and pydantic's plugin scan, cost 15-20 ms).
_PROMPT_BLOCKS: TypeAdapter[list[AgentPromptBlock]] = TypeAdapter(
    list[AgentPromptBlock], config=ConfigDict(defer_build=True)
)


def validate_prompt_blocks(
    blocks: Iterable[AgentPromptBlock | Mapping[str, Any]],
    *,
    embedded_context: bool = True,
    label: str = "The agent",
) -> list[AgentPromptBlock]:
    """Blocks or plain dicts → validated blocks (``mimeType`` accepted too). Raises ``ValueError``, also
    for a ``resource`` block to an agent without ``embedded_context``."""
    if isinstance(blocks, (str, bytes, Mapping)):
        raise AgentSessionInputError(
            'prompt() takes a list of blocks, e.g. [{"type": "text", "text": "hello"}] — not a single value.'
        )
    items = [
        b.model_dump(by_alias=False) if isinstance(b, (TextBlock, ResourceLinkBlock, ResourceBlock)) else b
        for b in blocks
    ]
    if not items:
        raise AgentSessionInputError(
            'prompt() needs at least one block, e.g. [{"type": "text", "text": "hi"}].'
        )
    parsed = _PROMPT_BLOCKS.validate_python(items)
    if not embedded_context and any(isinstance(b, ResourceBlock) for b in parsed):
        raise AgentSessionInputError(
            f"{label} does not accept embedded context (resource blocks) — "
            "send a resource_link block with the file's URI instead."
        )
    return parsed


def wire_block(block: AgentPromptBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ResourceLinkBlock):
        wire: dict[str, Any] = {"type": "resource_link", "uri": block.uri}
        if block.name is not None:
            wire["name"] = block.name
        return wire
    resource: dict[str, Any] = {"uri": block.uri, "text": block.text}
    if block.mime_type is not None:
        resource["mimeType"] = block.mime_type
    return {"type": "resource", "resource": resource}


def prompt_line(blocks: Sequence[AgentPromptBlock], n: int, cell_id: str | None) -> AgentSessionUpdate | None:
    """The synthesized ``user_message_chunk`` for the ``n``-th prompt; None for a prompt with neither text
    nor attachments. Attachments are described in ``raw.attachments`` (name, type, size; never their
    content: see ``prompt_attachments``)."""
    attachments = describe_attachments(blocks)
    if not attachments and not any(isinstance(b, TextBlock) for b in blocks):
        return None
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    raw: dict[str, Any] = {"synthesized": True}
    if cell_id:
        raw["cellId"] = cell_id
    if attachments:
        raw["attachments"] = attachments
    return AgentSessionUpdate(
        kind="user_message_chunk",
        text=text,
        content=AgentContentBlock(type="text", text=text),
        message_id=f"silo-journal-user-{n}",
        timestamp=now_iso(),
        raw=raw,
    )


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
    ends "cancelled" and the request is left overdue (``_stop.py``). If the caller is cancelled (the
    notebook's stop button, a timeout), ``on_cancelled`` cancels the turn on the agent's side too, and
    the agent gets the same bound to answer so the transcript ends cleanly.
    """
    call = connection.rpc.start_request(
        "session/prompt", {"sessionId": session_id, "prompt": [wire_block(b) for b in blocks]}
    )
    try:
        with anyio.CancelScope() as scope:
            stop.scope = scope
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
    stop_reason = result.get("stopReason") if isinstance(result, Mapping) else None
    if not isinstance(stop_reason, str) or not stop_reason:
        stop_reason = "end_turn"
    return AgentPromptResult(stop_reason=stop_reason)


class TurnEnd:
    """How a prompt turn ended, for its journaled ``turn_end`` line (``_turns.turn_end_line``): what the
    user saw — the stop reason, or the error as raised — and the sign-in methods an auth error named."""

    def __init__(self, stop: StopControl) -> None:
        self._stop = stop
        self.outcome: TurnOutcome = "failed"
        self.details: dict[str, Any] = {}

    def _note(self) -> str | None:
        return NOT_STOPPED if self._stop.overdue else None

    def answered(self, result: AgentPromptResult) -> AgentPromptResult:
        self.outcome = "cancelled" if result.stop_reason == "cancelled" else "finished"
        self.details = {"stop_reason": result.stop_reason, "error": self._note()}
        return result

    def raised(self, exc: BaseException) -> None:
        if isinstance(exc, AgentSessionError):
            sign_in = tuple(m.id for m in exc.methods) if isinstance(exc, AgentSignInError) else ()
            self.outcome, self.details = "failed", {"error": str(exc), "sign_in": sign_in}
        else:  # the caller was cancelled (the notebook's stop button)
            self.outcome, self.details = "cancelled", {"stop_reason": "cancelled", "error": self._note()}


async def list_sessions(connection: AgentConnection, label: str) -> list[AgentSessionSummary]:
    """``session/list`` (no caching, no pagination)."""
    try:
        result = await connection.rpc.request("session/list", {})
    except (AcpRpcError, AcpConnectionClosed) as exc:
        message = exc.agent_message() if isinstance(exc, AcpRpcError) else str(exc)
        raise AgentSessionError(f"{label} could not list its sessions: {message}") from exc
    sessions = result.get("sessions") if isinstance(result, Mapping) else None
    return [s for s in map(parse_session_summary, sessions or []) if s is not None]
