"""Prompt blocks: strict validation of what the user passes, their wire shape, and the journal's
synthesized user prompt (Silo §3.4: ACP never echoes the prompt back)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter

from silo_nb.sessions.errors import AgentSessionInputError
from silo_nb.sessions.models import (
    AgentContentBlock,
    AgentPromptBlock,
    AgentSessionUpdate,
    ResourceBlock,
    ResourceLinkBlock,
    TextBlock,
)
from silo_nb.sessions.status import now_iso

__all__ = ["prompt_line", "validate_prompt_blocks", "wire_block"]

_PROMPT_BLOCKS: TypeAdapter[list[AgentPromptBlock]] = TypeAdapter(list[AgentPromptBlock])


def validate_prompt_blocks(blocks: Iterable[AgentPromptBlock | Mapping[str, Any]]) -> list[AgentPromptBlock]:
    """Blocks or plain dicts → validated blocks (``mimeType`` accepted too). Raises ``ValueError``."""
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
    return _PROMPT_BLOCKS.validate_python(items)


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
