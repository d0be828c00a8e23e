"""The card of a file the agent wrote through the client (``FileEditEntry``): its path and its diff."""

from __future__ import annotations

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.diff_view import diff_html, diff_markdown, diff_text
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_inert import md_code, md_indent
from silo_nb.notebook.render.paths import path_html, shown_path
from silo_nb.updates import (
    FileEditEntry,
)

__all__ = ["CARD", "file_edit_html", "file_edit_markdown", "file_edit_text"]

_ICON = "✎"


def _verb(entry: FileEditEntry) -> str:
    return "created" if entry.old_text is None and not entry.too_large else "wrote"


def _too_large(entry: FileEditEntry) -> str:
    old, new = entry.sizes or (0, 0)
    return f"too large to keep a diff ({old:,} → {new:,} characters)"


def file_edit_html(entry: FileEditEntry) -> str:
    head = (
        f'<div style="{styles.MUTED}">{_ICON} the agent {_verb(entry)} '
        f'<span style="{styles.MONO}">{path_html(entry.path, entry.cwd)}</span></div>'
    )
    body = (
        f'<div style="{styles.SMALL};{styles.MUTED}">{esc(_too_large(entry))}</div>'
        if entry.too_large
        else diff_html(entry.path, entry.old_text, entry.new_text or "", cwd=entry.cwd)
    )
    return (
        f'<div class="silo-file-edit" style="margin:4px 0;padding:3px 8px;'
        f"border-left:3px solid {styles.rgba(styles.BLUE, 0.6)};background:{styles.rgba(styles.GREY, 0.06)};"
        f'border-radius:0 4px 4px 0">{head}{body}</div>'
    )


def file_edit_markdown(entry: FileEditEntry) -> str:
    head = f"* {_ICON} the agent {_verb(entry)} {md_code(shown_path(entry.path, entry.cwd))}"
    if entry.too_large:
        return f"{head} · _{_too_large(entry)}_"
    diff = diff_markdown(entry.path, entry.old_text, entry.new_text or "", cwd=entry.cwd)
    return "\n".join([head, *md_indent(diff)])


def file_edit_text(entry: FileEditEntry) -> list[str]:
    head = f"file> {_verb(entry)} {shown_path(entry.path, entry.cwd)}"
    if entry.too_large:
        return [f"{head} · {_too_large(entry)}"]
    return [
        head,
        *(
            f"    {line}".rstrip()
            for line in diff_text(entry.path, entry.old_text, entry.new_text or "", cwd=entry.cwd)
        ),
    ]


CARD = Card(FileEditEntry, file_edit_html, file_edit_markdown, file_edit_text)
