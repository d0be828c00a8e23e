"""``%silo export NAME PATH``: write a session's transcript as a standalone page (``render/page.py``);
``%silo export NAME --atif [--out PATH]``: its ATIF trajectory (``experiments/atif.py``) as JSON.

- NAME is a connection of this notebook (its live journal, flushed first), else a session id of this
  workspace (a dormant session from an earlier kernel, see ``%silo agents``).
- The format follows the suffix: ``.html``/``.htm`` (a styled, self-contained page) or ``.md``/
  ``.markdown``. Anything else, an unknown NAME or an empty journal is one ``UsageError`` line.
- ``--atif``: PATH (or ``--out``) is a ``.json`` file or a folder (then ``trajectory.json`` in it); none
  given: ``<session id>.trajectory.json`` here.
- The file is written whole to a temporary sibling and renamed over the target, so a failed export never
  leaves half a page where an earlier one was.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError

from silo_nb.model import AgentSessionUpdate
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
@argument("path", metavar="PATH", nargs="?", help="where to write: .md (Markdown) or .html (a styled page)")
@argument("--atif", action="store_true", help="write the session's ATIF trajectory (JSON) instead")
@argument("--out", metavar="PATH", help="with --atif: the .json file or folder to write to")
async def export_command(session: NotebookSession, args: argparse.Namespace) -> None:
    """Write a session's transcript as a styled HTML page or as Markdown (by the path's suffix), or with
    ``--atif`` its trajectory in the ATIF format."""
    if args.atif:
        await _export_atif(session, args)
        return
    if args.path is None or args.out is not None:
        raise UsageError("%silo export: give NAME PATH (.html or .md), or NAME --atif [--out PATH].")
    path = Path(args.path).expanduser()
    suffix = path.suffix.lower()
    if suffix not in _HTML + _MARKDOWN:
        raise UsageError(f"%silo export: {args.path!r} must end in .html or .md (the format to write).")
    if not path.parent.is_dir():
        raise UsageError(
            f"%silo export: No such file or directory: {str(path.parent)!r} — create the folder first."
        )
    session_id, agent, title, _, updates = await _journal_of(session, args.name)
    if title is None:
        title = next((t for t in map(session_title, reversed(updates)) if t), None) or f"Session {session_id}"
    meta = " · ".join(part for part in (agent, f"session {session_id}") if part)
    render = page_html if suffix in _HTML else page_markdown
    write_export(path, render(updates, title=title, meta=meta))
    print(f"wrote {sum(1 for u in updates if u.kind == 'user_message_chunk')} prompts to {path}")


async def _journal_of(
    session: NotebookSession, name: str
) -> tuple[str, str | None, str | None, dict[str, Any] | None, list[AgentSessionUpdate]]:
    """NAME's session id, agent, title, ``agentInfo`` and journal (a connection's flushed first)."""
    info: dict[str, Any] | None = None
    if name in session.connections:
        _, handle = await session.handle(name)
        session_id, agent, title = handle.session_id, handle.agent_name, handle.title
        raw_info = handle.init_result.get("agentInfo")
        info = dict(raw_info) if isinstance(raw_info, Mapping) else None
    else:
        session_id, agent, title = name, None, None
    updates = await session.service.sessions.read_journal(session_id)
    if not updates:
        known = ", ".join(session.connections) or "none"
        raise UsageError(
            f"%silo export: no connection or session named {name!r} with a journal here "
            f"(connected: {known}; %silo agents lists this workspace's sessions)."
        )
    return session_id, agent, title, info, updates


async def _export_atif(session: NotebookSession, args: argparse.Namespace) -> None:
    from silo_nb.experiments import trajectory, write_trajectory  # the experiments layer, on first use

    if args.path is not None and args.out is not None:
        raise UsageError("%silo export: give the path once — NAME --atif --out PATH.")
    session_id, _, _, info, updates = await _journal_of(session, args.name)
    given = args.out if args.out is not None else args.path
    path = Path(given).expanduser() if given is not None else Path(f"{session_id}.trajectory.json")
    if path.is_dir():
        path = path / "trajectory.json"
    if not path.parent.is_dir():
        raise UsageError(
            f"%silo export: No such file or directory: {str(path.parent)!r} — create the folder first."
        )
    try:
        document = trajectory(updates, session_id=session_id, agent_info=info)
    except ValueError as exc:
        raise UsageError(f"%silo export: {exc}") from None
    write_trajectory(path, document)
    print(f"wrote {len(document['steps'])} steps ({document['schema_version']}) to {path}")
