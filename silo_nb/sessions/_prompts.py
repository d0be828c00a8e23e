"""Prompt blocks: strict validation of what the user passes, their wire shape, the journal's synthesized
user prompt (Silo §3.4: ACP never echoes the prompt back), and the ``session/prompt`` call itself."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import anyio
from pydantic import ConfigDict, TypeAdapter

from silo_nb.acp import AcpConnectionClosed, AcpRpcError, AgentConnection
from silo_nb.sessions.errors import AgentSessionError, AgentSessionInputError
from silo_nb.sessions.models import (
    AgentContentBlock,
    AgentPromptBlock,
    AgentPromptResult,
    AgentSessionUpdate,
    ResourceBlock,
    ResourceLinkBlock,
    TextBlock,
)
from silo_nb.sessions.status import now_iso

__all__ = ["CANCEL_GRACE_SECONDS", "prompt_line", "send_prompt", "validate_prompt_blocks", "wire_block"]

# How long a cancelled caller waits for the agent to close the turn (improvement over Silo).
CANCEL_GRACE_SECONDS = 3.0

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
    """The synthesized ``user_message_chunk`` for the ``n``-th prompt; None for a prompt with no text."""
    if not any(isinstance(b, TextBlock) for b in blocks):
        return None
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    return AgentSessionUpdate(
        kind="user_message_chunk",
        text=text,
        content=AgentContentBlock(type="text", text=text),
        message_id=f"silo-journal-user-{n}",
        timestamp=now_iso(),
        raw={"synthesized": True, "cellId": cell_id} if cell_id else {"synthesized": True},
    )


async def send_prompt(
    connection: AgentConnection,
    session_id: str,
    blocks: Sequence[AgentPromptBlock],
    *,
    on_cancelled: Callable[[], None],
) -> AgentPromptResult:
    """``session/prompt`` and its answer; agent errors become ``AgentSessionError``.

    If the caller is cancelled (the notebook's stop button, a timeout), ``on_cancelled`` cancels the turn
    on the agent's side too, and the agent gets a moment to answer so the transcript ends cleanly.
    """
    call = connection.rpc.start_request(
        "session/prompt", {"sessionId": session_id, "prompt": [wire_block(b) for b in blocks]}
    )
    try:
        result = await call.wait(abandon_on_cancel=False)
    except AcpRpcError as exc:
        raise AgentSessionError(f"The prompt turn failed: {exc.agent_message()}") from exc
    except AcpConnectionClosed as exc:
        raise AgentSessionError(f"The prompt turn failed: {exc}") from exc
    except BaseException:
        on_cancelled()
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE_SECONDS):
            await call.wait_quietly()
        raise
    stop_reason = result.get("stopReason") if isinstance(result, Mapping) else None
    if not isinstance(stop_reason, str) or not stop_reason:
        stop_reason = "end_turn"
    return AgentPromptResult(stop_reason=stop_reason)
