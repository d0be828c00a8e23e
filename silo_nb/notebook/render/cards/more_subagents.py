"""The card of the children a transcript counts without showing (``MoreSubagentsEntry``): one line saying
how many and how many updates they sent; the journal keeps them all."""

from __future__ import annotations

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.card import Card
from silo_nb.updates import MoreSubagentsEntry

__all__ = ["CARD", "more_subagents_html", "more_subagents_markdown", "more_subagents_text"]


def more_subagents_text(entry: MoreSubagentsEntry) -> list[str]:
    many = f"at least {entry.children:,}" if entry.at_least else f"{entry.children:,}"
    return [f"+ {many} more subagents ({entry.updates:,} updates) not shown; the journal keeps them"]


def more_subagents_html(entry: MoreSubagentsEntry) -> str:
    return (
        f'<div class="silo-more-subagents" style="margin:4px 0;{styles.SMALL};{styles.MUTED}">'
        f"↳ {more_subagents_text(entry)[0]}</div>"
    )


def more_subagents_markdown(entry: MoreSubagentsEntry) -> str:
    return f"_↳ {more_subagents_text(entry)[0]}_"


CARD = Card(MoreSubagentsEntry, more_subagents_html, more_subagents_markdown, more_subagents_text)
