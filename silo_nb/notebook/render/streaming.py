"""A message that is still streaming, as HTML: bounded work per render tick, whatever the agent sends.

- A streaming message is Markdown that grows at its end. Its completed blocks (text up to a blank line
  outside a code fence) are rendered once and kept (:class:`_Stream`, per message); each tick renders
  only the unfinished tail. A tail over :data:`TAIL_CHARS` with no place to cut is shown as plain text
  until it completes: parsing Markdown is not linear on pathological input (nested ``*``, brackets).
- Very long replies are cut in the live view at :data:`LIVE_MESSAGE_CHARS`, with a note; the turn view's
  "Show all" lifts the cut, and the saved transcript is always whole.
- Rendering a completed block alone can differ slightly from rendering the whole message (a loose list
  becomes two lists); the end of the turn renders every entry whole, as the saved transcript does, so
  the last live HTML and the saved HTML are the same.
- The block cache is bounded (:data:`_STREAMS` messages) and never changes what a call returns.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from silo_nb.memo import LruCache
from silo_nb.notebook.render.html_parts import note_html
from silo_nb.notebook.render.md_html import markdown_to_html

__all__ = ["LIVE_MESSAGE_CHARS", "TAIL_CHARS", "streaming_markdown_html"]

LIVE_MESSAGE_CHARS = 20_000  # characters of one reply shown while it streams (unless "Show all")
TAIL_CHARS = 4_000  # an unfinished block longer than this is shown as plain text until it completes
_STREAMS = 8  # messages whose completed blocks are kept
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass
class _Stream:
    """The completed blocks of one streaming message, rendered."""

    text: str = ""  # the text seen last time (only ever grows)
    done: int = 0  # characters of it rendered as completed blocks
    fence: str | None = None  # the fence open at ``done`` (None: none)
    parts: list[str] = field(default_factory=list)


_streams: LruCache[tuple[str, str | None, str | None], _Stream] = LruCache(
    items=_STREAMS, size=1, size_of=lambda _key, _stream: 0
)


def _advance(stream: _Stream, text: str, limit: int) -> None:
    """Render the blocks completed in ``text[stream.done:limit]`` (a blank line outside a fence ends one),
    a few at a time (about :data:`TAIL_CHARS` each)."""
    position, fence = stream.done, stream.fence
    cuts: list[int] = []
    while position < limit:
        end = text.find("\n", position, limit)
        if end < 0:
            break
        line = text[position:end]
        opening = _FENCE.match(line)
        if opening is not None:
            mark = opening.group(1)
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip().strip(mark[0]):
                fence = None
        elif not line.strip() and fence is None:
            cuts.append(end + 1)
        position = end + 1
    for index, cut in enumerate(cuts):
        if cut - stream.done >= TAIL_CHARS or index == len(cuts) - 1:
            block = text[stream.done : cut]
            stream.parts.append(
                markdown_to_html(block, styled=True) if len(block) <= TAIL_CHARS * 2 else _plain(block)
            )
            stream.done, stream.fence = cut, None


def _plain(text: str) -> str:
    return f'<div style="white-space:pre-wrap">{html.escape(text)}</div>'


def streaming_markdown_html(key: tuple[str, str | None, str | None], text: str, limit: int | None) -> str:
    """A growing message as HTML: its completed blocks from the cache, its tail rendered now."""
    stream = _streams.get(key)
    if stream is None or not text.startswith(stream.text[: stream.done]):
        stream = _streams.put(key, _Stream())
    stream.text = text
    shown = len(text) if limit is None else min(len(text), limit)
    _advance(stream, text, shown)
    tail = text[stream.done : shown]
    parts = list(stream.parts)
    if tail.strip():
        parts.append(markdown_to_html(tail, styled=True) if len(tail) <= TAIL_CHARS else _plain(tail))
    rendered = "\n".join(part for part in parts if part)
    if shown < len(text):
        rendered += note_html("… the rest of this reply shows when the turn ends (or press Show all)")
    return rendered
