"""The transcript as one self-contained HTML fragment, the same live (widget) and static (saved output).

- One ``<div class="silo-transcript">`` with inline styles only (``styles``): no ``<style>``/``<script>``,
  which GitHub and nbconvert drop. Without styles the plain structure (``<details>``, ``<b>``, ``<pre>``)
  still reads.
- Every string from the agent or the user is escaped; agent Markdown goes through
  :func:`~silo_nb.notebook.render.md_html.markdown_to_html` (raw HTML off, safe links only).
- Per-entry cache: entries are frozen and replaced (never mutated) when they change, so the HTML of an
  entry object is kept by identity (:func:`entry_html`). A live re-render after one chunk renders only
  the entry that chunk changed; the rest is string joining.
- The header row (:func:`turn_header_html`: agent label, turn status) is as tall as the widget's button
  row, so a cell does not jump when the live view is replaced by the saved one.
- A ``read`` tool call's text is the file: shown as highlighted code (language from its path), not as
  Markdown. Other tool text is Markdown when it has fences or headings, else raw output.
- Agent text over :data:`AGENT_MARKDOWN_LIMIT` characters is shown whole but as plain text: markdown-it-py
  needs ~1.4 s per MB, four times that on text dense with ``*``/``_``/``[`` (``md_html.too_costly``
  weighs them), too long for a kernel re-rendering a live turn.
"""

from __future__ import annotations

from silo_nb.notebook.render import labels, styles
from silo_nb.notebook.render.code import code_block_html, lexer_for_filename, lexer_for_language
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_html import markdown_to_html, too_costly
from silo_nb.notebook.transcript import (
    Entry,
    MessageEntry,
    PermissionEntry,
    PlanView,
    ToolEntry,
    TranscriptState,
)
from silo_nb.sessions.models import AgentToolCallContent

__all__ = [
    "box_html",
    "empty_html",
    "entry_html",
    "footer_html",
    "message_body_html",
    "pill_html",
    "status_badge_html",
    "tool_html",
    "transcript_body_html",
    "transcript_html",
    "turn_header_html",
]

AGENT_MARKDOWN_LIMIT = 100_000  # longer agent text is shown plain: parsing it would stall the kernel
_COLLAPSE_LINES = 12  # tool text longer than this is collapsed in a <details>
_COLLAPSE_CHARS = 1_500
_OPEN_DIFF_LINES = 40  # diffs up to this long start expanded
_CACHE_ENTRIES = 65_536  # bounded by _CACHE_CHARS too; a 20,000-call turn must not thrash it
_CACHE_CHARS = 32_000_000

_cache: dict[int, tuple[Entry, str]] = {}  # id(entry) -> (entry, html); the entry is kept, so ids stay unique
_cached_chars = 0


def pill_html(label: str, rgb: str) -> str:
    return f'<span style="{styles.pill_style(rgb)}">{esc(label)}</span>'


def _muted(text: str) -> str:
    return f'<div style="{styles.SMALL};{styles.MUTED}">{esc(text)}</div>'


# -- messages ---------------------------------------------------------------------------------------


def _non_text_html(entry: MessageEntry) -> str:
    dropped = (
        _muted(f"… {entry.dropped:,} more characters not kept (over the limit)") if entry.dropped else ""
    )
    return dropped + (_muted(f"+ {', '.join(entry.non_text)}") if entry.non_text else "")


def _agent_markdown(text: str) -> str:
    if too_costly(text, AGENT_MARKDOWN_LIMIT):
        return f'<div style="white-space:pre-wrap">{esc(text)}</div>'
    return markdown_to_html(text, styled=True)


def _attachments_html(entry: MessageEntry) -> str:
    return "".join(
        f'<div class="silo-attachment" style="{styles.SMALL};{styles.MUTED}">'
        f"{labels.ATTACHMENT_ICON} {esc(labels.attachment_text(item))}</div>"
        for item in entry.attachments
    )


def _user_html(entry: MessageEntry) -> str:
    text = f'<div style="white-space:pre-wrap">{esc(entry.text)}</div>' if entry.text else ""
    return (
        '<div class="silo-user" style="margin:4px 0;padding:4px 8px;border-radius:4px;'
        f'background:{styles.rgba(styles.GREY, 0.12)}">'
        f'<div style="font-size:.8em;font-weight:600;{styles.MUTED}">You</div>'
        f"{text}{_attachments_html(entry)}{_non_text_html(entry)}</div>"
    )


def message_body_html(entry: MessageEntry, body: str) -> str:
    """An agent or thought message around ``body`` (its text as HTML)."""
    if entry.role == "agent":
        return f'<div class="silo-agent" style="margin:4px 0">{body}{_non_text_html(entry)}</div>'
    return (
        '<details class="silo-thought" style="margin:4px 0;opacity:.65">'
        '<summary style="cursor:pointer;font-style:italic">Thinking</summary>'
        f'<div style="padding-left:.8em;border-left:2px solid {styles.rgba(styles.GREY, 0.35)}">'
        f"{body}{_non_text_html(entry)}</div></details>"
    )


def _agent_html(entry: MessageEntry) -> str:
    return message_body_html(entry, _agent_markdown(entry.text))


# -- tool calls -------------------------------------------------------------------------------------


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


def _diff_html(content: AgentToolCallContent) -> str:
    shown = labels.diff(content.old_text, content.new_text)
    added, removed = shown.added, shown.removed
    new_file = " · new file" if content.old_text is None else ""
    rows = []
    if shown.truncated:
        rows.append(
            f'<div style="padding:0 6px;{styles.MUTED};font-style:italic">{esc(shown.truncated)}</div>'
        )
    for line in shown.shown:
        if line.startswith("+"):
            background = f"background:{styles.rgba(styles.GREEN, 0.18)}"
        elif line.startswith("-"):
            background = f"background:{styles.rgba(styles.RED, 0.18)}"
        else:
            background = styles.MUTED if line.startswith("@@") else ""
        rows.append(f'<div style="white-space:pre;padding:0 6px;{background}">{esc(line) or " "}</div>')
    if shown.total > len(shown.shown):
        more = shown.total - len(shown.shown)
        rows.append(f'<div style="padding:0 6px;{styles.MUTED}">… {more:,} more lines</div>')
    if not shown.total:
        rows.append(f'<div style="padding:0 6px;{styles.MUTED}">(no changes)</div>')
    summary = (
        f'<summary style="cursor:pointer;{styles.MONO}">{esc(content.path or "diff")} '
        f'<span style="color:rgb({styles.GREEN})">+{added}</span> '
        f'<span style="color:rgb({styles.RED})">−{removed}</span>{new_file}</summary>'
    )
    box = (
        f'<div style="{styles.MONO};line-height:1.4;overflow-x:auto;margin-top:2px;padding:2px 0;'
        f'border:1px solid {styles.rgba(styles.GREY, 0.3)};border-radius:4px">{"".join(rows)}</div>'
    )
    is_open = " open" if shown.total <= _OPEN_DIFF_LINES else ""
    return f'<details class="silo-diff"{is_open} style="margin:3px 0">{summary}{box}</details>'


def _tool_content_html(content: AgentToolCallContent, entry: ToolEntry) -> str:
    if content.type == "diff":
        return _diff_html(content)
    if content.type == "terminal":
        return f'<div style="{styles.MONO};{styles.MUTED}">⌨ terminal {esc(content.terminal_id or "?")}</div>'
    if content.type == "content" and content.content is not None and content.content.type == "text":
        return _tool_text_html(content.content.text or "", entry)
    return _muted(labels.block_label(content.content) if content.type == "content" else f"[{content.type}]")


def tool_html(entry: ToolEntry) -> str:
    status = entry.status or "pending"
    rgb = labels.TOOL_STATUS_COLOURS.get(status, styles.GREY)
    kind = entry.kind or "other"
    icon = labels.KIND_ICONS.get(kind, labels.TOOL_ICON)
    parts = [
        '<div style="display:flex;flex-wrap:wrap;gap:.2em .6em;align-items:baseline">'
        f'<span style="{styles.MUTED};white-space:nowrap">{icon} {esc(kind)}</span>'
        f'<span style="font-weight:600">{esc(labels.tool_title(entry))}</span>'
        f"{pill_html(labels.status_label(status), rgb)}</div>"
    ]
    locations = labels.locations(entry)
    if locations:
        parts.append(f'<div style="{styles.MONO};{styles.MUTED}">{esc(" · ".join(locations))}</div>')
    parts.extend(_tool_content_html(content, entry) for content in entry.content)
    if not entry.content and entry.raw_output is not None:
        output = esc(labels.summary(entry.raw_output))
        parts.append(f'<div style="{styles.MONO};{styles.MUTED};white-space:pre-wrap">output: {output}</div>')
    return (
        f'<div class="silo-tool" title="{esc(entry.tool_call_id)}" style="margin:4px 0;padding:3px 8px;'
        f"border-left:3px solid {styles.rgba(rgb, 0.7)};background:{styles.rgba(styles.GREY, 0.06)};"
        f'border-radius:0 4px 4px 0">{"".join(parts)}</div>'
    )


# -- plan, permissions ------------------------------------------------------------------------------


def _plan_html(plan: PlanView) -> str:
    rows = []
    for step in plan.entries:
        status = step.status or "pending"
        glyph = labels.PLAN_GLYPHS.get(status, "•")
        style = {"completed": ' style="opacity:.65"', "in_progress": ' style="font-weight:600"'}.get(
            status, ""
        )
        notes = labels.plan_notes(step.status, step.priority)
        note = f' <span style="font-size:.8em;opacity:.55">{esc(" · ".join(notes))}</span>' if notes else ""
        rows.append(f"<div{style}>{glyph} {esc(step.content)}{note}</div>")
    if not rows:
        rows.append('<div style="opacity:.6">(empty)</div>')
    return (
        f'<div class="silo-plan" style="margin:4px 0;padding:4px 8px;'
        f'border:1px solid {styles.rgba(styles.GREY, 0.3)};border-radius:4px">'
        f'<div style="font-size:.8em;font-weight:600;{styles.MUTED}">Plan</div>{"".join(rows)}</div>'
    )


def _permission_html(entry: PermissionEntry) -> str:
    outcome, lasting = labels.permission_outcome(entry)
    rgb = styles.AMBER if not entry.answered else styles.GREY if entry.choice is None else styles.GREEN
    shown = f"<i>{esc(outcome)}</i>" if entry.choice is None else f"<b>{esc(outcome)}</b>"
    always = f' <span style="{styles.MUTED}">(always)</span>' if lasting else ""
    return (
        f'<div class="silo-permission" style="margin:4px 0;padding:3px 8px;'
        f'border-left:3px solid {styles.rgba(rgb, 0.7)}">'
        f"{labels.PERMISSION_ICON} Permission: {esc(entry.title)} → {shown}{always}</div>"
    )


# -- entries, with the cache ------------------------------------------------------------------------


def _message_html(entry: MessageEntry) -> str:
    if not entry.text and not entry.non_text and not entry.attachments:
        return ""
    return _user_html(entry) if entry.role == "user" else _agent_html(entry)


def _render_entry(entry: Entry) -> str:
    return labels.by_kind(
        entry, message=_message_html, tool=tool_html, plan=_plan_html, permission=_permission_html
    )


def entry_html(entry: Entry) -> str:
    """One entry's HTML ("" for an empty message), rendered once per entry object (LRU by identity)."""
    global _cached_chars
    key = id(entry)
    hit = _cache.pop(key, None)
    if hit is not None and hit[0] is entry:
        _cache[key] = hit  # most recently used goes last
        return hit[1]
    if hit is not None:  # unreachable while the entry is kept alive by the cache; be safe anyway
        _cached_chars -= len(hit[1])
    rendered = _render_entry(entry)
    _cache[key] = (entry, rendered)
    _cached_chars += len(rendered)
    while len(_cache) > _CACHE_ENTRIES or (_cached_chars > _CACHE_CHARS and len(_cache) > 1):
        _cached_chars -= len(_cache.pop(next(iter(_cache)))[1])
    return rendered


# -- the whole transcript ---------------------------------------------------------------------------


def turn_header_html(state: TranscriptState, *, label: str, elapsed: float | None = None) -> str:
    """The header row: the agent's label on the left, the turn's status pill on the right."""
    text, rgb = labels.header_status(state)
    if elapsed is not None:
        text += f" {labels.elapsed_text(elapsed)}"
    return (
        f'<div class="silo-header" style="{styles.HEADER_ROW}">'
        f'<span style="font-weight:600;overflow-wrap:anywhere">{esc(label)}</span>'
        f"{pill_html(text, rgb)}</div>"
    )


def _footer_html(state: TranscriptState, meta: str | None, *, with_status: bool) -> str:
    parts = [f"<span>{esc(part)}</span>" for part in labels.footer_parts(state, meta)]
    if with_status:
        parts.insert(0, pill_html(*labels.turn_status(state)))
    if not parts:
        return ""
    return (
        '<div class="silo-footer" style="display:flex;flex-wrap:wrap;gap:.2em .9em;align-items:baseline;'
        f"margin-top:6px;padding-top:4px;border-top:1px solid {styles.rgba(styles.GREY, 0.25)};"
        f'{styles.SMALL}">'
        f"{''.join(parts)}</div>"
    )


def empty_html(state: TranscriptState) -> str:
    """What a transcript with no entry shows."""
    waiting = "Waiting for the agent…" if state.status == "running" else "No messages."
    return f'<div style="font-style:italic;opacity:.6">{waiting}</div>'


def footer_html(state: TranscriptState, meta: str | None = None, *, with_status: bool = True) -> str:
    return _footer_html(state, meta, with_status=with_status)


def transcript_body_html(state: TranscriptState, *, meta: str | None = None, with_status: bool = True) -> str:
    """The entries and the footer, without the outer box (for a widget that draws its own header)."""
    body = [part for part in map(entry_html, state.entries) if part] or [empty_html(state)]
    return "".join(body) + _footer_html(state, meta, with_status=with_status)


def box_html(inner: str) -> str:
    """The transcript's outer box around ``inner``."""
    return f'<div class="silo-transcript" style="{styles.BOX}">{inner}</div>'


def transcript_html(
    state: TranscriptState, *, title: str | None = None, meta: str | None = None, label: str | None = None
) -> str:
    """The transcript as one self-contained ``<div class="silo-transcript">`` (inline styles only).

    With ``label``, the first row is :func:`turn_header_html` and the footer leaves the status to it.
    """
    parts: list[str] = []
    if label is not None:
        parts.append(turn_header_html(state, label=label))
    heading = labels.title_text(state, title)
    if heading:
        parts.append(
            f'<div class="silo-title" style="font-weight:600;margin-bottom:4px">{esc(heading)}</div>'
        )
    parts.append(transcript_body_html(state, meta=meta, with_status=label is None))
    return box_html("".join(parts))


def status_badge_html(activity: str, *, elapsed: float | None = None) -> str:
    """A small coloured pill: ``● working 1 m 05 s`` (idle/working/blocked/error/dead/none)."""
    rgb = styles.ACTIVITY_COLOURS.get(activity, styles.GREY)
    label = activity + (f" {labels.elapsed_text(elapsed)}" if elapsed is not None else "")
    style = styles.pill_style(rgb, background=0.18, line_height=1.6)
    dot = f'<span style="color:rgb({rgb})">●</span>'
    return f'<span class="silo-badge" style="{style}">{dot} {esc(label)}</span>'
