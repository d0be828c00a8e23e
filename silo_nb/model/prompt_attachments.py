"""What a prompt attached, as the journal records it: name, type and size of each attachment, never its
content (for an image, a small preview silo_nb made: at most 96 px, at most :data:`PREVIEW_CHARS`, so a
restored cell shows the thumbnail a live one did).

- Improvement over Silo (whose synthesized prompt line holds the text alone): the synthesized
  ``user_message_chunk`` of a prompt carries ``raw.attachments``, one ``{"name", "type", "size",
  "embedded", "uri"}`` per ``resource`` / ``resource_link`` block, so the "You" bubble of a live turn, of
  a restored one and of an export can say what was sent.
- ``name``: a notebook variable's name (``silo:variable/NAME``), else the link's name or the file name of
  the URI. ``type``: the MIME type (the block's, else guessed from the name or the URI). ``size``: bytes
  of the embedded text, or of the linked local file when it can be read (``None`` otherwise).
- :func:`parse_attachments` reads it back from any journal, leniently: malformed items are skipped, a
  journal without the key has none.
"""

from __future__ import annotations

import mimetypes
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

from silo_nb.model.models import AgentPromptBlock, AudioBlock, ImageBlock, ResourceBlock, ResourceLinkBlock

__all__ = ["PREVIEW_CHARS", "PromptAttachment", "describe_attachments", "is_preview", "parse_attachments"]

_VARIABLE_PREFIX = "silo:variable/"
_REFERENCE_PREFIX = "silo:reference/"  # a %%prompt's @ reference (@In[3], @df…), named as written


@dataclass(frozen=True)
class PromptAttachment:
    """One thing sent with a prompt besides its text."""

    name: str
    type: str | None = None  # MIME type
    size: int | None = None  # bytes
    embedded: bool = True  # its text went in the prompt (a ``resource``), else the agent reads a link
    uri: str | None = None
    preview: str | None = None  # a small PNG (``data:image/png;base64,…``) of an image, made by silo_nb


def _name_of(uri: str, given: str | None) -> str:
    if uri.startswith(_VARIABLE_PREFIX):
        return uri[len(_VARIABLE_PREFIX) :] or uri
    if uri.startswith(_REFERENCE_PREFIX):
        return "@" + uri[len(_REFERENCE_PREFIX) :]
    if given:
        return given
    path = unquote(urlparse(uri).path)
    return os.path.basename(path.rstrip("/")) or uri


def _file_size(uri: str) -> int | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    try:
        return os.stat(unquote(parsed.path)).st_size
    except OSError:
        return None


_PREVIEW = re.compile(r"data:image/png;base64,[A-Za-z0-9+/]+={0,2}")
PREVIEW_CHARS = 16_384  # the most a preview may take in a journal line


def is_preview(value: Any) -> bool:
    """Whether ``value`` is a preview silo_nb would have made: a PNG data URI, base64, small."""
    return isinstance(value, str) and len(value) <= PREVIEW_CHARS and _PREVIEW.fullmatch(value) is not None


def _decoded_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=")


def describe_attachments(blocks: Sequence[AgentPromptBlock]) -> list[dict[str, Any]]:
    """``raw.attachments`` for a prompt's blocks (text blocks are the prompt itself, not attachments)."""
    described: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ResourceBlock):
            name = _name_of(block.uri, None)
            kind = block.mime_type or mimetypes.guess_type(name)[0]
            size: int | None = len(block.text.encode("utf-8", "surrogatepass"))
            embedded = True
        elif isinstance(block, ResourceLinkBlock):
            name = _name_of(block.uri, block.name)
            kind = mimetypes.guess_type(name)[0] or mimetypes.guess_type(unquote(urlparse(block.uri).path))[0]
            size, embedded = _file_size(block.uri), False
        elif isinstance(block, (ImageBlock, AudioBlock)):
            item = {
                "name": block.name or block.type,
                "type": block.mime_type,
                "size": _decoded_size(block.data),
                "embedded": True,
                "preview": block.preview if is_preview(block.preview) else None,
            }
            described.append({key: value for key, value in item.items() if value is not None})
            continue
        else:
            continue
        item = {
            "name": name,
            "type": kind,
            "size": size,
            "embedded": embedded,
            "uri": block.uri,
        }
        described.append({key: value for key, value in item.items() if value is not None})
    return described


def parse_attachments(value: Any) -> tuple[PromptAttachment, ...]:
    """``raw.attachments`` of a journal line → attachments; anything malformed is skipped."""
    if not isinstance(value, list):
        return ()
    found: list[PromptAttachment] = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            continue
        kind, size, uri = item.get("type"), item.get("size"), item.get("uri")
        found.append(
            PromptAttachment(
                name=item["name"],
                type=kind if isinstance(kind, str) and kind else None,
                size=size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None,
                embedded=item.get("embedded") is not False,
                uri=uri if isinstance(uri, str) else None,
                preview=item["preview"] if is_preview(item.get("preview")) else None,
            )
        )
    return tuple(found)
