"""The card of a child session (``SubagentEntry``, ACP v1.25 subagents): its title, work state and folder in
a header, and its own transcript folded under it (open while the child works), drawn entry by entry by the
other cards (``Card.nested``: the renderers hand the drawn entries in, so this card needs no registry).

A child no ``subagent_update`` announced is shown all the same, named "unannounced child <id>"."""

from __future__ import annotations

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.card import Card, Nested
from silo_nb.notebook.render.html_parts import pill_html
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_inert import md_escape, md_quote
from silo_nb.updates import SubagentEntry

__all__ = ["CARD", "subagent_html", "subagent_markdown", "subagent_text"]

_STATE_COLOURS = {
    "running": styles.BLUE,
    "idle": styles.GREEN,
    "requires_action": styles.AMBER,
}
_OPEN_STATES = ("running", "requires_action", None)


def _state_word(entry: SubagentEntry) -> str:
    state = (entry.state or "no state").replace("_", " ")
    return f"{state} ({entry.stop_reason})" if entry.stop_reason and entry.state == "idle" else state


def _details(entry: SubagentEntry) -> list[str]:
    parts = []
    if entry.description:
        parts.append(entry.description)
    if entry.parent_session_id:
        parts.append(f"child of {entry.parent_session_id[:40]}")
    if entry.cwd:
        parts.append(f"in {entry.cwd}")
    parts.append(entry.session_id[:40])
    return parts


def subagent_html(entry: SubagentEntry, inner: str) -> str:
    rgb = _STATE_COLOURS.get(entry.state or "", styles.GREY)
    opened = " open" if entry.state in _OPEN_STATES else ""
    details = f' <span style="{styles.SMALL};{styles.MUTED}">{esc(" · ".join(_details(entry)))}</span>'
    body = inner or f'<div style="font-style:italic;opacity:.6">{"No messages yet."}</div>'
    return (
        f'<details class="silo-subagent" data-session-id="{esc(entry.session_id)}"{opened} '
        f'style="margin:4px 0;padding:2px 8px;border-left:3px solid {styles.rgba(rgb, 0.7)}">'
        f'<summary style="cursor:pointer">↳ <b>{esc(entry.label)}</b> {pill_html(_state_word(entry), rgb)}'
        f"{details}</summary>"
        f'<div class="silo-subagent-body" style="margin-left:8px">{body}</div></details>'
    )


def subagent_markdown(entry: SubagentEntry, inner: list[str]) -> str:
    head = f"↳ **{md_escape(entry.label)}** · _{md_escape(_state_word(entry))}_"
    more = md_escape(" · ".join(_details(entry)))
    lines = [head, "", more]
    for part in inner:
        lines += ["", *part.splitlines()]
    return md_quote(lines)


def subagent_text(entry: SubagentEntry, inner: list[str]) -> list[str]:
    head = f"subagent [{_state_word(entry)}]> {entry.label} ({' · '.join(_details(entry))})"
    return [head, *(f"    {line}".rstrip() for line in inner)]


CARD = Card(
    SubagentEntry,
    lambda entry: subagent_html(entry, ""),
    lambda entry: subagent_markdown(entry, []),
    lambda entry: subagent_text(entry, []),
    nested=Nested(lambda entry: entry.entries, subagent_html, subagent_markdown, subagent_text),
)
