"""What the demo agent reads of a prompt's blocks: the text, and a line per attachment it names in its
reply (a link's or a resource's URI; an image's or audio's type and size)."""

from __future__ import annotations

from typing import Any

__all__ = ["read_prompt"]


def read_prompt(prompt: list[Any]) -> tuple[str, list[str]]:
    """(the text blocks joined, the attachments named)."""
    blocks = [b for b in prompt if isinstance(b, dict)]
    text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    attachments: list[str] = []
    for block in blocks:
        if block.get("type") == "resource_link" and isinstance(block.get("uri"), str):
            attachments.append(block["uri"])
        elif block.get("type") == "resource" and isinstance(block.get("resource"), dict):
            attachments.append(str(block["resource"].get("uri", "")))
        elif block.get("type") in ("image", "audio") and isinstance(block.get("data"), str):
            size = len(block["data"]) * 3 // 4
            attachments.append(f"an {block['type']} ({block.get('mimeType')}, {size:,} bytes)")
    return text, attachments
