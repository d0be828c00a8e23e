"""The transcript as one self-contained HTML fragment, the same live (widget) and static (saved output).

- One ``<div class="silo-transcript">`` with inline styles only (``styles``): no ``<style>``/``<script>``,
  which GitHub and nbconvert drop. Without styles the plain structure (``<details>``, ``<b>``, ``<pre>``)
  still reads.
- Every string from the agent or the user is escaped; agent Markdown goes through
  :func:`~silo_nb.notebook.render.md_html.markdown_to_html` (raw HTML off, safe links only).
- Per-entry cache: entries are frozen and replaced (never mutated) when they change, so the HTML of an
  entry object is kept by identity (:func:`entry_html`). A live re-render after one chunk renders only
  the entry that chunk changed; the rest is string joining.
- The header row (:func:`turn_header_html`: agent label, turn status) is as tall as the widget's button
  row, so a cell does not jump when the live view is replaced by the saved one.
- Each entry is drawn by its card (``cards/``: a module per entry kind); this module composes them.
"""

from __future__ import annotations

from silo_nb.memo import LruCache
from silo_nb.notebook.render import labels, styles
from silo_nb.notebook.render.cards import card_for
from silo_nb.notebook.render.html_parts import pill_html
from silo_nb.notebook.render.labels import esc
from silo_nb.updates import (
    Entry,
    TranscriptState,
)

__all__ = [
    "box_html",
    "empty_html",
    "entry_html",
    "footer_html",
    "pill_html",
    "status_badge_html",
    "transcript_body_html",
    "transcript_html",
    "turn_header_html",
]

_CACHE_ENTRIES = 65_536  # bounded by _CACHE_CHARS too; a 20,000-call turn must not thrash it
_CACHE_CHARS = 32_000_000

# id(entry) -> (entry, html): the entry is kept with its HTML, so an id is never reused while cached.
_cache: LruCache[int, tuple[Entry, str]] = LruCache(
    items=_CACHE_ENTRIES, size=_CACHE_CHARS, size_of=lambda _key, hit: len(hit[1])
)


def entry_html(entry: Entry) -> str:
    """One entry's HTML ("" for an empty message), rendered once per entry object (LRU by identity)."""
    key = id(entry)
    hit = _cache.get(key)
    if hit is not None and hit[0] is entry:
        return hit[1]
    card = card_for(entry)
    nested = card.nested
    if nested is None:
        rendered = card.html(entry)
    else:  # a card around entries of its own: each drawn by its card (and cached) first
        rendered = nested.html(entry, "".join(map(entry_html, nested.entries(entry))))
    _cache.put(key, (entry, rendered))
    return rendered


# -- the whole transcript ---------------------------------------------------------------------------


def turn_header_html(state: TranscriptState, *, label: str, elapsed: float | None = None) -> str:
    """The header row: the agent's label on the left, the turn's status pill on the right."""
    text, rgb = labels.header_status(state)
    if elapsed is not None:
        text += f" {labels.elapsed_text(elapsed)}"
    return (
        f'<div class="silo-header" style="{styles.HEADER_ROW}">'
        f'<span style="font-weight:600;overflow-wrap:anywhere">{esc(label)}</span>'
        f"{pill_html(text, rgb)}</div>"
    )


def _footer_html(state: TranscriptState, meta: str | None, *, with_status: bool) -> str:
    parts = [f"<span>{esc(part)}</span>" for part in labels.footer_parts(state, meta)]
    if with_status:
        parts.insert(0, pill_html(*labels.turn_status(state)))
    if not parts:
        return ""
    return (
        '<div class="silo-footer" style="display:flex;flex-wrap:wrap;gap:.2em .9em;align-items:baseline;'
        f"margin-top:6px;padding-top:4px;border-top:1px solid {styles.rgba(styles.GREY, 0.25)};"
        f'{styles.SMALL}">'
        f"{''.join(parts)}</div>"
    )


def empty_html(state: TranscriptState) -> str:
    """What a transcript with no entry shows."""
    waiting = "Waiting for the agent…" if state.status == "running" else "No messages."
    return f'<div style="font-style:italic;opacity:.6">{waiting}</div>'


def footer_html(state: TranscriptState, meta: str | None = None, *, with_status: bool = True) -> str:
    return _footer_html(state, meta, with_status=with_status)


def transcript_body_html(state: TranscriptState, *, meta: str | None = None, with_status: bool = True) -> str:
    """The entries and the footer, without the outer box (for a widget that draws its own header)."""
    body = [part for part in map(entry_html, state.entries) if part] or [empty_html(state)]
    return "".join(body) + _footer_html(state, meta, with_status=with_status)


def box_html(inner: str) -> str:
    """The transcript's outer box around ``inner``."""
    return f'<div class="silo-transcript" style="{styles.BOX}">{inner}</div>'


def transcript_html(
    state: TranscriptState, *, title: str | None = None, meta: str | None = None, label: str | None = None
) -> str:
    """The transcript as one self-contained ``<div class="silo-transcript">`` (inline styles only).

    With ``label``, the first row is :func:`turn_header_html` and the footer leaves the status to it.
    """
    parts: list[str] = []
    if label is not None:
        parts.append(turn_header_html(state, label=label))
    heading = labels.title_text(state, title)
    if heading:
        parts.append(
            f'<div class="silo-title" style="font-weight:600;margin-bottom:4px">{esc(heading)}</div>'
        )
    parts.append(transcript_body_html(state, meta=meta, with_status=label is None))
    return box_html("".join(parts))


def status_badge_html(activity: str, *, elapsed: float | None = None) -> str:
    """A small coloured pill: ``● working 1 m 05 s`` (idle/working/blocked/error/dead/none)."""
    rgb = styles.ACTIVITY_COLOURS.get(activity, styles.GREY)
    label = activity + (f" {labels.elapsed_text(elapsed)}" if elapsed is not None else "")
    style = styles.pill_style(rgb, background=0.18, line_height=1.6)
    dot = f'<span style="color:rgb({rgb})">●</span>'
    return f'<span class="silo-badge" style="{style}">{dot} {esc(label)}</span>'
