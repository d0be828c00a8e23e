"""What the three formats (HTML, Markdown, text) share: labels, icons, numbers, diffs and cuts.

- Every word a transcript shows about a status, a usage figure or an amount of money is made here once,
  so the HTML, the Markdown export and the plain text always agree.
- Icons are plain symbols, not emoji: every text font has them (screenshots showed emoji as boxes).
- Tool output can be huge: :func:`cut` keeps :data:`TOOL_TEXT_LIMIT` characters and diffs keep
  :data:`DIFF_LINE_LIMIT` lines, so saved notebooks stay small. Agent replies are never cut.
"""

from __future__ import annotations

import difflib
import html
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from silo_nb.memo import LruCache
from silo_nb.model import (
    AgentContentBlock,
    AgentSessionUsage,
    AgentToolCallContent,
    PromptAttachment,
)
from silo_nb.notebook.render import styles
from silo_nb.updates import (
    OTHER_OVERFLOW,
    Entry,
    PermissionEntry,
    ToolEntry,
    TranscriptState,
)

TOOL_TEXT_LIMIT = 20_000  # characters of one tool text block kept in the HTML and Markdown
DIFF_LINE_LIMIT = 400  # diff lines kept per diff
TEXT_TOOL_LIMIT = 2_000  # characters of one tool text block kept in the plain text
DIFF_INPUT_LINES = 600  # lines of each side a diff compares (difflib is quadratic on some inputs)
_DIFF_CACHE_ENTRIES = 16_384  # a turn renders its diffs as HTML, Markdown and text: keep them all
_DIFF_CACHE_CHARS = 64_000_000

KIND_ICONS = {
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
TOOL_ICON = "⚙"
PERMISSION_ICON = "⚑"
# What an attachment line starts with: a word in text and Markdown, an inline SVG paperclip in HTML (the
# "⎘" it was is a missing-glyph box in Chromium's default fonts; an SVG needs no font at all).
ATTACHMENT_ICON = "attached:"
ATTACHMENT_ICON_HTML = (
    '<svg class="silo-attachment-icon" role="img" aria-label="attached" width="12" height="12" '
    'viewBox="0 0 16 16" style="vertical-align:-1px"><path d="M10.5 4.5 5.2 9.8a1.6 1.6 0 0 0 2.3 2.3'
    'l5.6-5.6a3 3 0 0 0-4.3-4.3L3.2 7.8a4.4 4.4 0 0 0 6.2 6.2l4.1-4.1" fill="none" stroke="currentColor" '
    'stroke-width="1.5" stroke-linecap="round"/></svg>'
)
TOOL_STATUS_COLOURS = {
    "pending": styles.GREY,
    "in_progress": styles.BLUE,
    "completed": styles.GREEN,
    "failed": styles.RED,
}
TURN_STATUS = {
    "running": ("● running", styles.BLUE),
    "finished": ("✓ finished", styles.GREEN),
    "cancelled": ("■ cancelled", styles.AMBER),
    "failed": ("✗ failed", styles.RED),
    "restored": ("↺ restored", styles.GREY),
}
_BLOCKED = ("● waiting for permission", styles.AMBER)
_ASKING = ("● waiting for your answer", styles.AMBER)
PLAN_GLYPHS = {"pending": "☐", "in_progress": "◐", "completed": "☑"}
PLAN_TEXT_GLYPHS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^`\n]*)$")
_FILE_NAME = re.compile(r"[\w.\-/\\~]*\.[A-Za-z0-9_+\-]{1,12}|Makefile|Dockerfile")


def esc(text: str) -> str:
    return html.escape(text, quote=True)


LIST_TITLE_CHARS = 60  # a session title in ``%silo agents``: longer ones end in "…", whole in the tooltip


def short_title(title: str, limit: int = LIST_TITLE_CHARS) -> str:
    """``title`` on one line, cut at ``limit`` characters with "…" (the whole title goes in a tooltip)."""
    flat = " ".join(title.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def title_html(title: str, limit: int = LIST_TITLE_CHARS) -> str:
    """A session title in bold, cut with "…" and the whole title as its tooltip (``title=``)."""
    return f'<b title="{esc(title)}">{esc(short_title(title, limit))}</b>'


def status_label(status: str) -> str:
    return status.replace("_", " ") if status in TOOL_STATUS_COLOURS else status


def title_text(state: TranscriptState, chosen: str | None) -> str | None:
    """The title to show: ``chosen`` when given (``""`` means none), else the session's own."""
    text = chosen if chosen is not None else state.title
    return text.strip() or None if text else None


def turn_status(state: TranscriptState) -> tuple[str, str]:
    """(label, rgb) of the turn's status, as the footer shows it."""
    return TURN_STATUS.get(state.status, (str(state.status), styles.GREY))


def header_status(state: TranscriptState) -> tuple[str, str]:
    """(label, rgb) for the header row: like :func:`turn_status`, but a running turn that waits for a
    permission answer or for the answer to a question says so."""
    if state.status == "running":
        waiting = state.waiting()
        if waiting is not None:
            return _BLOCKED if isinstance(waiting, PermissionEntry) else _ASKING
    text, rgb = turn_status(state)
    if state.restored and state.status != "restored":  # "■ cancelled · ↺ restored": how it ended, and whence
        text += f" · {TURN_STATUS['restored'][0]}"
    return text, rgb


def number(value: float) -> str:
    return f"{round(value):,}" if math.isfinite(value) else str(value)


def money(amount: float, currency: str) -> str:
    if not math.isfinite(amount):
        text = str(amount)
    else:
        text = f"{amount:,.4f}"
        while text.endswith("0") and len(text) - text.index(".") > 3:
            text = text[:-1]
    return f"${text}" if currency.upper() == "USD" else f"{text} {currency}"


def usage_text(usage: AgentSessionUsage | None) -> str | None:
    if usage is None:
        return None
    text = f"context {number(usage.used)} / {number(usage.size)} tokens"
    if usage.size > 0 and math.isfinite(usage.used) and math.isfinite(usage.size):
        text += f" ({round(usage.used / usage.size * 100)}%)"
    if usage.cost is not None:
        text += f" · {money(usage.cost.amount, usage.cost.currency)}"
    return text


def duration_text(seconds: float) -> str:
    """``0.8 s``, ``12.3 s``, then :func:`elapsed_text`'s minutes and hours."""
    return f"{seconds:.1f} s" if seconds < 60 else elapsed_text(seconds)


def tokens_text(tokens: dict[str, int]) -> list[str]:
    """A turn's token counts (ACP ``Usage``) as footer parts: ``1,234 in · 567 out tokens`` (thought
    tokens beside them), ``cache 1,000 read · 20 write``; nothing for counts the agent did not send."""
    parts = []
    flow = [
        f"{tokens[key]:,} {word}"
        for key, word in (("inputTokens", "in"), ("outputTokens", "out"), ("thoughtTokens", "thought"))
        if key in tokens
    ]
    if not flow and "totalTokens" in tokens:
        flow = [f"{tokens['totalTokens']:,}"]
    if flow:
        parts.append(" · ".join(flow) + " tokens")
    cache = [
        f"{tokens[key]:,} {word}"
        for key, word in (("cachedReadTokens", "read"), ("cachedWriteTokens", "write"))
        if key in tokens
    ]
    if cache:
        parts.append("cache " + " · ".join(cache))
    return parts


def footer_parts(state: TranscriptState, meta: str | None, *, with_status: bool = False) -> list[str]:
    """Plain-text pieces of the footer: the turn status (``with_status``: when no header row shows it),
    stop reason, error, usage, hidden updates, meta."""
    parts: list[str] = [turn_status(state)[0]] if with_status else []
    # "■ cancelled · stop: cancelled" would say one thing twice.
    if state.stop_reason and state.stop_reason not in ("end_turn", state.status):
        parts.append(f"stop: {state.stop_reason}")
    if state.error:
        parts.append(f"error: {state.error}")
    if state.duration_ms is not None:
        parts.append(duration_text(state.duration_ms / 1000))
    parts.extend(tokens_text(dict(state.tokens)))
    usage = usage_text(state.usage)
    if usage:
        parts.append(usage)
    hidden = dict(state.other).get(OTHER_OVERFLOW, 0)  # unknown kinds past the named ones: counted only
    if hidden:
        parts.append(f"{hidden:,} update{'s' if hidden != 1 else ''} of more unknown kinds not shown")
    if meta:
        parts.append(meta)
    return parts


def byte_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    return f"{size / 1024:.1f} KB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MB"


def attachment_text(attachment: PromptAttachment) -> str:
    """``df · text/csv · 2.1 KB`` (a linked one: ``· linked``): what a "You" bubble says of an attachment."""
    parts = [
        attachment.name,
        attachment.type,
        byte_size(attachment.size) if attachment.size is not None else None,
    ]
    return " · ".join(part for part in parts if part) + ("" if attachment.embedded else " · linked")


def elapsed_text(seconds: float) -> str:
    total = int(seconds) if math.isfinite(seconds) and seconds > 0 else 0
    if total < 60:
        return f"{total} s"
    if total < 3600:
        return f"{total // 60} m {total % 60:02d} s"
    return f"{total // 3600} h {total % 3600 // 60:02d} m"


@dataclass(frozen=True)
class Diff:
    """A diff as shown: at most :data:`DIFF_LINE_LIMIT` lines, the counts of all, and why it is partial."""

    shown: tuple[str, ...]  # ``@@`` hunks, ``-``/``+``/`` `` lines
    total: int  # lines in the whole diff
    added: int
    removed: int
    truncated: str | None = None  # a "diff truncated" note when the inputs were over the limit


def _cached_size(key: tuple[str | None, str | None], result: Diff) -> int:
    """What one cached diff holds, in characters: both texts and the lines shown."""
    return len(key[0] or "") + len(key[1] or "") + sum(map(len, result.shown))


_diffs: LruCache[tuple[str | None, str | None], Diff] = LruCache(
    items=_DIFF_CACHE_ENTRIES, size=_DIFF_CACHE_CHARS, size_of=_cached_size
)


def diff(old: str | None, new: str | None) -> Diff:
    """The diff of ``old`` → ``new`` (``old`` None: a new file), computed once per content.

    Line matching (difflib) is quadratic on some inputs (10,000 interleaved lines took 18 s): only the
    first :data:`DIFF_INPUT_LINES` lines of each side are compared, with a note saying so. Results are
    kept (LRU, bounded by count and characters), keyed by the texts themselves: a tool call updated
    again, or rendered again in another format, does not diff again.
    """
    return _diffs.get_or_make((old, new), lambda: _compute_diff(old, new))


def _compute_diff(old: str | None, new: str | None) -> Diff:
    old_lines = old.splitlines() if old is not None else []
    new_lines = new.splitlines() if new is not None else []
    truncated = None
    if old is not None and new is not None and max(len(old_lines), len(new_lines)) > DIFF_INPUT_LINES:
        truncated = (
            f"diff truncated: the first {DIFF_INPUT_LINES:,} of {len(old_lines):,} old and "
            f"{len(new_lines):,} new lines compared"
        )
        old_lines, new_lines = old_lines[:DIFF_INPUT_LINES], new_lines[:DIFF_INPUT_LINES]
    if old is None or new is None:
        lines: list[str] | tuple[str, ...] = [
            *("-" + line for line in old_lines),
            *("+" + line for line in new_lines),
        ]
    else:
        diff_iter = difflib.unified_diff(old_lines, new_lines, lineterm="", n=3)
        lines = [line for index, line in enumerate(diff_iter) if index >= 2]  # skip the ---/+++ header
    added = sum(1 for line in lines if line.startswith("+"))
    removed = sum(1 for line in lines if line.startswith("-"))
    return Diff(tuple(lines[:DIFF_LINE_LIMIT]), len(lines), added, removed, truncated)


def diff_lines(old: str | None, new: str | None) -> tuple[str, ...]:
    """The lines shown of the diff of ``old`` → ``new`` (see :func:`diff`)."""
    return diff(old, new).shown


def cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit:,} more characters)"


def looks_like_markdown(text: str) -> bool:
    """Tool text with fences or headings is Markdown (agents wrap output in fences); else raw output."""
    return bool(re.search(r"^ {0,3}(```|~~~|#{1,6} )", text, re.MULTILINE))


def block_label(block: AgentContentBlock | None) -> str:
    if block is None:
        return "[empty content]"
    detail = " ".join(part for part in (block.name, block.mime_type, block.uri) if part)
    return f"[{block.type}{' ' + detail if detail else ''}]"


def content_label(content: AgentToolCallContent) -> str:
    """What a tool call's content that is not text, a diff or a terminal says: ``[image …]``, ``[kind]``."""
    return block_label(content.content) if content.type == "content" else f"[{content.type}]"


def summary(value: Any, limit: int = 300) -> str:
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
        except (ValueError, RecursionError):  # a circular or absurdly deep structure
            text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def locations(entry: ToolEntry) -> list[str]:
    return [f"{loc.path}:{loc.line}" if loc.line else loc.path for loc in entry.locations]


def tool_title(entry: ToolEntry) -> str:
    return entry.title or entry.kind or "tool call"


def read_file_name(entry: ToolEntry) -> str | None:
    """The file a ``read`` tool call shows: its first location, else a file name in its title."""
    if entry.locations:
        return entry.locations[0].path
    names = _FILE_NAME.findall(entry.title or "")
    return names[-1] if names else None


def permission_outcome(entry: PermissionEntry) -> tuple[str, bool]:
    """(what was chosen, whether it lasts): ``waiting…``, ``cancelled`` or the option's name."""
    if not entry.answered:
        return "waiting…", False
    if entry.choice is None:
        return "cancelled", False
    kind = next((k for option_id, _, k in entry.options if option_id == entry.choice), "")
    return entry.choice_name or entry.choice, kind.endswith("_always")


def permission_decision(entry: PermissionEntry) -> str:
    """``waiting``, ``cancelled``, ``allowed``, ``rejected`` (by the chosen option's kind) or ``chosen``."""
    if not entry.answered:
        return "waiting"
    if entry.choice is None:
        return "cancelled"
    kind = next((k for option_id, _, k in entry.options if option_id == entry.choice), "")
    return "allowed" if kind.startswith("allow") else "rejected" if kind.startswith("reject") else "chosen"


def plan_notes(status: str | None, priority: str | None) -> list[str]:
    notes = []
    if status and status not in ("pending", "completed"):
        notes.append(status_label(status))
    if priority:
        notes.append(priority)
    return notes


def unwrap_fence(text: str) -> tuple[str, str]:
    """(code, language) of text that is one fenced block (agents wrap file contents in one); a text
    that is not is returned as is. A missing closing fence (the text was cut) is tolerated."""
    lines = text.split("\n")
    opening = _FENCE_LINE.match(lines[0])
    if opening is None:
        return text, ""
    fence = opening.group(1)
    close = next(
        (
            i
            for i in range(len(lines) - 1, 0, -1)
            if len(lines[i].strip()) >= len(fence) and not lines[i].strip(fence[0])
        ),
        len(lines),
    )
    return "\n".join(lines[1:close] + lines[close + 1 :]), opening.group(2).strip().split(" ")[0]


def compose(
    state: TranscriptState,
    *,
    title: str | None,
    meta: str | None,
    label: str | None,
    header: Callable[[str, str], str],
    heading: Callable[[str], str],
    entry: Callable[[Entry], list[str]],
    footer: Callable[[list[str]], str],
) -> list[str]:
    """The parts of a text transcript in order — header row (``label``, status), title, entries, footer —
    each written by the format's own functions (Markdown and plain text share this skeleton)."""
    parts: list[str] = []
    if label is not None:
        parts.append(header(label, header_status(state)[0]))
    shown_title = title_text(state, title)
    if shown_title:
        parts.append(heading(shown_title))
    for item in state.entries:
        parts += entry(item)
    pieces = footer_parts(state, meta, with_status=label is None)
    if pieces:
        parts.append(footer(pieces))
    return parts
