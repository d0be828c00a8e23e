"""Prompt blocks: strict validation of what the user passes, their wire shape, and the journal's
synthesized user prompt (Silo §3.4: ACP never echoes the prompt back)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ConfigDict, TypeAdapter

from silo_nb.model import (
    USER_PROMPT_KIND,
    AgentContentBlock,
    AgentPromptBlock,
    AgentSessionInputError,
    AgentSessionUpdate,
    AudioBlock,
    ImageBlock,
    ResourceBlock,
    ResourceLinkBlock,
    TextBlock,
    describe_attachments,
)
from silo_nb.sessions.status import now_iso

__all__ = ["prompt_line", "validate_prompt_blocks", "wire_block"]

# Built on first use, not at import (a schema build, and pydantic's plugin scan, cost 15-20 ms).
_PROMPT_BLOCKS: TypeAdapter[list[AgentPromptBlock]] = TypeAdapter(
    list[AgentPromptBlock], config=ConfigDict(defer_build=True)
)


def validate_prompt_blocks(
    blocks: Iterable[AgentPromptBlock | Mapping[str, Any]],
    *,
    embedded_context: bool = True,
    image: bool = True,
    audio: bool = True,
    label: str = "The agent",
) -> list[AgentPromptBlock]:
    """Blocks or plain dicts → validated blocks (``mimeType`` accepted too). Raises ``ValueError``, also
    for a ``resource``, ``image`` or ``audio`` block to an agent whose prompt capabilities lack it."""
    if isinstance(blocks, (str, bytes, Mapping)):
        raise AgentSessionInputError(
            'prompt() takes a list of blocks, e.g. [{"type": "text", "text": "hello"}] — not a single value.'
        )
    items = [
        b.model_dump(by_alias=False)
        if isinstance(b, (TextBlock, ResourceLinkBlock, ResourceBlock, ImageBlock, AudioBlock))
        else b
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
    for kind, accepted in ((ImageBlock, image), (AudioBlock, audio)):
        if not accepted and any(isinstance(b, kind) for b in parsed):
            what = "images" if kind is ImageBlock else "audio"
            raise AgentSessionInputError(
                f"{label} does not accept {what} in a prompt (its promptCapabilities) — "
                "attach the file as a link (--file sends a link to such an agent) or describe it in words."
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
    if isinstance(block, (ImageBlock, AudioBlock)):  # name and preview are silo_nb's, not sent
        return {"type": block.type, "mimeType": block.mime_type, "data": block.data}
    resource: dict[str, Any] = {"uri": block.uri, "text": block.text}
    if block.mime_type is not None:
        resource["mimeType"] = block.mime_type
    return {"type": "resource", "resource": resource}


def prompt_line(
    blocks: Sequence[AgentPromptBlock], n: int, cell_id: str | None, cwd: str | None = None
) -> AgentSessionUpdate | None:
    """The synthesized ``user_message_chunk`` for the ``n``-th prompt; None for a prompt with neither text
    nor attachments. Attachments are described in ``raw.attachments`` (name, type, size; never their
    content: see ``prompt_attachments``); ``raw.cwd`` is the session's folder (the transcript shows paths
    relative to it)."""
    attachments = describe_attachments(blocks)
    if not attachments and not any(isinstance(b, TextBlock) for b in blocks):
        return None
    text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
    raw: dict[str, Any] = {"synthesized": True}
    if cell_id:
        raw["cellId"] = cell_id
    if attachments:
        raw["attachments"] = attachments
    if cwd:
        raw["cwd"] = cwd
    return AgentSessionUpdate(
        kind=USER_PROMPT_KIND,
        text=text,
        content=AgentContentBlock(type="text", text=text),
        message_id=f"silo-journal-user-{n}",
        timestamp=now_iso(),
        raw=raw,
    )
