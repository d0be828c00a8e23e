"""The card of a message (``MessageEntry``): the user's prompt, the agent's reply, its reasoning.

- The user's text is shown as typed (escaped, never Markdown), with what the prompt attached.
- Agent text is Markdown (``md_html``; plain when too costly to parse); thoughts fold into a
  "Thinking" section. While a turn streams, agent text goes through the block cache of
  :mod:`..streaming`, cut at ``LIVE_MESSAGE_CHARS`` unless the view shows everything.
- Characters over the reducer's limit are counted and said, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable

from silo_nb.model import (
    is_preview,
)
from silo_nb.notebook.render import labels, styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.html_parts import muted_html
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_html import agent_markdown_html
from silo_nb.notebook.render.md_inert import md_balanced, md_escape, md_quote
from silo_nb.notebook.render.streaming import LIVE_MESSAGE_CHARS, streaming_markdown_html
from silo_nb.updates import (
    MessageEntry,
)

__all__ = ["CARD", "message_body_html", "message_html", "message_markdown", "message_text"]


def _non_text_html(entry: MessageEntry) -> str:
    dropped = (
        muted_html(f"… {entry.dropped:,} more characters not kept (over the limit)") if entry.dropped else ""
    )
    return dropped + (muted_html(f"+ {', '.join(entry.non_text)}") if entry.non_text else "")


def _attachments_html(entry: MessageEntry) -> str:
    return "".join(
        f'<div class="silo-attachment" style="{styles.SMALL};{styles.MUTED}">'
        f"{labels.ATTACHMENT_ICON_HTML} {esc(labels.attachment_text(item))}"
        f"{_preview_html(item.preview)}</div>"
        for item in entry.attachments
    )


def _preview_html(preview: str | None) -> str:
    """A thumbnail of an attached image: only silo_nb's own small PNG data URI, checked again here."""
    if not is_preview(preview):
        return ""
    size = "max-height:96px;max-width:160px;border-radius:3px"
    image = f'<img class="silo-thumbnail" src="{esc(str(preview))}" alt="attached image" style="{size}">'
    return f"<div>{image}</div>"


def _user_html(entry: MessageEntry) -> str:
    text = f'<div style="white-space:pre-wrap">{esc(entry.text)}</div>' if entry.text else ""
    return (
        '<div class="silo-user" style="margin:4px 0;padding:4px 8px;border-radius:4px;'
        f'background:{styles.rgba(styles.GREY, 0.12)}">'
        f'<div style="font-size:.8em;font-weight:600;{styles.MUTED}">You</div>'
        f"{text}{_attachments_html(entry)}{_non_text_html(entry)}</div>"
    )


def message_body_html(entry: MessageEntry, body: str) -> str:
    """An agent or thought message around ``body`` (its text as HTML)."""
    if entry.role == "agent":
        return f'<div class="silo-agent" style="margin:4px 0">{body}{_non_text_html(entry)}</div>'
    return (
        '<details class="silo-thought" style="margin:4px 0;opacity:.65">'
        '<summary style="cursor:pointer;font-style:italic">Thinking</summary>'
        f'<div style="padding-left:.8em;border-left:2px solid {styles.rgba(styles.GREY, 0.35)}">'
        f"{body}{_non_text_html(entry)}</div></details>"
    )


def _agent_html(entry: MessageEntry) -> str:
    return message_body_html(entry, agent_markdown_html(entry.text))


def message_html(entry: MessageEntry) -> str:
    if not entry.text and not entry.non_text and not entry.attachments:
        return ""
    return _user_html(entry) if entry.role == "user" else _agent_html(entry)


def message_markdown(entry: MessageEntry) -> str:
    extra = [f"_+ {md_escape(', '.join(entry.non_text))}_"] if entry.non_text else []
    if entry.dropped:
        extra.insert(0, f"_… {entry.dropped:,} more characters not kept (over the limit)_")
    if entry.role == "user":
        attached = [
            f"- {labels.ATTACHMENT_ICON} {md_escape(labels.attachment_text(a))}" for a in entry.attachments
        ]
        extra = (["", *attached] if attached else []) + extra
        # A blank line after the label: text right under a paragraph line would continue it, and an
        # indented code block there would stop being code.
        return md_quote(["**You:**", "", *md_balanced(entry.text).splitlines(), *extra])
    if entry.role == "agent":
        return "\n\n".join(part for part in (md_balanced(entry.text), *extra) if part)
    return md_quote(["_Thinking:_", "", *md_balanced(entry.text).splitlines()])


def _prefixed(prefix: str, text: str) -> list[str]:
    lines = text.rstrip().splitlines() or [""]
    pad = " " * len(prefix)
    return [f"{prefix}{lines[0]}", *(f"{pad}{line}".rstrip() for line in lines[1:])]


def message_text(entry: MessageEntry) -> list[str]:
    prefix = {"user": "you> ", "agent": "agent> "}.get(entry.role, "thinking> ")
    pad = " " * len(prefix)
    attached = [f"{pad}{labels.ATTACHMENT_ICON} {labels.attachment_text(a)}" for a in entry.attachments]
    extra = attached + ([f"{pad}+ {', '.join(entry.non_text)}"] if entry.non_text else [])
    if entry.dropped:
        extra.insert(0, f"{pad}… {entry.dropped:,} more characters not kept (over the limit)")
    if not entry.text and extra:
        return [f"{prefix}{extra[0].lstrip()}", *extra[1:]]
    return _prefixed(prefix, entry.text) + extra if entry.text or extra else []


def _live(entry: MessageEntry, whole: bool, saved: Callable[[MessageEntry], str]) -> tuple[str, bool]:
    if entry.role == "user" or not (entry.text or entry.non_text):
        return saved(entry), False
    limit = None if whole else LIVE_MESSAGE_CHARS
    key = (entry.role, entry.message_id, entry.timestamp)
    body = streaming_markdown_html(key, entry.text, limit)
    return message_body_html(entry, body), limit is not None and len(entry.text) > limit


CARD = Card(MessageEntry, message_html, message_markdown, message_text, _live)
