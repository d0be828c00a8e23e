"""Paths as a transcript shows them: relative to the session's folder when inside it (the absolute path
on hover in HTML), as given otherwise (outside the folder, or when the folder is not known: a journal
written before prompt lines carried ``raw.cwd``)."""

from __future__ import annotations

import posixpath

from silo_nb.notebook.render.labels import esc

__all__ = ["path_html", "shown_path"]


def shown_path(path: str, cwd: str | None) -> str:
    """``path`` relative to ``cwd`` when it lies inside it (``notes.md``, ``src/app.py``), else unchanged."""
    if not cwd or not path.startswith("/"):
        return path
    folder = cwd.rstrip("/") or "/"
    if path == folder:
        return "."
    prefix = folder if folder.endswith("/") else folder + "/"
    if not path.startswith(prefix):
        return path
    relative = posixpath.normpath(path[len(prefix) :])
    return path if relative.startswith("..") else relative


def path_html(path: str, cwd: str | None) -> str:
    """The shown path, escaped, with the absolute one as its tooltip when they differ."""
    shown = shown_path(path, cwd)
    if shown == path:
        return esc(path)
    return f'<span title="{esc(path)}">{esc(shown)}</span>'
