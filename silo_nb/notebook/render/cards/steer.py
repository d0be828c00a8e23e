"""The card of the user's input to a running turn (``SteerEntry``): a small "You, mid-turn" bubble where it
came in the turn, with how the agent took it."""

from __future__ import annotations

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_inert import md_balanced, md_escape, md_quote
from silo_nb.updates import SteerEntry

__all__ = ["CARD", "steer_html", "steer_markdown", "steer_status", "steer_text"]

_OUTCOMES = {None: "sending…", "injected": "taken into the turn", "startedNewTurn": "started a new turn"}


def steer_status(entry: SteerEntry) -> str:
    """``taken into the turn``, ``not taken — <why>``…"""
    if entry.outcome == "refused":
        return f"not taken — {entry.note}" if entry.note else "not taken"
    return _OUTCOMES.get(entry.outcome, entry.outcome or "")


def steer_html(entry: SteerEntry) -> str:
    colour = styles.RED if entry.outcome == "refused" else styles.GREY
    return (
        f'<div class="silo-steer" data-outcome="{esc(entry.outcome or "")}" style="margin:4px 0 4px 1.5em;'
        f'padding:3px 8px;border-radius:4px;background:{styles.rgba(colour, 0.1)}">'
        f'<div style="font-size:.8em;font-weight:600;{styles.MUTED}">↪ You, mid-turn · '
        f"{esc(steer_status(entry))}</div>"
        f'<div style="white-space:pre-wrap">{esc(entry.text)}</div></div>'
    )


def steer_markdown(entry: SteerEntry) -> str:
    label = f"**↪ You, mid-turn** _({md_escape(steer_status(entry))})_"
    return md_quote([label, "", *md_balanced(entry.text).splitlines()])


def steer_text(entry: SteerEntry) -> list[str]:
    return [f"you (mid-turn, {steer_status(entry)})> {entry.text}"]


CARD = Card(SteerEntry, steer_html, steer_markdown, steer_text)
