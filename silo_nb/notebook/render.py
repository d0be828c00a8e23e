"""Static rendering of a transcript: HTML, Markdown and plain text, as pure functions of the state.

- One renderer for every place a transcript shows: the live turn widget (same HTML, re-rendered on each
  throttled update), the static bundle that replaces the widget when a turn ends, ``%silo export`` and
  the repaint of restored cells. Nothing here reads clocks, files or globals.
- HTML is one ``<div class="silo-transcript">`` with inline styles only: no ``<style>``/``<script>``
  (GitHub and nbconvert drop them). Neutral greys and tinted backgrounds with transparency and
  ``inherit`` text colour read well in JupyterLab's light and dark themes; without styles (GitHub) the
  plain structure (``<details>``, ``<b>``, ``<pre>``) still reads.
- Every string from the agent or the user is escaped; agent Markdown goes through
  :func:`~silo_nb.notebook.markdown.markdown_to_html`, which escapes first.
- The Markdown stays valid whatever the agent wrote: a fence the agent left open is closed before the
  next part, and our own fences are longer than any backtick run they enclose.
- Tool output can be huge: text blocks are cut at :data:`TOOL_TEXT_LIMIT` characters and diffs at
  :data:`DIFF_LINE_LIMIT` lines, so saved notebooks stay small. Agent replies are never cut.
"""

from __future__ import annotations

import difflib
import html
import json
import math
import re
from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from silo_nb.notebook.markdown import markdown_to_html, unclosed_fence
from silo_nb.notebook.transcript import (
    Entry,
    MessageEntry,
    PermissionEntry,
    PlanView,
    ToolEntry,
    TranscriptState,
)
from silo_nb.sessions.models import AgentContentBlock, AgentSessionUsage, AgentToolCallContent

__all__ = [
    "DIFF_LINE_LIMIT",
    "TOOL_TEXT_LIMIT",
    "static_bundle",
    "status_badge_html",
    "transcript_html",
    "transcript_markdown",
    "transcript_text",
]

TOOL_TEXT_LIMIT = 20_000  # characters of one tool text block kept in the HTML and Markdown
DIFF_LINE_LIMIT = 400  # diff lines kept per diff
_TEXT_TOOL_LIMIT = 2_000  # characters of one tool text block kept in the plain text
_COLLAPSE_LINES = 12  # tool text longer than this is collapsed in a <details>
_COLLAPSE_CHARS = 1_500
_OPEN_DIFF_LINES = 40  # diffs up to this long start expanded
_DIFF_MAX_INPUT_LINES = 20_000  # beyond this, no line matching: old lines removed, new lines added

# -- colours and labels ------------------------------------------------------------------------------

_GREEN, _BLUE, _AMBER, _RED, _GREY = "46,160,67", "33,150,243", "255,152,0", "244,67,54", "127,127,127"
_MUTED = "opacity:.7"
_MONO = "font-family:var(--jp-code-font-family,monospace);font-size:.85em"

# Plain symbols, not emoji: every text font has them (screenshots showed emoji as empty boxes).
_KIND_ICONS = {
    "read": "≡",
    "edit": "✎",
    "delete": "✗",
    "move": "⇄",
    "search": "⌕",
    "execute": "▸",
    "think": "…",
    "fetch": "⇣",
    "switch_mode": "⇆",
}
_TOOL_ICON = "⚙"
_PERMISSION_ICON = "⚑"
_TOOL_STATUS_COLOURS = {"pending": _GREY, "in_progress": _BLUE, "completed": _GREEN, "failed": _RED}
_TURN_STATUS = {
    "running": ("● running", _BLUE),
    "finished": ("✓ finished", _GREEN),
    "cancelled": ("■ cancelled", _AMBER),
    "failed": ("✗ failed", _RED),
    "restored": ("↺ restored", _GREY),
}
_ACTIVITY_COLOURS = {
    "idle": _GREEN,
    "working": _BLUE,
    "blocked": _AMBER,
    "error": _RED,
    "dead": _GREY,
    "none": _GREY,
}
_PLAN_GLYPHS = {"pending": "☐", "in_progress": "◐", "completed": "☑"}
_PLAN_TEXT_GLYPHS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _rgba(rgb: str, alpha: float) -> str:
    return f"rgba({rgb},{alpha})"


def _pill(label: str, rgb: str) -> str:
    style = (
        "display:inline-block;padding:0 .55em;border-radius:.8em;font-size:.85em;line-height:1.5;"
        f"white-space:nowrap;color:inherit;background:{_rgba(rgb, 0.22)};border:1px solid {_rgba(rgb, 0.45)}"
    )
    return f'<span style="{style}">{_esc(label)}</span>'


def _status_label(status: str) -> str:
    return status.replace("_", " ") if status in _TOOL_STATUS_COLOURS else status


# -- shared pieces (all three formats) ----------------------------------------------------------------


def _title(state: TranscriptState, title: str | None) -> str | None:
    chosen = title if title is not None else state.title
    return chosen.strip() or None if chosen else None


def _number(value: float) -> str:
    return f"{round(value):,}" if math.isfinite(value) else str(value)


def _money(amount: float, currency: str) -> str:
    if not math.isfinite(amount):
        text = str(amount)
    else:
        text = f"{amount:,.4f}"
        while text.endswith("0") and len(text) - text.index(".") > 3:
            text = text[:-1]
    return f"${text}" if currency.upper() == "USD" else f"{text} {currency}"


def _usage_text(usage: AgentSessionUsage | None) -> str | None:
    if usage is None:
        return None
    text = f"{_number(usage.used)} / {_number(usage.size)} tokens"
    if usage.size > 0 and math.isfinite(usage.used) and math.isfinite(usage.size):
        text += f" ({round(usage.used / usage.size * 100)}%)"
    if usage.cost is not None:
        text += f" · {_money(usage.cost.amount, usage.cost.currency)}"
    return text


def _footer_parts(state: TranscriptState, meta: str | None) -> list[str]:
    """Plain-text pieces after the status label: stop reason, error, usage, hidden updates, meta."""
    parts: list[str] = []
    if state.stop_reason and state.stop_reason != "end_turn":
        parts.append(f"stop: {state.stop_reason}")
    if state.error:
        parts.append(f"error: {state.error}")
    usage = _usage_text(state.usage)
    if usage:
        parts.append(usage)
    if state.other:
        counts = Counter(state.other)
        kinds = ", ".join(f"{kind} ×{n}" if n > 1 else kind for kind, n in counts.items())
        parts.append(f"{len(state.other)} update{'s' if len(state.other) != 1 else ''} not shown ({kinds})")
    if meta:
        parts.append(meta)
    return parts


def _turn_status(state: TranscriptState) -> tuple[str, str]:
    return _TURN_STATUS.get(state.status, (str(state.status), _GREY))


@lru_cache(maxsize=64)  # the live widget re-renders every tool call on each update
def _diff_lines(old: str | None, new: str | None) -> tuple[str, ...]:
    """Unified diff lines (``@@`` hunks, ``-``/``+``/`` `` lines); ``old`` None means a new file."""
    old_lines = old.splitlines() if old is not None else []
    new_lines = new.splitlines() if new is not None else []
    if old is None or new is None or len(old_lines) + len(new_lines) > _DIFF_MAX_INPUT_LINES:
        return tuple(["-" + line for line in old_lines] + ["+" + line for line in new_lines])
    diff = difflib.unified_diff(old_lines, new_lines, lineterm="", n=3)
    return tuple(line for index, line in enumerate(diff) if index >= 2)  # skip the ---/+++ header


def _diff_counts(lines: tuple[str, ...]) -> tuple[int, int]:
    added = sum(1 for line in lines if line.startswith("+"))
    removed = sum(1 for line in lines if line.startswith("-"))
    return added, removed


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit:,} more characters)"


def _looks_like_markdown(text: str) -> bool:
    """Tool text with fences or headings is Markdown (agents wrap output in fences); else raw output."""
    return bool(re.search(r"^ {0,3}(```|~~~|#{1,6} )", text, re.MULTILINE))


def _block_label(block: AgentContentBlock | None) -> str:
    if block is None:
        return "[empty content]"
    detail = " ".join(part for part in (block.name, block.mime_type, block.uri) if part)
    return f"[{block.type}{' ' + detail if detail else ''}]"


def _summary(value: Any, limit: int = 300) -> str:
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
        except (ValueError, RecursionError):  # a circular or absurdly deep structure
            text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _locations(entry: ToolEntry) -> list[str]:
    return [f"{loc.path}:{loc.line}" if loc.line else loc.path for loc in entry.locations]


def _tool_title(entry: ToolEntry) -> str:
    return entry.title or entry.kind or "tool call"


def _permission_outcome(entry: PermissionEntry) -> tuple[str, bool]:
    """(what was chosen, whether it lasts): ``waiting…``, ``cancelled`` or the option's name."""
    if not entry.answered:
        return "waiting…", False
    if entry.choice is None:
        return "cancelled", False
    kind = next((k for option_id, _, k in entry.options if option_id == entry.choice), "")
    return entry.choice_name or entry.choice, kind.endswith("_always")


def _plan_notes(status: str | None, priority: str | None) -> list[str]:
    notes = []
    if status and status not in ("pending", "completed"):
        notes.append(_status_label(status))
    if priority:
        notes.append(priority)
    return notes


# -- HTML ---------------------------------------------------------------------------------------------


def _user_html(entry: MessageEntry) -> str:
    return (
        '<div class="silo-user" style="margin:4px 0;padding:4px 8px;border-radius:4px;'
        f'background:{_rgba(_GREY, 0.12)}">'
        f'<div style="font-size:.8em;font-weight:600;{_MUTED}">You</div>'
        f'<div style="white-space:pre-wrap">{_esc(entry.text)}</div>'
        f"{_non_text_html(entry)}</div>"
    )


def _agent_html(entry: MessageEntry) -> str:
    return (
        f'<div class="silo-agent" style="margin:4px 0">{markdown_to_html(entry.text, styled=True)}'
        f"{_non_text_html(entry)}</div>"
    )


def _thought_html(entry: MessageEntry) -> str:
    return (
        '<details class="silo-thought" style="margin:4px 0;opacity:.65">'
        '<summary style="cursor:pointer;font-style:italic">Thinking</summary>'
        f'<div style="padding-left:.8em;border-left:2px solid {_rgba(_GREY, 0.35)}">'
        f"{markdown_to_html(entry.text, styled=True)}</div></details>"
    )


def _non_text_html(entry: MessageEntry) -> str:
    if not entry.non_text:
        return ""
    return f'<div style="font-size:.85em;{_MUTED}">+ {_esc(", ".join(entry.non_text))}</div>'


def _tool_text_html(text: str) -> str:
    text = _cut(text, TOOL_TEXT_LIMIT)
    if _looks_like_markdown(text):
        body = markdown_to_html(text, styled=True)
    else:
        body = (
            f'<pre style="white-space:pre-wrap;margin:.3em 0;padding:4px 6px;border-radius:4px;'
            f'background:{_rgba(_GREY, 0.1)};{_MONO}">{_esc(text)}</pre>'
        )
    lines = text.count("\n") + 1
    if lines <= _COLLAPSE_LINES and len(text) <= _COLLAPSE_CHARS:
        return f"<div>{body}</div>"
    return (
        f'<details style="margin:2px 0"><summary style="cursor:pointer;font-size:.85em;{_MUTED}">'
        f"Output ({lines:,} lines)</summary>{body}</details>"
    )


def _diff_html(content: AgentToolCallContent) -> str:
    lines = _diff_lines(content.old_text, content.new_text)
    added, removed = _diff_counts(lines)
    label = _esc(content.path or "diff")
    new_file = " · new file" if content.old_text is None else ""
    rows = []
    for line in lines[:DIFF_LINE_LIMIT]:
        if line.startswith("+"):
            background = f"background:{_rgba(_GREEN, 0.18)}"
        elif line.startswith("-"):
            background = f"background:{_rgba(_RED, 0.18)}"
        elif line.startswith("@@"):
            background = _MUTED
        else:
            background = ""
        rows.append(f'<div style="white-space:pre;padding:0 6px;{background}">{_esc(line) or " "}</div>')
    if len(lines) > DIFF_LINE_LIMIT:
        rows.append(
            f'<div style="padding:0 6px;{_MUTED}">… {len(lines) - DIFF_LINE_LIMIT:,} more lines</div>'
        )
    if not lines:
        rows.append(f'<div style="padding:0 6px;{_MUTED}">(no changes)</div>')
    summary = (
        f'<summary style="cursor:pointer;{_MONO}">{label} '
        f'<span style="color:rgb({_GREEN})">+{added}</span> '
        f'<span style="color:rgb({_RED})">−{removed}</span>{new_file}</summary>'
    )
    box = (
        f'<div style="{_MONO};line-height:1.4;overflow-x:auto;margin-top:2px;padding:2px 0;'
        f'border:1px solid {_rgba(_GREY, 0.3)};border-radius:4px">{"".join(rows)}</div>'
    )
    is_open = " open" if len(lines) <= _OPEN_DIFF_LINES else ""
    return f'<details class="silo-diff"{is_open} style="margin:3px 0">{summary}{box}</details>'


def _tool_content_html(content: AgentToolCallContent) -> str:
    if content.type == "diff":
        return _diff_html(content)
    if content.type == "terminal":
        return f'<div style="{_MONO};{_MUTED}">⌨ terminal {_esc(content.terminal_id or "?")}</div>'
    if content.type == "content" and content.content is not None and content.content.type == "text":
        return _tool_text_html(content.content.text or "")
    label = _block_label(content.content) if content.type == "content" else f"[{content.type}]"
    return f'<div style="font-size:.85em;{_MUTED}">{_esc(label)}</div>'


def _tool_html(entry: ToolEntry) -> str:
    status = entry.status or "pending"
    rgb = _TOOL_STATUS_COLOURS.get(status, _GREY)
    kind = entry.kind or "other"
    head = (
        '<div style="display:flex;flex-wrap:wrap;gap:.2em .6em;align-items:baseline">'
        f'<span style="{_MUTED};white-space:nowrap">{_KIND_ICONS.get(kind, _TOOL_ICON)} {_esc(kind)}</span>'
        f'<span style="font-weight:600">{_esc(_tool_title(entry))}</span>'
        f"{_pill(_status_label(status), rgb)}</div>"
    )
    parts = [head]
    locations = _locations(entry)
    if locations:
        parts.append(f'<div style="{_MONO};{_MUTED}">{_esc(" · ".join(locations))}</div>')
    parts.extend(_tool_content_html(content) for content in entry.content)
    if not entry.content and entry.raw_output is not None:
        summary = _esc(_summary(entry.raw_output))
        parts.append(f'<div style="{_MONO};{_MUTED};white-space:pre-wrap">output: {summary}</div>')
    return (
        f'<div class="silo-tool" title="{_esc(entry.tool_call_id)}" style="margin:4px 0;padding:3px 8px;'
        f"border-left:3px solid {_rgba(rgb, 0.7)};background:{_rgba(_GREY, 0.06)};"
        f'border-radius:0 4px 4px 0">{"".join(parts)}</div>'
    )


def _plan_html(plan: PlanView) -> str:
    rows = []
    for step in plan.entries:
        status = step.status or "pending"
        glyph = _PLAN_GLYPHS.get(status, "•")
        style = {"completed": ' style="opacity:.65"', "in_progress": ' style="font-weight:600"'}.get(
            status, ""
        )
        notes = _plan_notes(step.status, step.priority)
        note = f' <span style="font-size:.8em;opacity:.55">{_esc(" · ".join(notes))}</span>' if notes else ""
        rows.append(f"<div{style}>{glyph} {_esc(step.content)}{note}</div>")
    if not rows:
        rows.append('<div style="opacity:.6">(empty)</div>')
    return (
        f'<div class="silo-plan" style="margin:4px 0;padding:4px 8px;border:1px solid {_rgba(_GREY, 0.3)};'
        f'border-radius:4px"><div style="font-size:.8em;font-weight:600;{_MUTED}">Plan</div>'
        f"{''.join(rows)}</div>"
    )


def _permission_html(entry: PermissionEntry) -> str:
    outcome, lasting = _permission_outcome(entry)
    rgb = _AMBER if not entry.answered else _GREY if entry.choice is None else _GREEN
    shown = f"<i>{_esc(outcome)}</i>" if entry.choice is None else f"<b>{_esc(outcome)}</b>"
    always = f' <span style="{_MUTED}">(always)</span>' if lasting else ""
    return (
        f'<div class="silo-permission" style="margin:4px 0;padding:3px 8px;'
        f'border-left:3px solid {_rgba(rgb, 0.7)}">'
        f"{_PERMISSION_ICON} Permission: {_esc(entry.title)} → {shown}{always}</div>"
    )


def _entry_html(entry: Entry) -> str:
    if isinstance(entry, MessageEntry):
        if not entry.text and not entry.non_text:
            return ""
        render = {"user": _user_html, "agent": _agent_html}.get(entry.role, _thought_html)
        return render(entry)
    if isinstance(entry, ToolEntry):
        return _tool_html(entry)
    if isinstance(entry, PlanView):
        return _plan_html(entry)
    if isinstance(entry, PermissionEntry):
        return _permission_html(entry)
    return ""


def _footer_html(state: TranscriptState, meta: str | None) -> str:
    label, rgb = _turn_status(state)
    parts = [_pill(label, rgb)]
    parts += [f"<span>{_esc(part)}</span>" for part in _footer_parts(state, meta)]
    return (
        '<div class="silo-footer" style="display:flex;flex-wrap:wrap;gap:.2em .9em;align-items:baseline;'
        f'margin-top:6px;padding-top:4px;border-top:1px solid {_rgba(_GREY, 0.25)};font-size:.85em">'
        f"{''.join(parts)}</div>"
    )


def transcript_html(state: TranscriptState, *, title: str | None = None, meta: str | None = None) -> str:
    """The transcript as one self-contained ``<div class="silo-transcript">`` (inline styles only)."""
    parts: list[str] = []
    heading = _title(state, title)
    if heading:
        parts.append(
            f'<div class="silo-title" style="font-weight:600;margin-bottom:4px">{_esc(heading)}</div>'
        )
    body = [html_part for html_part in map(_entry_html, state.entries) if html_part]
    if not body:
        waiting = "Waiting for the agent…" if state.status == "running" else "No messages."
        body.append(f'<div style="font-style:italic;opacity:.6">{waiting}</div>')
    parts.extend(body)
    parts.append(_footer_html(state, meta))
    return (
        '<div class="silo-transcript" style="color:inherit;line-height:1.45;overflow-wrap:break-word;'
        f'padding:6px 10px;border:1px solid {_rgba(_GREY, 0.25)};border-radius:6px">{"".join(parts)}</div>'
    )


# -- Markdown -----------------------------------------------------------------------------------------

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


def _tool_text_md(text: str) -> list[str]:
    text = _cut(text, TOOL_TEXT_LIMIT)
    if _looks_like_markdown(text):
        return ["", *_md_balanced(text).splitlines()]
    return _md_fence(text)


def _tool_md(entry: ToolEntry) -> str:
    """A ``*`` bullet (``-`` is the plan's: a new bullet char keeps the lists apart); one-line details
    are sub-bullets, diffs and output fenced blocks inside the item."""
    kind = entry.kind or "other"
    head = f"* {_KIND_ICONS.get(kind, _TOOL_ICON)} **{_md_escape(kind)}** · {_md_escape(_tool_title(entry))}"
    head += f" · _{_md_escape(_status_label(entry.status or 'pending'))}_"
    locations = _locations(entry)
    if locations:
        head += " · " + ", ".join(_md_code(location) for location in locations)
    body: list[str] = []
    for content in entry.content:
        if content.type == "diff":
            lines = _diff_lines(content.old_text, content.new_text)
            path = content.path or "diff"
            header = ["--- /dev/null" if content.old_text is None else f"--- {path}", f"+++ {path}"]
            shown = list(lines[:DIFF_LINE_LIMIT])
            if len(lines) > DIFF_LINE_LIMIT:
                shown.append(f"… {len(lines) - DIFF_LINE_LIMIT:,} more lines")
            body += _md_fence("\n".join(header + shown), "diff")
        elif content.type == "terminal":
            body.append(f"- terminal {_md_code(content.terminal_id or '?')}")
        elif content.type == "content" and content.content is not None and content.content.type == "text":
            body += _tool_text_md(content.content.text or "")
        else:
            label = _block_label(content.content) if content.type == "content" else f"[{content.type}]"
            body.append(f"- {_md_escape(label)}")
    if not entry.content and entry.raw_output is not None:
        body.append(f"- output: {_md_code(_summary(entry.raw_output))}")
    return "\n".join([head, *_indent(body)])


def _plan_md(plan: PlanView) -> str:
    lines = ["**Plan**", ""]
    for step in plan.entries:
        box = "[x]" if step.status == "completed" else "[ ]"
        notes = _plan_notes(step.status, step.priority)
        note = f" _({_md_escape(', '.join(notes))})_" if notes else ""
        lines.append(f"- {box} {_md_escape(step.content)}{note}")
    return "\n".join(lines if plan.entries else [*lines[:1], "", "_(empty)_"])


def _permission_md(entry: PermissionEntry) -> str:
    outcome, lasting = _permission_outcome(entry)
    shown = f"_{_md_escape(outcome)}_" if entry.choice is None else f"**{_md_escape(outcome)}**"
    suffix = " (always)" if lasting else ""
    return f"* {_PERMISSION_ICON} Permission: {_md_escape(entry.title)} → {shown}{suffix}"


def _entry_md(entry: Entry) -> str:
    if isinstance(entry, MessageEntry):
        extra = [f"_+ {_md_escape(', '.join(entry.non_text))}_"] if entry.non_text else []
        if entry.role == "user":
            return _quote(["**You:**", *_md_balanced(entry.text).splitlines(), *extra])
        if entry.role == "agent":
            return "\n\n".join(part for part in (_md_balanced(entry.text), *extra) if part)
        return _quote(["_Thinking:_", *_md_balanced(entry.text).splitlines()])
    if isinstance(entry, ToolEntry):
        return _tool_md(entry)
    if isinstance(entry, PlanView):
        return _plan_md(entry)
    if isinstance(entry, PermissionEntry):
        return _permission_md(entry)
    return ""


def transcript_markdown(state: TranscriptState, *, title: str | None = None, meta: str | None = None) -> str:
    """The transcript as GitHub-flavoured Markdown (no raw HTML of ours; fences always balanced)."""
    parts: list[str] = []
    heading = _title(state, title)
    if heading:
        parts.append(f"**{_md_escape(heading)}**")
    parts += [md for md in map(_entry_md, state.entries) if md.strip()]
    label, _ = _turn_status(state)
    parts.append("_" + " · ".join([_md_escape(label), *map(_md_escape, _footer_parts(state, meta))]) + "_")
    return "\n\n".join(parts) + "\n"


# -- plain text ---------------------------------------------------------------------------------------


def _prefixed(prefix: str, text: str) -> list[str]:
    lines = text.rstrip().splitlines() or [""]
    pad = " " * len(prefix)
    return [f"{prefix}{lines[0]}", *(f"{pad}{line}".rstrip() for line in lines[1:])]


def _tool_text(entry: ToolEntry) -> list[str]:
    kind = entry.kind or "other"
    lines = [f"[tool {entry.tool_call_id}] {kind} · {_tool_title(entry)} · {entry.status or 'pending'}"]
    body: list[str] = []
    locations = _locations(entry)
    if locations:
        body.append("at " + ", ".join(locations))
    for content in entry.content:
        if content.type == "diff":
            diff = _diff_lines(content.old_text, content.new_text)
            body.append(f"--- {'/dev/null' if content.old_text is None else content.path or 'diff'}")
            body.append(f"+++ {content.path or 'diff'}")
            body += diff[:DIFF_LINE_LIMIT]
            if len(diff) > DIFF_LINE_LIMIT:
                body.append(f"… {len(diff) - DIFF_LINE_LIMIT:,} more lines")
        elif content.type == "terminal":
            body.append(f"terminal {content.terminal_id or '?'}")
        elif content.type == "content" and content.content is not None and content.content.type == "text":
            body += _cut(content.content.text or "", _TEXT_TOOL_LIMIT).splitlines()
        else:
            body.append(_block_label(content.content) if content.type == "content" else f"[{content.type}]")
    if not entry.content and entry.raw_output is not None:
        body.append(f"output: {_summary(entry.raw_output)}")
    return lines + _indent(body, "    ")


def _entry_text(entry: Entry) -> list[str]:
    if isinstance(entry, MessageEntry):
        prefix = {"user": "you> ", "agent": "agent> "}.get(entry.role, "thinking> ")
        extra = [f"{' ' * len(prefix)}+ {', '.join(entry.non_text)}"] if entry.non_text else []
        return _prefixed(prefix, entry.text) + extra if entry.text or entry.non_text else []
    if isinstance(entry, ToolEntry):
        return _tool_text(entry)
    if isinstance(entry, PlanView):
        lines = ["plan:"]
        for step in entry.entries:
            notes = _plan_notes(step.status, step.priority)
            note = f" ({', '.join(notes)})" if notes else ""
            lines.append(f"  {_PLAN_TEXT_GLYPHS.get(step.status or 'pending', '[?]')} {step.content}{note}")
        return lines
    if isinstance(entry, PermissionEntry):
        outcome, lasting = _permission_outcome(entry)
        return [f"permission> {entry.title} → {outcome}{' (always)' if lasting else ''}"]
    return []


def transcript_text(state: TranscriptState, *, title: str | None = None, meta: str | None = None) -> str:
    """The transcript as plain text (``text/plain``): ``you>``/``agent>`` lines, tools, plan, footer."""
    lines: list[str] = []
    heading = _title(state, title)
    if heading:
        lines.append(f"== {heading} ==")
    for entry in state.entries:
        lines += _entry_text(entry)
    label, _ = _turn_status(state)
    lines.append("-- " + " · ".join([label, *_footer_parts(state, meta)]))
    return "\n".join(lines)


# -- bundle and badge ---------------------------------------------------------------------------------


def static_bundle(
    state: TranscriptState, *, metadata: dict[str, Any], title: str | None = None, meta: str | None = None
) -> tuple[dict[str, str], dict[str, Any]]:
    """``(data, metadata)`` for ``update_display(data, raw=True, metadata=..., display_id=...)``."""
    renderers: dict[str, Callable[..., str]] = {
        "text/html": transcript_html,
        "text/markdown": transcript_markdown,
        "text/plain": transcript_text,
    }
    data = {mime: render(state, title=title, meta=meta) for mime, render in renderers.items()}
    return data, {"silo": dict(metadata)}


def _elapsed(seconds: float) -> str:
    total = int(seconds) if math.isfinite(seconds) and seconds > 0 else 0
    if total < 60:
        return f"{total} s"
    if total < 3600:
        return f"{total // 60} m {total % 60:02d} s"
    return f"{total // 3600} h {total % 3600 // 60:02d} m"


def status_badge_html(activity: str, *, elapsed: float | None = None) -> str:
    """A small coloured pill: ``● working 1 m 05 s`` (idle/working/blocked/error/dead/none)."""
    rgb = _ACTIVITY_COLOURS.get(activity, _GREY)
    label = activity + (f" {_elapsed(elapsed)}" if elapsed is not None else "")
    style = (
        "display:inline-block;padding:0 .6em;border-radius:.8em;font-size:.85em;line-height:1.6;"
        f"white-space:nowrap;color:inherit;background:{_rgba(rgb, 0.18)};border:1px solid {_rgba(rgb, 0.45)}"
    )
    dot = f'<span style="color:rgb({rgb})">●</span>'
    return f'<span class="silo-badge" style="{style}">{dot} {_esc(label)}</span>'
