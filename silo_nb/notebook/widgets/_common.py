"""What every widget module shares: the untyped ipywidgets boundary, the logger, and small helpers.

ipywidgets ships no type information, so it is imported once, here, as ``ipw`` (type ``Any``); the
widget classes subclass its containers (each with a ``# type: ignore[misc]``) and keep typed references
to the children they own. Nothing here talks to a kernel or the network.
"""

from __future__ import annotations

import html
import logging
from datetime import UTC, datetime
from typing import Any

import ipywidgets as ipw  # type: ignore[import-untyped, unused-ignore]

__all__ = ["close_tree", "esc", "ipw", "local_clock", "log", "parse_iso", "seconds_since", "set_children"]

log = logging.getLogger("silo_nb.notebook")


def esc(text: object) -> str:
    """HTML-escape any value for an ``HTML`` widget's value."""
    return html.escape(str(text), quote=True)


def set_children(box: Any, children: tuple[Any, ...]) -> None:
    """Replace a box's children only if they differ (each assignment is a message to the browser)."""
    if tuple(box.children) != children:
        box.children = children


def close_tree(widget: Any) -> None:
    """Close ``widget``, every widget below it (``Box.children``) and their ``layout``/``style`` models.

    ``Widget.close`` closes one comm only; a view's layout and style are models of their own, and would
    otherwise stay open in the kernel for as long as it runs.
    """
    for child in tuple(getattr(widget, "children", ()) or ()):
        close_tree(child)
    for part in (widget, getattr(widget, "layout", None), getattr(widget, "style", None)):
        if part is None:
            continue
        try:
            part.close()
        except Exception:
            log.exception("closing a widget failed")


def parse_iso(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def seconds_since(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds elapsed since an ISO timestamp (``…Z`` accepted); None when absent or unparsable."""
    since = parse_iso(value)
    if since is None:
        return None
    return max(0.0, ((now or datetime.now(UTC)) - since).total_seconds())


def local_clock(value: str | None) -> str:
    """An ISO timestamp as local ``HH:MM:SS`` (the raw text if it does not parse, "" if absent)."""
    parsed = parse_iso(value)
    if parsed is None:
        return value or ""
    return parsed.astimezone().strftime("%H:%M:%S")
