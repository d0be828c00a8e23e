"""The transcript as plain text (``text/plain``): what a terminal, ``nbconvert --to script`` or a log shows.

- One prefix per speaker (``you>``, ``agent>``, ``thinking>``, ``permission>``), continuation lines
  aligned under the first; tools as ``[tool id] kind · title · status`` with an indented body.
- Tool text is cut shorter than in HTML (:data:`~silo_nb.notebook.render.labels.TEXT_TOOL_LIMIT`).
"""

from __future__ import annotations

from silo_nb.memo import LruCache
from silo_nb.notebook.render import labels
from silo_nb.notebook.render.cards import card_for
from silo_nb.updates import (
    Entry,
    TranscriptState,
)

__all__ = ["entry_text", "text_header", "transcript_text"]


def text_header(state: TranscriptState, label: str) -> str:
    """The header row as one line: ``label · status``."""
    return f"{label} · {labels.header_status(state)[0]}"


def transcript_text(
    state: TranscriptState, *, title: str | None = None, meta: str | None = None, label: str | None = None
) -> str:
    """The transcript as plain text (``text/plain``): ``you>``/``agent>`` lines, tools, plan, footer.

    The last result is kept (states are immutable): a static bundle asks for it twice when its Markdown
    falls back to the text in a fence."""
    key = (title, meta, label)
    last = _last.get(0)
    if last is not None and last[0] is state and last[1] == key:
        return last[2]
    lines = labels.compose(
        state,
        title=title,
        meta=meta,
        label=label,
        header=lambda name, status: f"{name} · {status}",
        heading=lambda text: f"== {text} ==",
        entry=entry_text,
        footer=lambda pieces: "-- " + " · ".join(pieces),
    )
    text = "\n".join(lines)
    _last.put(0, (state, key, text))
    return text


def entry_text(entry: Entry) -> list[str]:
    """One entry's lines, by its card (a card around entries of its own gets them drawn first)."""
    card = card_for(entry)
    nested = card.nested
    if nested is None:
        return card.text(entry)
    return nested.text(entry, [line for inner in nested.entries(entry) for line in entry_text(inner)])


_last: LruCache[int, tuple[TranscriptState, tuple[str | None, str | None, str | None], str]] = LruCache(
    items=1, size=1, size_of=lambda _key, _value: 0
)
