"""The transcript as GitHub-flavoured Markdown text (``text/markdown``, ``%silo export x.md``).

- No raw HTML of ours; our own inline fields (titles, plan steps, labels) are escaped, including
  JupyterLab's ``$`` math, and sit on one line.
- Agent text keeps its Markdown but carries no active HTML (:func:`inert_markdown`): wherever the
  Markdown is rendered, even by a renderer with raw HTML on, no tag, comment or event attribute of the
  agent's becomes HTML and no link or image points anywhere but http/https/mailto or a relative URL.
- The Markdown stays valid whatever the agent wrote: a fence it left open (a reply cut mid-stream) is
  closed before the next part (:func:`~silo_nb.notebook.render.md_html.unclosed_fence`, from the same
  parser the HTML uses), and our own fences are longer than any backtick run they enclose.
- A ``read`` tool call's file is a fenced block tagged with the file's language.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_right

from markdown_it import MarkdownIt
from markdown_it.token import Token

from silo_nb.notebook.render import labels
from silo_nb.notebook.render.code import lexer_for_filename, lexer_for_language
from silo_nb.notebook.render.html import AGENT_MARKDOWN_LIMIT
from silo_nb.notebook.render.md_html import safe_url, too_costly, unclosed_fence
from silo_nb.notebook.render.text import transcript_text
from silo_nb.notebook.transcript import (
    Entry,
    MessageEntry,
    PermissionEntry,
    PlanView,
    ToolEntry,
    TranscriptState,
)

__all__ = ["inert_markdown", "md_header", "transcript_markdown"]

log = logging.getLogger("silo_nb.notebook.render")

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&#$])")


# -- agent Markdown made inert ---------------------------------------------------------------------
#
# How: the source is rewritten, not re-emitted, so the agent's Markdown stays as written. Outside code
# (fences, indented code, code spans, found by markdown-it-py's own parse), every ``<`` becomes ``&lt;``
# (no tag, comment, declaration or autolink can start) except an autolink to http/https/mailto, and a
# ``]`` that starts a link destination or a reference definition whose target is not plainly safe is
# backslash-escaped (the link is then its text). Both escapes render as the same characters, so
# escaping too much changes nothing shown: when unsure, escape. Escaping can turn an HTML block or a
# reference definition into paragraph text, which changes where code starts, so the rewrite repeats
# until nothing changes; the result is then checked by parsing it with raw HTML enabled, and text
# that fails the check (never seen) is shown whole in a fence instead. Text longer than the HTML
# view's AGENT_MARKDOWN_LIMIT is fenced whole too (the HTML shows it plain): parsing it would stall
# the kernel.

_BLOCKS = MarkdownIt("commonmark", {"html": True}).enable(["table"]).disable(["inline"])
_CHECK = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_CHECK.validateLink = lambda url: True  # type: ignore[method-assign]  # see every link, then judge it
_SPECIAL = re.compile(r"[\\`<\]]")
_SAFE_AUTOLINK = re.compile(r"<(?:[Hh][Tt][Tt][Pp][Ss]?://|[Mm][Aa][Ii][Ll][Tt][Oo]:)[^\s<>`\\&]*>")
_DESTINATION = re.compile(r"[ \t]*<?([^\s<>]*)")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_BACKTICKS = re.compile(r"`+")
_ROUNDS = 6


def _safe_destination(text: str, start: int) -> bool:
    """Whether the link target starting at ``text[start]`` is plainly http/https/mailto or relative."""
    match = _DESTINATION.match(text, start)
    assert match is not None  # the pattern matches the empty string
    target = match.group(1)
    # An entity or escape could spell a scheme; a target on the next line is not looked for: unsafe.
    return bool(target) and not re.search(r"[\\&]", target) and safe_url(target)


def _neutralise_span(text: str, code_spans: bool) -> str:
    """One stretch of inline text with HTML and unsafe link targets escaped; code spans kept."""
    runs: dict[int, list[int]] = {}
    if code_spans:
        for run in _BACKTICKS.finditer(text):
            runs.setdefault(len(run.group(0)), []).append(run.start())
    out: list[str] = []
    done = 0
    position = 0
    while (match := _SPECIAL.search(text, position)) is not None:
        i = match.start()
        char = text[i]
        if char == "\\":
            position = i + 2 if text[i + 1 : i + 2] in _PUNCTUATION else i + 1
            continue
        if char == "`":
            opener = _BACKTICKS.match(text, i)
            assert opener is not None
            length = opener.end() - i
            starts = runs.get(length, [])
            later = bisect_right(starts, i)
            position = starts[later] + length if code_spans and later < len(starts) else i + length
            continue
        if char == "<":
            autolink = _SAFE_AUTOLINK.match(text, i)
            if autolink is not None:
                position = autolink.end()
                continue
            out += [text[done:i], "&lt;"]
        else:  # "]": a link destination or a reference definition follows?
            follower = text[i + 1 : i + 2]
            if follower not in ("(", ":") or _safe_destination(text, i + 2):
                position = i + 1
                continue
            # An entity, not a backslash: no renderer reads "&#40;" as link syntax (mistune does not honour
            # "\\]" after a nested link, so an escaped bracket still made a javascript: link there).
            out += [text[done : i + 1], "&#40;" if follower == "(" else "&#58;"]
            done = position = i + 2
            continue
        done = position = i + 1
    out.append(text[done:])
    return "".join(out)


def _table_row(line: str) -> str:
    """A table row: code spans cannot cross cells (cells are split first), so each cell is scanned."""
    cells = re.split(r"(?<!\\)(\|)", line)
    return "".join(cell if cell == "|" else _neutralise_span(cell, True) for cell in cells)


def _rewrite(text: str) -> str:
    lines = text.split("\n")
    kinds: list[str] = ["text"] * len(lines)  # text: scanned without code spans (escape all)
    spans: dict[int, int] = {}
    table_rows: set[int] = set()
    for token in _BLOCKS.parse(text):
        if token.map is None:
            continue
        start, end = token.map
        if token.type in ("fence", "code_block"):
            kinds[start:end] = ["code"] * (end - start)
        elif token.type == "table_open":
            table_rows.update(range(start, end))
        elif token.type == "inline" and start not in table_rows:
            spans[start] = max(spans.get(start, start), end)
    out: list[str] = []
    index = 0
    while index < len(lines):
        if kinds[index] == "code":
            out.append(lines[index])
            index += 1
        elif index in table_rows:
            out.append(_table_row(lines[index]))
            index += 1
        elif index in spans:
            end = spans[index]
            out.append(_neutralise_span("\n".join(lines[index:end]), True))
            index = end
        else:
            out.append(_neutralise_span(lines[index], False))
            index += 1
    return "\n".join(out)


def _inert(tokens: list[Token]) -> bool:
    for token in tokens:
        if token.type in ("html_block", "html_inline"):
            return False
        for name in ("href", "src"):
            url = token.attrs.get(name)
            if url is not None and url != "" and not safe_url(str(url)):
                return False
        if token.children and not _inert(token.children):
            return False
    return True


def inert_markdown(text: str) -> str:
    """Agent Markdown with no active HTML: raw HTML shown as text, unsafe links as their text.

    Code spans and code blocks stay verbatim; everything else renders as the agent wrote it. Checked
    against markdown-it-py with raw HTML enabled; text that would fail the check, or too costly to
    parse (``md_html.too_costly`` with ``AGENT_MARKDOWN_LIMIT``), is fenced whole.
    """
    # Tabs expanded: a tab's width depends on where the text is pasted (a quote, a list item), which
    # could turn indented code (inert) into a paragraph or an HTML block there.
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd").expandtabs(4)
    if too_costly(text, AGENT_MARKDOWN_LIMIT):
        return "\n".join(_md_fence(text))
    try:
        for _ in range(_ROUNDS):
            rewritten = _rewrite(text)
            if rewritten == text:
                break
            text = rewritten
        else:
            raise ValueError("the rewrite did not settle")
        if _inert(_CHECK.parse(text)):
            return text
        raise ValueError("active HTML left after the rewrite")
    except Exception:  # never raise into a render; a fence is inert whatever it holds
        log.exception("agent Markdown could not be made inert; shown as code")
        return "\n".join(_md_fence(text))


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
    """Agent Markdown made inert, with a fence it left open closed (streaming replies stop mid-block)."""
    text = inert_markdown(text.rstrip()).rstrip()
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
            diff = labels.diff(content.old_text, content.new_text)
            path = content.path or "diff"
            header = ["--- /dev/null" if content.old_text is None else f"--- {path}", f"+++ {path}"]
            shown = list(diff.shown)
            if diff.total > len(diff.shown):
                shown.append(f"… {diff.total - len(diff.shown):,} more lines")
            if diff.truncated:
                body.append(f"- _{_md_escape(diff.truncated)}_")
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
    if entry.dropped:
        extra.insert(0, f"_… {entry.dropped:,} more characters not kept (over the limit)_")
    if entry.role == "user":
        attached = [
            f"- {labels.ATTACHMENT_ICON} {_md_escape(labels.attachment_text(a))}" for a in entry.attachments
        ]
        extra = (["", *attached] if attached else []) + extra
        # A blank line after the label: text right under a paragraph line would continue it, and an
        # indented code block there would stop being code.
        return _quote(["**You:**", "", *_md_balanced(entry.text).splitlines(), *extra])
    if entry.role == "agent":
        return "\n\n".join(part for part in (_md_balanced(entry.text), *extra) if part)
    return _quote(["_Thinking:_", "", *_md_balanced(entry.text).splitlines()])


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
    """The transcript as GitHub-flavoured Markdown (no raw HTML of ours; fences always balanced).

    The whole result is checked once more with raw HTML on (pieces that are inert alone could combine);
    a transcript that fails, or whose text or Markdown is over ``TRANSCRIPT_MARKDOWN_LIMIT`` (making it
    inert would stall the kernel), is given as its plain-text form in a fence: inert whatever it holds."""
    if _text_size(state) > TRANSCRIPT_MARKDOWN_LIMIT or len(state.entries) > TRANSCRIPT_MARKDOWN_ENTRIES:
        # Many small entries (20,000 tool calls) make a long Markdown even with little text: composing
        # and checking it would stall the kernel, so it is fenced like a long text, before composing.
        return _fenced_text(state, title=title, meta=meta, label=label)
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
    result = "\n\n".join(parts) + "\n"
    if too_costly(result, TRANSCRIPT_MARKDOWN_LIMIT):
        return _fenced_text(state, title=title, meta=meta, label=label)
    if not _inert(_CHECK.parse(result)):
        log.warning("a transcript's Markdown was not inert as a whole; saved as plain text in a fence")
        return _fenced_text(state, title=title, meta=meta, label=label)
    return result


TRANSCRIPT_MARKDOWN_LIMIT = 150_000  # characters of agent and tool text in one transcript
TRANSCRIPT_MARKDOWN_ENTRIES = 1_000  # entries: markdown-it needs ~0.3 s per 1,000 list items


def _text_size(state: TranscriptState) -> int:
    size = 0
    for entry in state.entries:
        if isinstance(entry, MessageEntry):
            size += len(entry.text)
        elif isinstance(entry, ToolEntry):
            for item in entry.content:
                size += len(item.old_text or "") + len(item.new_text or "")
                size += len(item.content.text or "") if item.content is not None else 0
    return size


def _fenced_text(state: TranscriptState, *, title: str | None, meta: str | None, label: str | None) -> str:
    return "\n".join(_md_fence(transcript_text(state, title=title, meta=meta, label=label))) + "\n"
