"""Where a permission and a file write go in a transcript: into the tool call they belong to (issue 35).

- A permission is shown inside its tool call's card, where it was asked: the card keeps the request with
  the number of content items it showed then, and the decision replaces the request it answers. A card
  holds one permission; another one for the same call (asked again) stands alone after it, as does one
  with no card (silo_nb's own, before a write of its own).
- A file silo_nb wrote for the agent exactly as a tool call's diff proposed marks that diff "written"
  instead of adding a second card with the same diff; a write that differs keeps its own card.

Pure functions on frozen entries: the reducer (``transcript.py``) finds the card and stores the result.
"""

from __future__ import annotations

from dataclasses import replace

from silo_nb.updates.entries import FileEditEntry, PermissionEntry, ToolEntry

__all__ = ["with_permission", "written_as_proposed"]


def with_permission(tool: ToolEntry, entry: PermissionEntry, *, decided: bool) -> ToolEntry | None:
    """``tool`` holding the request or decision ``entry``; None when it stands alone instead."""
    held = tool.permission
    if not decided:
        return replace(tool, permission=entry, permission_at=len(tool.content)) if held is None else None
    answers_it = held is not None and not held.answered
    if answers_it and held is not None and entry.request_id in (None, held.request_id):
        return replace(tool, permission=entry)
    return None


def written_as_proposed(tool: ToolEntry, write: FileEditEntry) -> ToolEntry | None:
    """``tool`` with ``write``'s path marked written when one of its diffs proposed exactly that write;
    None otherwise (already marked, another file, other text, or too large to compare)."""
    if write.too_large or write.path in tool.written:
        return None
    proposed = any(
        item.type == "diff"
        and item.path == write.path
        and item.new_text == write.new_text
        and (item.old_text or None) == (write.old_text or None)
        for item in tool.content
    )
    return replace(tool, written=(*tool.written, write.path)) if proposed else None
