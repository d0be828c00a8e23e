"""What a transcript entry kind brings to every format: a :class:`Card` (HTML, Markdown, text, live HTML).

- One card per entry type, each in its own module of :mod:`.cards` (``cards/message.py``…); the
  transcript renderers (``html.py``, ``markdown.py``, ``text.py``, ``live_entries.py``) ask ``cards.card_for``
  and never look at an entry's type themselves. A new entry kind is one new card module.
- ``live`` is what a streaming turn shows (``(html, cut)``); most cards show their saved HTML, which the
  live view passes in (``saved``: the HTML renderer's cached :func:`~..html.entry_html`).
- ``nested``: a card around entries of its own (a subagent's transcript). The renderers draw those
  entries with their own cards and hand the result to the card, so no card imports the registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Card", "Nested"]

E = TypeVar("E")


@dataclass(frozen=True)
class Nested(Generic[E]):
    """How a card draws around the entries it holds (``entries``), given them already drawn: HTML as one
    string, Markdown as one string per entry, text as lines."""

    entries: Callable[[E], tuple[Any, ...]]
    html: Callable[[E, str], str]
    markdown: Callable[[E, list[str]], str]
    text: Callable[[E, list[str]], list[str]]


@dataclass(frozen=True)
class Card(Generic[E]):
    """How one entry type renders; ``text`` gives lines (the plain-text transcript joins them)."""

    entry_type: type[E]
    html: Callable[[E], str]
    markdown: Callable[[E], str]
    text: Callable[[E], list[str]]
    # (entry, whole, saved) -> (html, cut): the live view's HTML; ``whole`` lifts any cut ("Show all").
    live: Callable[[E, bool, Callable[[E], str]], tuple[str, bool]] | None = None
    nested: Nested[E] | None = None

    def live_html(self, entry: E, whole: bool, saved: Callable[[E], str]) -> tuple[str, bool]:
        return self.live(entry, whole, saved) if self.live is not None else (saved(entry), False)
