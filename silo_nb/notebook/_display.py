"""Typed doors to IPython's display functions (IPython is untyped; the ignores live here only)."""

from __future__ import annotations

from typing import Any

from IPython.display import HTML as _HTML
from IPython.display import display as _display
from IPython.display import update_display as _update_display

__all__ = ["display", "html_object", "update_display"]


def display(obj: Any, **kwargs: Any) -> None:
    _display(obj, **kwargs)  # type: ignore[no-untyped-call]


def update_display(obj: Any, **kwargs: Any) -> None:
    _update_display(obj, **kwargs)  # type: ignore[no-untyped-call]


def html_object(markup: str) -> Any:
    """An object that displays as ``text/html`` (for ``Output.append_display_data``)."""
    return _HTML(markup)  # type: ignore[no-untyped-call]
