"""The card of a question the agent asked (``QuestionEntry``): its message, its fields or link, and the
answer (or "waiting…"). The agent's words are escaped; a link is one only when ``md_html.safe_url`` allows
it (http, https, mailto), else it is shown as text."""

from __future__ import annotations

import json
from typing import Any

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_html import safe_url
from silo_nb.notebook.render.md_inert import md_code, md_escape
from silo_nb.updates import (
    QuestionEntry,
)

__all__ = ["CARD", "question_html", "question_markdown", "question_text"]

_ICON = "?"
_SHOWN_FIELDS = 50  # fields listed in a card; the rest are counted
_OUTCOMES = {"accept": "answered", "decline": "declined", "cancel": "cancelled"}
_COLOURS = {"accept": styles.GREEN, "decline": styles.RED, "cancel": styles.GREY, None: styles.AMBER}


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _outcome(entry: QuestionEntry) -> str:
    if entry.action is None:
        return "waiting…"
    word = _OUTCOMES.get(entry.action, entry.action)
    who = f" by {entry.by}" if entry.by and entry.by != "user" else ""
    done = " · completed" if entry.completed else ""
    return f"{word}{who}{done}"


def _rows(entry: QuestionEntry) -> list[tuple[str, str | None]]:
    """(field title, the value given or None) of the fields shown, and a line for the rest; none while
    the question waits (its form below the transcript shows the fields then, once)."""
    if not entry.answered:
        return []
    given = dict(entry.content)
    rows: list[tuple[str, str | None]] = [
        (title + (" *" if required else ""), _value(given[name]) if name in given else None)
        for name, title, _type, required in entry.fields[:_SHOWN_FIELDS]
    ]
    more = max(entry.field_count, len(entry.fields)) - min(len(entry.fields), _SHOWN_FIELDS)
    if more > 0:
        rows.append((f"… {more:,} more fields", None))
    return rows


def question_html(entry: QuestionEntry) -> str:
    rgb = _COLOURS.get(entry.action, styles.GREY)
    parts = [
        f"<div><b>{_ICON} Question:</b> {esc(entry.message)} "
        f'<span style="{styles.MUTED}">→ {esc(_outcome(entry))}</span></div>'
    ]
    if entry.url is not None:
        link = (
            f'<a href="{esc(entry.url)}" target="_blank" rel="noopener noreferrer">{esc(entry.url)}</a>'
            if safe_url(entry.url)
            else f'<span style="{styles.MONO}">{esc(entry.url)}</span>'
        )
        parts.append(f'<div style="{styles.SMALL}">link: {link}</div>')
    for title, value in _rows(entry):
        shown = f" <b>{esc(value)}</b>" if value is not None else ""
        parts.append(f'<div style="{styles.SMALL};padding-left:1em">{esc(title)}{shown}</div>')
    return (
        f'<div class="silo-question" style="margin:4px 0;padding:3px 8px;'
        f'border-left:3px solid {styles.rgba(rgb, 0.7)}">{"".join(parts)}</div>'
    )


def question_markdown(entry: QuestionEntry) -> str:
    lines = [f"* {_ICON} Question: {md_escape(entry.message)} → _{md_escape(_outcome(entry))}_"]
    if entry.url is not None:
        lines.append(f"  - link: {md_code(entry.url)}")
    lines += [
        f"  - {md_escape(title)}" + (f": {md_code(value)}" if value is not None else "")
        for title, value in _rows(entry)
    ]
    return "\n".join(lines)


def question_text(entry: QuestionEntry) -> list[str]:
    lines = [f"question> {entry.message} → {_outcome(entry)}"]
    if entry.url is not None:
        lines.append(f"    link: {entry.url}")
    lines += [f"    {title}" + (f": {value}" if value is not None else "") for title, value in _rows(entry)]
    return lines


CARD = Card(QuestionEntry, question_html, question_markdown, question_text)
