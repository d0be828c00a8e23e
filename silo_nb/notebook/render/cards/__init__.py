"""The registry of entry cards: every module of this package defines ``CARD`` (a :class:`~..card.Card`).

The modules are found, not listed: a new entry kind's card is one new module here. A test proves every
entry type of ``updates/entries.py`` has exactly one card.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from silo_nb.notebook.render.card import Card

__all__ = ["CARDS", "card_for"]


def _discover() -> dict[type[Any], Card[Any]]:
    found: dict[type[Any], Card[Any]] = {}
    for module in pkgutil.iter_modules(__path__):
        card = importlib.import_module(f"{__name__}.{module.name}").CARD
        if card.entry_type in found:
            raise RuntimeError(f"two cards for {card.entry_type.__name__}")
        found[card.entry_type] = card
    return found


CARDS: dict[type[Any], Card[Any]] = _discover()


def card_for(entry: Any) -> Card[Any]:
    """The card of ``entry``'s type (every entry type has one)."""
    return CARDS[type(entry)]
