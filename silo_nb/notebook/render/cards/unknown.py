"""The card of updates of a kind silo_nb does not know (``UnknownEntry``): a small grey line — "unknown
update shell_output ×3" — with their text, so what an agent sent never vanishes from the turn."""

from __future__ import annotations

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_inert import md_escape, md_fence
from silo_nb.updates import UnknownEntry

__all__ = ["CARD", "unknown_html", "unknown_label", "unknown_markdown", "unknown_text"]


def unknown_label(entry: UnknownEntry) -> str:
    times = f" ×{entry.count:,}" if entry.count > 1 else ""
    more = f" (… {entry.dropped:,} more characters)" if entry.dropped else ""
    return f"unknown update {entry.kind}{times}{more}"


def unknown_html(entry: UnknownEntry) -> str:
    text = (
        f'<pre style="margin:1px 0 0;white-space:pre-wrap;{styles.MONO};{styles.SCROLL_BOX}">'
        f"{esc(entry.text)}</pre>"
        if entry.text
        else ""
    )
    return (
        f'<div class="silo-unknown" style="margin:2px 0;{styles.SMALL};{styles.MUTED}">'
        f"? {esc(unknown_label(entry))}{text}</div>"
    )


def unknown_markdown(entry: UnknownEntry) -> str:
    label = f"_? {md_escape(unknown_label(entry))}_"
    return "\n".join([label, "", *md_fence(entry.text)]) if entry.text else label


def unknown_text(entry: UnknownEntry) -> list[str]:
    return [f"? {unknown_label(entry)}", *(f"  {line}" for line in entry.text.splitlines())]


CARD = Card(UnknownEntry, unknown_html, unknown_markdown, unknown_text)
