"""Small HTML pieces every card and the transcript share: a status pill, a muted line, a note."""

from __future__ import annotations

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.labels import esc

__all__ = ["muted_html", "note_html", "pill_html"]


def pill_html(label: str, rgb: str) -> str:
    return f'<span style="{styles.pill_style(rgb)}">{esc(label)}</span>'


def muted_html(text: str) -> str:
    return f'<div style="{styles.SMALL};{styles.MUTED}">{esc(text)}</div>'


def note_html(text: str) -> str:
    """An italic note of the live view (``text`` is ours, not escaped)."""
    return f'<div class="silo-cut" style="{styles.SMALL};{styles.MUTED};font-style:italic">{text}</div>'
