"""The card of a context compaction (``CompactionEntry``, ACP v1.25): a marker line in the turn — "context
compacted" — that tells a reader why the agent "forgot"; the summary the agent kept folds open on click."""

from __future__ import annotations

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_html import agent_markdown_html
from silo_nb.notebook.render.md_inert import md_balanced, md_escape, md_quote
from silo_nb.updates import CompactionEntry

__all__ = ["CARD", "compaction_html", "compaction_label", "compaction_markdown", "compaction_text"]

_LABELS = {
    "in_progress": "compacting context…",
    "completed": "context compacted",
    "failed": "context compaction failed",
    "cancelled": "context compaction cancelled",
}
_COLOURS = {"failed": styles.RED, "cancelled": styles.GREY, "completed": styles.BLUE}


def compaction_label(entry: CompactionEntry) -> str:
    """``context compacted``, ``compacting context…``…; another status word is named as sent."""
    label = _LABELS.get(entry.status or "in_progress", f"context compaction: {entry.status}")
    return f"{label} — {entry.error}" if entry.error else label


def _more(entry: CompactionEntry) -> str:
    return f"… {entry.dropped:,} more characters not kept (over the limit)" if entry.dropped else ""


def compaction_html(entry: CompactionEntry) -> str:
    rgb = _COLOURS.get(entry.status, styles.AMBER)
    line = f"⟲ <b>{esc(compaction_label(entry))}</b>"
    style = (
        f"margin:4px 0;padding:2px 8px;border-left:3px solid {styles.rgba(rgb, 0.7)};"
        f"background:{styles.rgba(rgb, 0.06)}"
    )
    head = f'class="silo-compaction" data-status="{esc(entry.status)}" style="{style}"'
    if not entry.summary:
        return f"<div {head}>{line}</div>"
    more = f'<div style="{styles.SMALL};{styles.MUTED}">{esc(_more(entry))}</div>' if entry.dropped else ""
    return (
        f'<details {head}><summary style="cursor:pointer">{line} '
        f'<span style="{styles.SMALL};{styles.MUTED}">summary</span></summary>'
        f'<div style="padding-left:.8em">{agent_markdown_html(entry.summary)}{more}</div></details>'
    )


def compaction_markdown(entry: CompactionEntry) -> str:
    lines = [f"⟲ **{md_escape(compaction_label(entry))}**"]
    if entry.summary:
        lines += ["", "_Summary:_", "", *md_balanced(entry.summary).splitlines()]
    if entry.dropped:
        lines += ["", f"_{md_escape(_more(entry))}_"]
    return md_quote(lines)


def compaction_text(entry: CompactionEntry) -> list[str]:
    lines = [f"compaction> {compaction_label(entry)}"]
    lines += [f"  {line}" for line in entry.summary.splitlines()]
    return [*lines, f"  {_more(entry)}"] if entry.dropped else lines


CARD = Card(CompactionEntry, compaction_html, compaction_markdown, compaction_text)
