"""The card of a tool call (``ToolEntry``): its kind, title, status, locations, diffs and output.

- A ``read`` tool call's text is the file: shown as highlighted code (language from its path), not as
  Markdown. Other tool text is Markdown when it has fences or headings, else raw output; all of it is cut
  at ``labels.TOOL_TEXT_LIMIT`` (``TEXT_TOOL_LIMIT`` in plain text) and long output is collapsed.
- Diffs show at most ``labels.DIFF_LINE_LIMIT`` lines with their counts; short ones start expanded.
- While the turn runs, a tool call whose HTML is over ``LIVE_ENTRY_CHARS`` shows its header and a note
  instead of its output (the saved transcript is whole).
- The permission asked for the call is a line inside its card, where it was asked: after what the card
  showed then (the proposed diff), before what came after (its result). A diff silo_nb then wrote as
  proposed says "written" (no second card repeats it). Paths are relative to the session's folder (the
  absolute path on hover).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from silo_nb.model import (
    AgentToolCallContent,
    AgentToolCallLocation,
)
from silo_nb.notebook.render import labels, styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.cards.permission import permission_html, permission_markdown, permission_text
from silo_nb.notebook.render.code import code_block_html, lexer_for_filename, lexer_for_language
from silo_nb.notebook.render.diff_view import diff_html, diff_markdown, diff_text
from silo_nb.notebook.render.html_parts import muted_html, note_html, pill_html
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_html import markdown_to_html, too_costly
from silo_nb.notebook.render.md_inert import md_balanced, md_code, md_escape, md_fence, md_indent
from silo_nb.notebook.render.paths import path_html, shown_path
from silo_nb.updates import (
    TerminalView,
    ToolEntry,
)

__all__ = ["CARD", "LIVE_ENTRY_CHARS", "tool_html", "tool_markdown", "tool_text"]

LIVE_ENTRY_CHARS = 24_000  # HTML characters of one tool call shown while the turn runs
_COLLAPSE_LINES = 12  # tool text longer than this is collapsed in a <details>
_COLLAPSE_CHARS = 1_500


def _collapsible(body: str, text: str) -> str:
    lines = text.count("\n") + 1
    if lines <= _COLLAPSE_LINES and len(text) <= _COLLAPSE_CHARS:
        return f"<div>{body}</div>"
    return (
        f'<details style="margin:2px 0"><summary style="cursor:pointer;{styles.SMALL};{styles.MUTED}">'
        f"Output ({lines:,} lines)</summary>{body}</details>"
    )


def _tool_text_html(text: str, entry: ToolEntry) -> str:
    text = labels.cut(text, labels.TOOL_TEXT_LIMIT)
    if entry.kind == "read":
        code, language = labels.unwrap_fence(text)
        lexer = lexer_for_filename(labels.read_file_name(entry)) or lexer_for_language(language)
        return _collapsible(code_block_html(code, lexer), code)
    if labels.looks_like_markdown(text) and not too_costly(text, labels.TOOL_TEXT_LIMIT):
        return _collapsible(markdown_to_html(text, styled=True), text)
    pre = f'<pre style="{styles.CODE_PRE};white-space:pre-wrap">{esc(text)}</pre>'
    return _collapsible(pre, text)


def _written(content: AgentToolCallContent, entry: ToolEntry) -> bool:
    return content.path is not None and content.path in entry.written


def _with_permission(parts: list[str], entry: ToolEntry, line: Callable[[], str]) -> list[str]:
    """``parts`` (one per content item) with the permission's line where it was asked."""
    if entry.permission is None:
        return parts
    at = min(entry.permission_at, len(parts))
    return [*parts[:at], line(), *parts[at:]]


def _location(location: AgentToolCallLocation, cwd: str | None, *, html: bool) -> str:
    line = f":{location.line}" if location.line else ""
    return (path_html(location.path, cwd) + esc(line)) if html else shown_path(location.path, cwd) + line


def _tool_content_html(content: AgentToolCallContent, entry: ToolEntry) -> str:
    if content.type == "diff":
        return diff_html(
            content.path, content.old_text, content.new_text, cwd=entry.cwd, written=_written(content, entry)
        )
    if content.type == "terminal":
        return _terminal_html(content, entry)
    if content.type == "content" and content.content is not None and content.content.type == "text":
        return _tool_text_html(content.content.text or "", entry)
    return muted_html(labels.content_label(content))


def _terminal_of(entry: ToolEntry, terminal_id: str | None) -> TerminalView | None:
    """What ``entry`` knows of the client terminal it embeds (None: no output seen yet)."""
    return next((view for view in entry.terminals if view.terminal_id == terminal_id), None)


def _terminal_status(view: TerminalView | None) -> str:
    """`` · running…``, `` · exit 0`` or `` · killed (SIGTERM)``: how the terminal stands ("" when its
    output never reached the client: a journal of an agent that ran it itself)."""
    if view is None:
        return ""
    if not view.exited:
        return " · running…"
    if view.signal:
        return f" · killed ({view.signal})"
    return f" · exit {view.exit_code}" if view.exit_code is not None else " · exited"


def _tail(text: str, limit: int) -> str:
    """The end of ``text`` (a terminal's output reads from its end), cut at ``limit`` characters."""
    if len(text) <= limit:
        return text
    return f"… ({len(text) - limit:,} earlier characters)\n{text[-limit:]}"


def _terminal_html(content: AgentToolCallContent, entry: ToolEntry) -> str:
    view = _terminal_of(entry, content.terminal_id)
    head = (
        f'<div style="{styles.MONO};{styles.MUTED}">⌨ terminal {esc(content.terminal_id or "?")}'
        f"{esc(_terminal_status(view))}</div>"
    )
    if view is None or not (view.output or view.truncated):
        return head
    text = _tail(view.output, labels.TOOL_TEXT_LIMIT)
    note = muted_html("earlier output was not kept") if view.truncated else ""
    pre = f'<pre class="silo-terminal" style="{styles.CODE_PRE};white-space:pre-wrap">{esc(text)}</pre>'
    return head + note + _collapsible(pre, text)


_CHANGING_KINDS = frozenset({"edit", "delete", "move", "execute"})


def _status_label(entry: ToolEntry) -> str:
    """The status as shown: a replayed recording's call that would change something says it was not
    done now ("recorded, not applied"); its other calls say "(recorded)"."""
    status = labels.status_label(entry.status or "pending")
    if not entry.recorded:
        return status
    if entry.kind in _CHANGING_KINDS or any(content.type == "diff" for content in entry.content):
        return "recorded, not applied"
    return f"{status} (recorded)"


def tool_html(entry: ToolEntry) -> str:
    status = entry.status or "pending"
    rgb = styles.GREY if entry.recorded else labels.TOOL_STATUS_COLOURS.get(status, styles.GREY)
    kind = entry.kind or "other"
    icon = labels.KIND_ICONS.get(kind, labels.TOOL_ICON)
    parts = [
        '<div style="display:flex;flex-wrap:wrap;gap:.2em .6em;align-items:baseline">'
        f'<span style="{styles.MUTED};white-space:nowrap">{icon} {esc(kind)}</span>'
        f'<span style="font-weight:600">{esc(labels.tool_title(entry))}</span>'
        f"{pill_html(_status_label(entry), rgb)}</div>"
    ]
    if entry.locations:
        shown = " · ".join(_location(location, entry.cwd, html=True) for location in entry.locations)
        parts.append(f'<div style="{styles.MONO};{styles.MUTED}">{shown}</div>')
    contents = [_tool_content_html(content, entry) for content in entry.content]
    permission = entry.permission
    parts += _with_permission(contents, entry, lambda: permission_html(permission) if permission else "")
    if not entry.content and entry.raw_output is not None:
        output = esc(labels.summary(entry.raw_output))
        parts.append(f'<div style="{styles.MONO};{styles.MUTED};white-space:pre-wrap">output: {output}</div>')
    return (
        f'<div class="silo-tool" title="{esc(entry.tool_call_id)}" style="margin:4px 0;padding:3px 8px;'
        f"border-left:3px solid {styles.rgba(rgb, 0.7)};background:{styles.rgba(styles.GREY, 0.06)};"
        f'border-radius:0 4px 4px 0">{"".join(parts)}</div>'
    )


def _tool_text_md(text: str, entry: ToolEntry) -> list[str]:
    text = labels.cut(text, labels.TOOL_TEXT_LIMIT)
    if entry.kind == "read":
        code, language = labels.unwrap_fence(text)
        lexer = lexer_for_filename(labels.read_file_name(entry)) or lexer_for_language(language)
        aliases = getattr(lexer, "aliases", None) or [""]
        return md_fence(code, str(aliases[0]))
    if labels.looks_like_markdown(text):
        return ["", *md_balanced(text).splitlines()]
    return md_fence(text)


def _tool_content_markdown(content: AgentToolCallContent, entry: ToolEntry) -> str:
    if content.type == "diff":
        lines = diff_markdown(
            content.path, content.old_text, content.new_text, cwd=entry.cwd, written=_written(content, entry)
        )
    elif content.type == "terminal":
        view = _terminal_of(entry, content.terminal_id)
        lines = [f"- terminal {md_code(content.terminal_id or '?')}{_terminal_status(view)}"]
        if view is not None and view.output:
            lines += md_fence(_tail(view.output, labels.TOOL_TEXT_LIMIT))
    elif content.type == "content" and content.content is not None and content.content.type == "text":
        lines = _tool_text_md(content.content.text or "", entry)
    else:
        lines = [f"- {md_escape(labels.content_label(content))}"]
    return "\n".join(lines)


def tool_markdown(entry: ToolEntry) -> str:
    """A ``*`` bullet (``-`` is the plan's: a new bullet char keeps the lists apart); one-line details
    are sub-bullets, diffs and output fenced blocks inside the item."""
    kind = entry.kind or "other"
    icon = labels.KIND_ICONS.get(kind, labels.TOOL_ICON)
    head = f"* {icon} **{md_escape(kind)}** · {md_escape(labels.tool_title(entry))}"
    head += f" · _{md_escape(_status_label(entry))}_"
    if entry.locations:
        head += " · " + ", ".join(md_code(_location(loc, entry.cwd, html=False)) for loc in entry.locations)
    items = [_tool_content_markdown(content, entry) for content in entry.content]
    permission = entry.permission
    asked = (lambda: "- " + permission_markdown(permission)[2:]) if permission is not None else (lambda: "")
    body: list[str] = [line for item in _with_permission(items, entry, asked) for line in item.split("\n")]
    if not entry.content and entry.raw_output is not None:
        body.append(f"- output: {md_code(labels.summary(entry.raw_output))}")
    return "\n".join([head, *md_indent(body)])


def _tool_content_text(content: AgentToolCallContent, entry: ToolEntry) -> str:
    if content.type == "diff":
        lines = diff_text(
            content.path, content.old_text, content.new_text, cwd=entry.cwd, written=_written(content, entry)
        )
    elif content.type == "terminal":
        view = _terminal_of(entry, content.terminal_id)
        lines = [f"terminal {content.terminal_id or '?'}{_terminal_status(view)}"]
        if view is not None and view.output:
            lines += _tail(view.output, labels.TEXT_TOOL_LIMIT).splitlines()
    elif content.type == "content" and content.content is not None and content.content.type == "text":
        lines = labels.cut(content.content.text or "", labels.TEXT_TOOL_LIMIT).splitlines()
    else:
        lines = [labels.content_label(content)]
    return "\n".join(lines)


def tool_text(entry: ToolEntry) -> list[str]:
    kind = entry.kind or "other"
    shown = _status_label(entry) if entry.recorded else entry.status or "pending"
    lines = [f"[tool {entry.tool_call_id}] {kind} · {labels.tool_title(entry)} · {shown}"]
    body: list[str] = []
    if entry.locations:
        body.append("at " + ", ".join(_location(loc, entry.cwd, html=False) for loc in entry.locations))
    items = [_tool_content_text(content, entry) for content in entry.content]
    permission = entry.permission
    asked = (lambda: "\n".join(permission_text(permission))) if permission is not None else (lambda: "")
    body += [line for item in _with_permission(items, entry, asked) for line in item.split("\n") if item]
    if not entry.content and entry.raw_output is not None:
        body.append(f"output: {labels.summary(entry.raw_output)}")
    return lines + [f"    {line}".rstrip() for line in body]


def _live(entry: ToolEntry, whole: bool, saved: Callable[[ToolEntry], str]) -> tuple[str, bool]:
    rendered = saved(entry)
    if whole or len(rendered) <= LIVE_ENTRY_CHARS:
        return rendered, False
    summary = tool_html(replace(entry, content=(), raw_output=None))
    note = note_html(f"output of {len(rendered):,} characters: shows when the turn ends (or press Show all)")
    return summary[: -len("</div>")] + note + "</div>", True


CARD = Card(ToolEntry, tool_html, tool_markdown, tool_text, _live)
