"""The card of a notice (``NoticeEntry``, ACP v1.25): a one-line banner in the turn, coloured by severity
(blue info, amber warning, red error, grey for a word ACP does not define), the description after it."""

from __future__ import annotations

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_inert import md_escape
from silo_nb.updates import NoticeEntry

__all__ = ["CARD", "notice_html", "notice_markdown", "notice_text"]

_COLOURS = {"info": styles.BLUE, "warning": styles.AMBER, "error": styles.RED}
_ICONS = {"info": "ℹ", "warning": "⚠", "error": "⛔"}


def notice_html(entry: NoticeEntry) -> str:
    rgb = _COLOURS.get(entry.severity, styles.GREY)
    icon = _ICONS.get(entry.severity, "•")
    more = f' <span style="{styles.MUTED}">— {esc(entry.description)}</span>' if entry.description else ""
    return (
        f'<div class="silo-notice" data-severity="{esc(entry.severity)}" style="margin:4px 0;padding:3px 8px;'
        f'border-left:3px solid {styles.rgba(rgb, 0.8)};background:{styles.rgba(rgb, 0.08)}">'
        f"{icon} <b>{esc(entry.title)}</b>{more}</div>"
    )


def notice_markdown(entry: NoticeEntry) -> str:
    more = f" — {md_escape(entry.description)}" if entry.description else ""
    return f"> {_ICONS.get(entry.severity, '•')} **{md_escape(entry.title)}**{more}"


def notice_text(entry: NoticeEntry) -> list[str]:
    more = f" — {entry.description}" if entry.description else ""
    return [f"notice [{entry.severity}]> {entry.title}{more}"]


CARD = Card(NoticeEntry, notice_html, notice_markdown, notice_text)
