"""The card of a message between sessions (``SessionMessageEntry``, ACP v1.25): "sender → recipient" and
the message, a parent's instructions to a child or a child's report, shown as text (escaped)."""

from __future__ import annotations

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.html_parts import muted_html
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_inert import md_balanced, md_escape, md_quote
from silo_nb.updates import SessionMessageEntry

__all__ = ["CARD", "session_message_html", "session_message_markdown", "session_message_text"]


def _route(entry: SessionMessageEntry) -> str:
    return f"{entry.sender or '?'} → {entry.recipient or '?'}"


def _extra(entry: SessionMessageEntry) -> list[str]:
    extra = [f"… {entry.dropped:,} more characters not kept (over the limit)"] if entry.dropped else []
    return extra + ([f"+ {', '.join(entry.non_text)}"] if entry.non_text else [])


def session_message_html(entry: SessionMessageEntry) -> str:
    return (
        f'<div class="silo-session-message" style="margin:4px 0;padding:3px 8px;'
        f'border-left:3px solid {styles.rgba(styles.GREY, 0.6)};background:{styles.rgba(styles.GREY, 0.06)}">'
        f'<div style="{styles.SMALL};font-weight:600">✉ {esc(_route(entry))}</div>'
        f'<div style="white-space:pre-wrap">{esc(entry.text)}</div>'
        f"{''.join(muted_html(line) for line in _extra(entry))}</div>"
    )


def session_message_markdown(entry: SessionMessageEntry) -> str:
    lines = [f"✉ **{md_escape(_route(entry))}**", "", *md_balanced(entry.text).splitlines()]
    return md_quote(lines + [f"_{md_escape(line)}_" for line in _extra(entry)])


def session_message_text(entry: SessionMessageEntry) -> list[str]:
    lines = entry.text.rstrip().splitlines() or [""]
    head = f"message {_route(entry)}> "
    return [head + lines[0], *(f"{' ' * len(head)}{line}".rstrip() for line in lines[1:]), *_extra(entry)]


CARD = Card(SessionMessageEntry, session_message_html, session_message_markdown, session_message_text)
