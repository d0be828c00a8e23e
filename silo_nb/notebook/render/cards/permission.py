"""The card of a permission (``PermissionEntry``): what the agent asked, and what was chosen (or not yet).

The decision's colour says what it did: amber while waiting, green for an allow, red for a reject, grey
when cancelled.
"""

from __future__ import annotations

from silo_nb.notebook.render import labels, styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_inert import md_escape
from silo_nb.updates import (
    PermissionEntry,
)

__all__ = ["CARD", "permission_html", "permission_markdown", "permission_text"]

_DECISION_COLOURS = {"waiting": styles.AMBER, "allowed": styles.GREEN, "rejected": styles.RED}


def permission_html(entry: PermissionEntry) -> str:
    outcome, lasting = labels.permission_outcome(entry)
    rgb = _DECISION_COLOURS.get(labels.permission_decision(entry), styles.GREY)
    shown = f"<i>{esc(outcome)}</i>" if entry.choice is None else f"<b>{esc(outcome)}</b>"
    always = f' <span style="{styles.MUTED}">(always)</span>' if lasting else ""
    note = f' <span style="{styles.MUTED}">— {esc(entry.note)}</span>' if entry.note else ""
    return (
        f'<div class="silo-permission" style="margin:4px 0;padding:3px 8px;'
        f'border-left:3px solid {styles.rgba(rgb, 0.7)}">'
        f"{labels.PERMISSION_ICON} Permission: {esc(entry.title)} → {shown}{always}{note}</div>"
    )


def permission_markdown(entry: PermissionEntry) -> str:
    outcome, lasting = labels.permission_outcome(entry)
    shown = f"_{md_escape(outcome)}_" if entry.choice is None else f"**{md_escape(outcome)}**"
    suffix = " (always)" if lasting else ""
    note = f" — {md_escape(entry.note)}" if entry.note else ""
    return f"* {labels.PERMISSION_ICON} Permission: {md_escape(entry.title)} → {shown}{suffix}{note}"


def permission_text(entry: PermissionEntry) -> list[str]:
    outcome, lasting = labels.permission_outcome(entry)
    note = f" — {entry.note}" if entry.note else ""
    return [f"permission> {entry.title} → {outcome}{' (always)' if lasting else ''}{note}"]


CARD = Card(PermissionEntry, permission_html, permission_markdown, permission_text)
