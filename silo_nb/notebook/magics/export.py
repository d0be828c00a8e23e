"""``%silo export NAME PATH``: write a session's transcript as a standalone page (``render/page.py``).

- NAME is a connection of this notebook (its live journal, flushed first), else a session id of this
  workspace (a dormant session from an earlier kernel, see ``%silo agents``).
- The format follows the suffix: ``.html``/``.htm`` (a styled, self-contained page) or ``.md``/
  ``.markdown``. Anything else, an unknown NAME or an empty journal is one ``UsageError`` line.
- The file is written whole to a temporary sibling and renamed over the target, so a failed export never
  leaves half a page where an earlier one was.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from IPython.core.error import UsageError

from silo_nb.notebook.magics.args import argument, magic_arguments
from silo_nb.notebook.magics.connections import NotebookSession
from silo_nb.notebook.render.page import page_html, page_markdown
from silo_nb.sessions import (
    write_named_file,
)
from silo_nb.updates import (
    session_title,
)

__all__ = ["export_command", "write_export"]

_HTML = (".html", ".htm")
_MARKDOWN = (".md", ".markdown")


def write_export(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole (``safe_files.write_named_file``: a link at ``path`` is replaced,
    never followed; a new page is 0600, since a transcript holds your prompts; a file already there keeps
    the mode its owner gave it)."""
    write_named_file(path, text.encode("utf-8", "backslashreplace"))


@magic_arguments("silo export")
@argument("name", metavar="NAME", help="a connection, or a session id of this workspace")
@argument("path", metavar="PATH", help="where to write: .md (Markdown) or .html (a styled page)")
async def export_command(session: NotebookSession, args: argparse.Namespace) -> None:
    """Write a session's transcript as a styled HTML page or as Markdown (by the path's suffix)."""
    path = Path(args.path).expanduser()
    suffix = path.suffix.lower()
    if suffix not in _HTML + _MARKDOWN:
        raise UsageError(f"%silo export: {args.path!r} must end in .html or .md (the format to write).")
    if not path.parent.is_dir():
        raise UsageError(
            f"%silo export: No such file or directory: {str(path.parent)!r} — create the folder first."
        )
    if args.name in session.connections:
        _, handle = await session.handle(args.name)
        session_id, agent, title = handle.session_id, handle.agent_name, handle.title
    else:
        session_id, agent, title = args.name, None, None
    updates = await session.service.sessions.read_journal(session_id)
    if not updates:
        known = ", ".join(session.connections) or "none"
        raise UsageError(
            f"%silo export: no connection or session named {args.name!r} with a journal here "
            f"(connected: {known}; %silo agents lists this workspace's sessions)."
        )
    if title is None:
        title = next((t for t in map(session_title, reversed(updates)) if t), None) or f"Session {session_id}"
    meta = " · ".join(part for part in (agent, f"session {session_id}") if part)
    render = page_html if suffix in _HTML else page_markdown
    write_export(path, render(updates, title=title, meta=meta))
    print(f"wrote {sum(1 for u in updates if u.kind == 'user_message_chunk')} prompts to {path}")
