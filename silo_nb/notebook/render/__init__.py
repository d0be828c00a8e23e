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
from dataclasses import replace
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
from silo_nb.updates import (
    MessageEntry,
    TranscriptState,
)

__all__ = [
    "DIFF_LINE_LIMIT",
    "SAVED_ENTRIES_LIMIT",
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

    ``label`` gives every form the header row the live view shows (agent label, turn status). A turn of
    more than :data:`SAVED_ENTRIES_LIMIT` entries is saved as its first and last halves around a line
    saying how many are left out: 20,000 tool calls made 11 MB of HTML in the notebook and stalled the
    kernel for seconds; the journal keeps them all (``%silo journal``, ``%silo export``).
    """
    state = saved_part(state)
    renderers: dict[str, Callable[..., str]] = {
        "text/html": transcript_html,
        "text/markdown": transcript_markdown,
        "text/plain": transcript_text,
    }
    data = {mime: render(state, title=title, meta=meta, label=label) for mime, render in renderers.items()}
    return data, {"silo": dict(metadata)}


SAVED_ENTRIES_LIMIT = 1_000


def saved_part(state: TranscriptState) -> TranscriptState:
    """``state`` with at most :data:`SAVED_ENTRIES_LIMIT` entries, the rest said in one line (that line is
    one of them: 1,001 entries would put the Markdown form over ``TRANSCRIPT_MARKDOWN_ENTRIES``)."""
    entries = state.entries
    if len(entries) <= SAVED_ENTRIES_LIMIT:
        return state
    head = SAVED_ENTRIES_LIMIT // 2
    tail = SAVED_ENTRIES_LIMIT - head - 1  # the note takes the last place
    left_out = len(entries) - head - tail
    note = MessageEntry(
        role="agent",
        text=f"_… {left_out:,} entries of this turn are not saved in the notebook (the journal has them "
        "all: `%silo journal`, `%silo export`)._",
    )
    return replace(state, entries=(*entries[:head], note, *entries[-tail:]))
