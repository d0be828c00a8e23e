"""A journal line's ``raw`` as the transcript entry it shows (the reducer's pure constructors, one per
shown kind that comes from silo_nb's own lines: permissions, questions, file writes, kernel tools)."""

from __future__ import annotations

import re
from typing import Any

from silo_nb.updates import (
    permission_option_fields,
)
from silo_nb.updates.entries import FileEditEntry, KernelToolEntry, PermissionEntry, QuestionEntry

__all__ = [
    "file_edit_entry",
    "is_png_base64",
    "kernel_tool_entry",
    "permission_entry",
    "question_entry",
    "recorded_call",
]

_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_PNG_BASE64 = "iVBORw0KGgo"  # the PNG signature, in base64


# The options an entry keeps: a card shows what was chosen, never the list (a request's buttons are its
# row's, from the request itself), so 10,000 options need not be read again for each line shown.
ENTRY_OPTIONS = 64


def permission_entry(raw: dict[str, Any], *, decided: bool) -> PermissionEntry:
    """A ``permission_request`` (or, ``decided``, ``permission_decision``) line's entry. It keeps the
    first :data:`ENTRY_OPTIONS` options, and the chosen one wherever it is (a decision line holds only
    that one; older journals' decision lines hold them all)."""
    request_id = raw.get("requestId")
    choice = raw.get("optionId") if decided else None
    note = raw.get("note") if decided else None
    options = raw.get("options")
    if isinstance(options, list) and len(options) > ENTRY_OPTIONS:
        rest = options[ENTRY_OPTIONS:] if choice else []
        chosen = [o for o in rest if isinstance(o, dict) and o.get("optionId") == choice]
        options = options[:ENTRY_OPTIONS] + chosen
    return PermissionEntry(
        tool_call_id=str(raw.get("toolCallId") or ""),
        title=str(raw.get("title") or ""),
        options=permission_option_fields(options),
        choice=choice if isinstance(choice, str) else None,
        answered=decided,
        request_id=request_id if isinstance(request_id, str) else None,
        note=note[:500] if isinstance(note, str) else None,
    )


def file_edit_entry(raw: dict[str, Any]) -> FileEditEntry:
    """A ``file_write`` line's entry."""
    sizes = raw.get("sizes")
    old, new = raw.get("oldText"), raw.get("newText")
    return FileEditEntry(
        path=str(raw.get("path") or ""),
        old_text=old if isinstance(old, str) else None,
        new_text=new if isinstance(new, str) else None,
        too_large=raw.get("tooLarge") is True,
        sizes=(int(sizes[0]), int(sizes[1]))
        if isinstance(sizes, list) and len(sizes) == 2 and all(type(s) is int for s in sizes)
        else None,
    )


def question_entry(raw: dict[str, Any], before: QuestionEntry | None) -> QuestionEntry:
    """A question's entry from its journal line (``before``: what its request line said)."""
    fields = raw.get("fields")
    if before is not None and not isinstance(fields, list):
        kept_fields, count = before.fields, before.field_count
    else:
        kept_fields = tuple(
            (
                str(f.get("name", "")),
                str(f.get("title", "")),
                str(f.get("type", "")),
                f.get("required") is True,
            )
            for f in (fields if isinstance(fields, list) else [])
            if isinstance(f, dict)
        )
        declared = raw.get("fieldCount")
        count = declared if type(declared) is int else len(kept_fields)
    action, content, by = raw.get("action"), raw.get("content"), raw.get("by")
    message, url = raw.get("message"), raw.get("url")
    return QuestionEntry(
        request_id=str(raw.get("requestId")),
        mode=str(raw.get("mode") or (before.mode if before else "form")),
        message=message if isinstance(message, str) else (before.message if before else ""),
        url=url if isinstance(url, str) else (before.url if before else None),
        fields=kept_fields,
        field_count=count,
        action=action if action in ("accept", "decline", "cancel") else None,
        content=tuple(content.items()) if isinstance(content, dict) else (),
        by=by if isinstance(by, str) else None,
        completed=raw.get("completed") is True,
    )


def is_png_base64(value: Any) -> bool:
    """Whether ``value`` is a base64 PNG (what a kernel tool's line keeps of a figure), and nothing else."""
    return isinstance(value, str) and value.startswith(_PNG_BASE64) and _BASE64.fullmatch(value) is not None


def kernel_tool_entry(raw: dict[str, Any]) -> KernelToolEntry:
    """A ``kernel_tool`` line's entry (its images only when they are base64 PNGs)."""
    arguments, images, left_out = raw.get("arguments"), raw.get("images"), raw.get("imagesLeftOut")
    output = raw.get("output")
    return KernelToolEntry(
        call_id=str(raw.get("callId") or ""),
        tool=str(raw.get("tool") or "tool"),
        status=str(raw.get("status") or "running"),
        arguments=tuple(arguments.items()) if isinstance(arguments, dict) else (),
        output=output if isinstance(output, str) else "",
        images=tuple(image for image in images if is_png_base64(image)) if isinstance(images, list) else (),
        images_left_out=left_out if type(left_out) is int else 0,
        cell_id=cell_id if isinstance(cell_id := raw.get("cellId"), str) else None,
        undo=tuple(undo.items()) if isinstance(undo := raw.get("undo"), dict) else None,
        cell_diff=(old, new)
        if isinstance(old := raw.get("oldSource"), str) and isinstance(new := raw.get("newSource"), str)
        else None,
    )


def recorded_call(raw: dict[str, Any]) -> bool:
    """A replayed recording's tool call (``_meta.silo_nb.recorded``, set by silo_nb's replay agent)."""
    meta = raw.get("_meta")
    if not isinstance(meta, dict):
        return False
    ours = meta.get("silo_nb")
    return isinstance(ours, dict) and ours.get("recorded") is True
