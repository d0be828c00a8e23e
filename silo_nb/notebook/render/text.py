"""The transcript as plain text (``text/plain``): what a terminal, ``nbconvert --to script`` or a log shows.

- One prefix per speaker (``you>``, ``agent>``, ``thinking>``, ``permission>``), continuation lines
  aligned under the first; tools as ``[tool id] kind · title · status`` with an indented body.
- Tool text is cut shorter than in HTML (:data:`~silo_nb.notebook.render.labels.TEXT_TOOL_LIMIT`).
"""

from __future__ import annotations

from silo_nb.notebook.render import labels
from silo_nb.notebook.transcript import (
    Entry,
    MessageEntry,
    PermissionEntry,
    PlanView,
    ToolEntry,
    TranscriptState,
)

__all__ = ["text_header", "transcript_text"]


def _prefixed(prefix: str, text: str) -> list[str]:
    lines = text.rstrip().splitlines() or [""]
    pad = " " * len(prefix)
    return [f"{prefix}{lines[0]}", *(f"{pad}{line}".rstrip() for line in lines[1:])]


def _tool_text(entry: ToolEntry) -> list[str]:
    kind = entry.kind or "other"
    lines = [f"[tool {entry.tool_call_id}] {kind} · {labels.tool_title(entry)} · {entry.status or 'pending'}"]
    body: list[str] = []
    locations = labels.locations(entry)
    if locations:
        body.append("at " + ", ".join(locations))
    for content in entry.content:
        if content.type == "diff":
            diff = labels.diff(content.old_text, content.new_text)
            if diff.truncated:
                body.append(diff.truncated)
            body.append(f"--- {'/dev/null' if content.old_text is None else content.path or 'diff'}")
            body.append(f"+++ {content.path or 'diff'}")
            body += diff.shown
            if diff.total > len(diff.shown):
                body.append(f"… {diff.total - len(diff.shown):,} more lines")
        elif content.type == "terminal":
            body.append(f"terminal {content.terminal_id or '?'}")
        elif content.type == "content" and content.content is not None and content.content.type == "text":
            body += labels.cut(content.content.text or "", labels.TEXT_TOOL_LIMIT).splitlines()
        else:
            body.append(
                labels.block_label(content.content) if content.type == "content" else f"[{content.type}]"
            )
    if not entry.content and entry.raw_output is not None:
        body.append(f"output: {labels.summary(entry.raw_output)}")
    return lines + [f"    {line}".rstrip() for line in body]


def _message_text(entry: MessageEntry) -> list[str]:
    prefix = {"user": "you> ", "agent": "agent> "}.get(entry.role, "thinking> ")
    pad = " " * len(prefix)
    attached = [f"{pad}{labels.ATTACHMENT_ICON} {labels.attachment_text(a)}" for a in entry.attachments]
    extra = attached + ([f"{pad}+ {', '.join(entry.non_text)}"] if entry.non_text else [])
    if entry.dropped:
        extra.insert(0, f"{pad}… {entry.dropped:,} more characters not kept (over the limit)")
    if not entry.text and extra:
        return [f"{prefix}{extra[0].lstrip()}", *extra[1:]]
    return _prefixed(prefix, entry.text) + extra if entry.text or extra else []


def _plan_text(entry: PlanView) -> list[str]:
    lines = ["plan:"]
    for step in entry.entries:
        notes = labels.plan_notes(step.status, step.priority)
        note = f" ({', '.join(notes)})" if notes else ""
        glyph = labels.PLAN_TEXT_GLYPHS.get(step.status or "pending", "[?]")
        lines.append(f"  {glyph} {step.content}{note}")
    return lines


def _permission_text(entry: PermissionEntry) -> list[str]:
    outcome, lasting = labels.permission_outcome(entry)
    return [f"permission> {entry.title} → {outcome}{' (always)' if lasting else ''}"]


def _entry_text(entry: Entry) -> list[str]:
    return labels.by_kind(
        entry, message=_message_text, tool=_tool_text, plan=_plan_text, permission=_permission_text
    )


def text_header(state: TranscriptState, label: str) -> str:
    """The header row as one line: ``label · status``."""
    return f"{label} · {labels.header_status(state)[0]}"


def transcript_text(
    state: TranscriptState, *, title: str | None = None, meta: str | None = None, label: str | None = None
) -> str:
    """The transcript as plain text (``text/plain``): ``you>``/``agent>`` lines, tools, plan, footer.

    The last result is kept (states are immutable): a static bundle asks for it twice when its Markdown
    falls back to the text in a fence."""
    global _last
    key = (title, meta, label)
    if _last is not None and _last[0] is state and _last[1] == key:
        return _last[2]
    lines = labels.compose(
        state,
        title=title,
        meta=meta,
        label=label,
        header=lambda name, status: f"{name} · {status}",
        heading=lambda text: f"== {text} ==",
        entry=_entry_text,
        footer=lambda pieces: "-- " + " · ".join(pieces),
    )
    text = "\n".join(lines)
    _last = (state, key, text)
    return text


_last: tuple[TranscriptState, tuple[str | None, str | None, str | None], str] | None = None
