"""The transcript as GitHub-flavoured Markdown text (``text/markdown``, ``%silo export x.md``).

- No raw HTML of ours; our own inline fields (titles, plan steps, labels) are escaped, including
  JupyterLab's ``$`` math, and sit on one line.
- Agent text keeps its Markdown but carries no active HTML (``md_inert.inert_markdown``); the
  Markdown stays valid whatever the agent wrote (fences it left open are closed, ours are longer than
  any backtick run inside). Each entry is written by its card (``cards/``).
- The whole result is checked once more with raw HTML on; what fails, or is too big to check, is saved
  as its plain text in a fence.
"""

from __future__ import annotations

import logging

from silo_nb.notebook.render import labels
from silo_nb.notebook.render.cards import card_for
from silo_nb.notebook.render.md_html import too_costly
from silo_nb.notebook.render.md_inert import inert_markdown, is_inert, md_escape, md_fence
from silo_nb.notebook.render.text import transcript_text
from silo_nb.updates import (
    Entry,
    MessageEntry,
    SubagentEntry,
    ToolEntry,
    TranscriptState,
)

__all__ = ["entry_markdown", "inert_markdown", "md_header", "transcript_markdown"]

log = logging.getLogger("silo_nb.notebook.render")


def md_header(state: TranscriptState, label: str) -> str:
    """The header row as one Markdown line: ``**label** · _status_``."""
    return _md_header_line(label, labels.header_status(state)[0])


def _md_header_line(label: str, status: str) -> str:
    return f"**{md_escape(label)}** · _{md_escape(status)}_"


def transcript_markdown(
    state: TranscriptState, *, title: str | None = None, meta: str | None = None, label: str | None = None
) -> str:
    """The transcript as GitHub-flavoured Markdown (no raw HTML of ours; fences always balanced).

    The whole result is checked once more with raw HTML on (pieces that are inert alone could combine);
    a transcript that fails, or whose text or Markdown is over ``TRANSCRIPT_MARKDOWN_LIMIT`` (making it
    inert would stall the kernel), is given as its plain-text form in a fence: inert whatever it holds."""
    if _text_size(state) > TRANSCRIPT_MARKDOWN_LIMIT or len(state.entries) > TRANSCRIPT_MARKDOWN_ENTRIES:
        # Many small entries (20,000 tool calls) make a long Markdown even with little text: composing
        # and checking it would stall the kernel, so it is fenced like a long text, before composing.
        return _fenced_text(state, title=title, meta=meta, label=label)
    parts = labels.compose(
        state,
        title=title,
        meta=meta,
        label=label,
        header=_md_header_line,
        heading=lambda text: f"**{md_escape(text)}**",
        entry=lambda entry: [md] if (md := entry_markdown(entry)).strip() else [],
        footer=lambda pieces: "_" + " · ".join(map(md_escape, pieces)) + "_",
    )
    result = "\n\n".join(parts) + "\n"
    if too_costly(result, TRANSCRIPT_MARKDOWN_LIMIT):
        return _fenced_text(state, title=title, meta=meta, label=label)
    if not is_inert(result):
        log.warning("a transcript's Markdown was not inert as a whole; saved as plain text in a fence")
        return _fenced_text(state, title=title, meta=meta, label=label)
    return result


def entry_markdown(entry: Entry) -> str:
    """One entry's Markdown, by its card (a card around entries of its own gets them drawn first)."""
    card = card_for(entry)
    nested = card.nested
    if nested is None:
        return card.markdown(entry)
    drawn = [md for inner in nested.entries(entry) if (md := entry_markdown(inner)).strip()]
    return nested.markdown(entry, drawn)


TRANSCRIPT_MARKDOWN_LIMIT = 150_000  # characters of agent and tool text in one transcript
TRANSCRIPT_MARKDOWN_ENTRIES = 1_000  # entries: markdown-it needs ~0.3 s per 1,000 list items


def _text_size(state: TranscriptState) -> int:
    size = 0
    for entry in state.entries:
        if isinstance(entry, SubagentEntry) and entry.transcript is not None:
            size += _text_size(entry.transcript) + 200 * len(entry.entries)
        elif isinstance(entry, MessageEntry):
            size += len(entry.text)
        elif isinstance(entry, ToolEntry):
            for item in entry.content:
                size += len(item.old_text or "") + len(item.new_text or "")
                size += len(item.content.text or "") if item.content is not None else 0
    return size


def _fenced_text(state: TranscriptState, *, title: str | None, meta: str | None, label: str | None) -> str:
    return "\n".join(md_fence(transcript_text(state, title=title, meta=meta, label=label))) + "\n"
