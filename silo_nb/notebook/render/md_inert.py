"""Agent Markdown made inert, and the small Markdown writers every card and the transcript share.

- :func:`inert_markdown`: agent Markdown keeps its Markdown but carries no active HTML: wherever it is
  rendered, even by a renderer with raw HTML on, no tag, comment or event attribute of the agent's
  becomes HTML and no link or image points anywhere but http/https/mailto or a relative URL.
- :func:`md_balanced`: the same, with a fence the agent left open (a reply cut mid-stream) closed, from
  the same parser the HTML uses (``md_html.unclosed_fence``); :func:`md_fence` makes our own fences
  longer than any backtick run they enclose; :func:`md_escape` neutralizes our inline fields (titles,
  plan steps, labels), JupyterLab's ``$`` math included, on one line.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_right

from markdown_it import MarkdownIt
from markdown_it.token import Token

from silo_nb.notebook.render.md_html import AGENT_MARKDOWN_LIMIT, safe_url, too_costly, unclosed_fence

__all__ = [
    "inert_markdown",
    "is_inert",
    "md_balanced",
    "md_code",
    "md_escape",
    "md_fence",
    "md_indent",
    "md_quote",
]

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


def is_inert(markdown: str) -> bool:
    """Whether ``markdown``, parsed with raw HTML on, holds no HTML and no unsafe link or image."""
    return _inert(_CHECK.parse(markdown))


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
        return "\n".join(md_fence(text))
    try:
        for _ in range(_ROUNDS):
            rewritten = _rewrite(text)
            if rewritten == text:
                break
            text = rewritten
        else:
            raise ValueError("the rewrite did not settle")
        if is_inert(text):
            return text
        raise ValueError("active HTML left after the rewrite")
    except Exception:  # never raise into a render; a fence is inert whatever it holds
        log.exception("agent Markdown could not be made inert; shown as code")
        return "\n".join(md_fence(text))


def md_escape(text: str) -> str:
    """Inline text with Markdown (and JupyterLab math) syntax neutralized, on one line."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def md_code(text: str) -> str:
    """An inline code span that survives backticks in ``text``."""
    text = " ".join(text.split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def md_fence(text: str, info: str = "") -> list[str]:
    """``text`` in a fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    ticks = "`" * (longest + 1)
    return [ticks + info, *text.splitlines(), ticks]


def md_balanced(text: str) -> str:
    """Agent Markdown made inert, with a fence it left open closed (streaming replies stop mid-block)."""
    text = inert_markdown(text.rstrip()).rstrip()
    closer = unclosed_fence(text)
    return f"{text}\n{closer}" if closer else text


def md_quote(lines: list[str]) -> str:
    return "\n".join(f"> {line}".rstrip() for line in lines)


def md_indent(lines: list[str], prefix: str = "  ") -> list[str]:
    return [f"{prefix}{line}".rstrip() for line in lines]
