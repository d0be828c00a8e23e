"""The transcript as GitHub-flavoured Markdown text (``text/markdown``, ``%silo export x.md``).

- No raw HTML of ours; our own inline fields (titles, plan steps, labels) are escaped, including
  JupyterLab's ``$`` math, and sit on one line. Agent text is kept as the agent wrote it.
- The Markdown stays valid whatever the agent wrote: a fence it left open (a reply cut mid-stream) is
  closed before the next part (:func:`~silo_nb.notebook.render.md_html.unclosed_fence`, from the same
  parser the HTML uses), and our own fences are longer than any backtick run they enclose.
- A ``read`` tool call's file is a fenced block tagged with the file's language.
"""

from __future__ import annotations

import re

from silo_nb.notebook.render import labels
from silo_nb.notebook.render.code import lexer_for_filename, lexer_for_language
from silo_nb.notebook.render.md_html import unclosed_fence
from silo_nb.notebook.transcript import (
    Entry,
    MessageEntry,
    PermissionEntry,
    PlanView,
    ToolEntry,
    TranscriptState,
)

__all__ = ["md_header", "transcript_markdown"]

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&#$])")


def _md_escape(text: str) -> str:
    """Inline text with Markdown (and JupyterLab math) syntax neutralized, on one line."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _md_code(text: str) -> str:
    """An inline code span that survives backticks in ``text``."""
    text = " ".join(text.split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _md_fence(text: str, info: str = "") -> list[str]:
    """``text`` in a fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    ticks = "`" * (longest + 1)
    return [ticks + info, *text.splitlines(), ticks]


def _md_balanced(text: str) -> str:
    """Markdown text with a fence it left open closed (streaming replies stop mid-block)."""
    text = text.rstrip()
    closer = unclosed_fence(text)
    return f"{text}\n{closer}" if closer else text


def _quote(lines: list[str]) -> str:
    return "\n".join(f"> {line}".rstrip() for line in lines)


def _indent(lines: list[str], prefix: str = "  ") -> list[str]:
    return [f"{prefix}{line}".rstrip() for line in lines]


def _tool_text_md(text: str, entry: ToolEntry) -> list[str]:
    text = labels.cut(text, labels.TOOL_TEXT_LIMIT)
    if entry.kind == "read":
        code, language = labels.unwrap_fence(text)
        lexer = lexer_for_filename(labels.read_file_name(entry)) or lexer_for_language(language)
        aliases = getattr(lexer, "aliases", None) or [""]
        return _md_fence(code, str(aliases[0]))
    if labels.looks_like_markdown(text):
        return ["", *_md_balanced(text).splitlines()]
    return _md_fence(text)


def _tool_md(entry: ToolEntry) -> str:
    """A ``*`` bullet (``-`` is the plan's: a new bullet char keeps the lists apart); one-line details
    are sub-bullets, diffs and output fenced blocks inside the item."""
    kind = entry.kind or "other"
    icon = labels.KIND_ICONS.get(kind, labels.TOOL_ICON)
    head = f"* {icon} **{_md_escape(kind)}** · {_md_escape(labels.tool_title(entry))}"
    head += f" · _{_md_escape(labels.status_label(entry.status or 'pending'))}_"
    locations = labels.locations(entry)
    if locations:
        head += " · " + ", ".join(_md_code(location) for location in locations)
    body: list[str] = []
    for content in entry.content:
        if content.type == "diff":
            lines = labels.diff_lines(content.old_text, content.new_text)
            path = content.path or "diff"
            header = ["--- /dev/null" if content.old_text is None else f"--- {path}", f"+++ {path}"]
            shown = list(lines[: labels.DIFF_LINE_LIMIT])
            if len(lines) > labels.DIFF_LINE_LIMIT:
                shown.append(f"… {len(lines) - labels.DIFF_LINE_LIMIT:,} more lines")
            body += _md_fence("\n".join(header + shown), "diff")
        elif content.type == "terminal":
            body.append(f"- terminal {_md_code(content.terminal_id or '?')}")
        elif content.type == "content" and content.content is not None and content.content.type == "text":
            body += _tool_text_md(content.content.text or "", entry)
        else:
            label = labels.block_label(content.content) if content.type == "content" else f"[{content.type}]"
            body.append(f"- {_md_escape(label)}")
    if not entry.content and entry.raw_output is not None:
        body.append(f"- output: {_md_code(labels.summary(entry.raw_output))}")
    return "\n".join([head, *_indent(body)])


def _plan_md(plan: PlanView) -> str:
    lines = ["**Plan**", ""]
    for step in plan.entries:
        box = "[x]" if step.status == "completed" else "[ ]"
        notes = labels.plan_notes(step.status, step.priority)
        note = f" _({_md_escape(', '.join(notes))})_" if notes else ""
        lines.append(f"- {box} {_md_escape(step.content)}{note}")
    return "\n".join(lines if plan.entries else [*lines[:1], "", "_(empty)_"])


def _permission_md(entry: PermissionEntry) -> str:
    outcome, lasting = labels.permission_outcome(entry)
    shown = f"_{_md_escape(outcome)}_" if entry.choice is None else f"**{_md_escape(outcome)}**"
    suffix = " (always)" if lasting else ""
    return f"* {labels.PERMISSION_ICON} Permission: {_md_escape(entry.title)} → {shown}{suffix}"


def _message_md(entry: MessageEntry) -> str:
    extra = [f"_+ {_md_escape(', '.join(entry.non_text))}_"] if entry.non_text else []
    if entry.role == "user":
        return _quote(["**You:**", *_md_balanced(entry.text).splitlines(), *extra])
    if entry.role == "agent":
        return "\n\n".join(part for part in (_md_balanced(entry.text), *extra) if part)
    return _quote(["_Thinking:_", *_md_balanced(entry.text).splitlines()])


def _entry_md(entry: Entry) -> str:
    return labels.by_kind(entry, message=_message_md, tool=_tool_md, plan=_plan_md, permission=_permission_md)


def md_header(state: TranscriptState, label: str) -> str:
    """The header row as one Markdown line: ``**label** · _status_``."""
    return _md_header_line(label, labels.header_status(state)[0])


def _md_header_line(label: str, status: str) -> str:
    return f"**{_md_escape(label)}** · _{_md_escape(status)}_"


def transcript_markdown(
    state: TranscriptState, *, title: str | None = None, meta: str | None = None, label: str | None = None
) -> str:
    """The transcript as GitHub-flavoured Markdown (no raw HTML of ours; fences always balanced)."""
    parts = labels.compose(
        state,
        title=title,
        meta=meta,
        label=label,
        header=_md_header_line,
        heading=lambda text: f"**{_md_escape(text)}**",
        entry=lambda entry: [md] if (md := _entry_md(entry)).strip() else [],
        footer=lambda pieces: "_" + " · ".join(map(_md_escape, pieces)) + "_",
    )
    return "\n\n".join(parts) + "\n"
