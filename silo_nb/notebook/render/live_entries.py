"""HTML for a turn that is still streaming: each entry as its card shows it live (``Card.live``).

Agent and thought messages stream through the block cache (:mod:`.streaming`), big tool calls are
summarised while the turn runs; everything else is the saved HTML (:func:`~.html.entry_html`).
"""

from __future__ import annotations

from silo_nb.notebook.render.cards import card_for
from silo_nb.notebook.render.cards.tool_call import LIVE_ENTRY_CHARS
from silo_nb.notebook.render.html import entry_html
from silo_nb.notebook.render.streaming import LIVE_MESSAGE_CHARS, TAIL_CHARS
from silo_nb.updates import (
    Entry,
)

__all__ = ["LIVE_ENTRY_CHARS", "LIVE_MESSAGE_CHARS", "TAIL_CHARS", "live_entry_html"]


def live_entry_html(entry: Entry, *, whole: bool = False) -> tuple[str, bool]:
    """``(html, cut)``: one entry as a live view shows it. ``whole``: no cut (the "Show all" view). A card
    around entries of its own (a subagent's) shows them live too: a child's reply streams as its parent's."""
    card = card_for(entry)
    nested = card.nested
    if nested is None:
        return card.live_html(entry, whole, entry_html)
    drawn = [live_entry_html(inner, whole=whole) for inner in nested.entries(entry)]
    return nested.html(entry, "".join(html for html, _ in drawn)), any(cut for _, cut in drawn)
