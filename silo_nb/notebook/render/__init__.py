"""Rendering of a transcript (``TranscriptState``) as HTML, Markdown and plain text: pure functions.

- One renderer for every place a transcript shows: the live turn widget, the static bundle that
  replaces it when a turn ends, ``%silo export`` and the repaint of restored cells. With the same
  ``label``, the live and the saved output have the same header row, headings and width.
- Modules by job: :mod:`.html`, :mod:`.markdown` (the transcript as Markdown text), :mod:`.text`;
  :mod:`.styles` (every colour, font and inline style), :mod:`.labels` (status words, icons, numbers,
  diffs, cuts), :mod:`.md_html` (agent Markdown → HTML with markdown-it-py), :mod:`.code` (Pygments),
  :mod:`.live` (a streaming turn's entries: Markdown blocks cached, long parts cut until the end).
- Nothing reads clocks or files; the only state is caches that never change what a call returns:
  :func:`entry_html`'s (by the identity of immutable entries), diffs (by content), streaming blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from silo_nb.notebook.render.html import (
    entry_html,
    status_badge_html,
    transcript_body_html,
    transcript_html,
    turn_header_html,
)
from silo_nb.notebook.render.labels import DIFF_LINE_LIMIT, TOOL_TEXT_LIMIT
from silo_nb.notebook.render.markdown import transcript_markdown
from silo_nb.notebook.render.md_html import markdown_to_html, unclosed_fence
from silo_nb.notebook.render.text import transcript_text
from silo_nb.notebook.transcript import TranscriptState

__all__ = [
    "DIFF_LINE_LIMIT",
    "TOOL_TEXT_LIMIT",
    "entry_html",
    "markdown_to_html",
    "static_bundle",
    "status_badge_html",
    "transcript_body_html",
    "transcript_html",
    "transcript_markdown",
    "transcript_text",
    "turn_header_html",
    "unclosed_fence",
]


def static_bundle(
    state: TranscriptState,
    *,
    metadata: dict[str, Any],
    title: str | None = None,
    meta: str | None = None,
    label: str | None = None,
) -> tuple[dict[str, str], dict[str, Any]]:
    """``(data, metadata)`` for ``update_display(data, raw=True, metadata=..., display_id=...)``.

    ``label`` gives every form the header row the live view shows (agent label, turn status).
    """
    renderers: dict[str, Callable[..., str]] = {
        "text/html": transcript_html,
        "text/markdown": transcript_markdown,
        "text/plain": transcript_text,
    }
    data = {mime: render(state, title=title, meta=meta, label=label) for mime, render in renderers.items()}
    return data, {"silo": dict(metadata)}
