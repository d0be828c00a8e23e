"""Agent Markdown → HTML with markdown-it-py: CommonMark, tables, strikethrough; safe and self-contained.

- CommonMark mode with raw HTML disabled: ``<script>`` or ``<img onerror=…>`` in a reply is shown as
  text. Every attribute goes through markdown-it's escaping; nothing the agent writes opens a tag.
- Links: only ``http:``, ``https:``, ``mailto:`` and relative URLs (no other scheme, no control
  characters): markdown-it's ``validateLink`` is replaced by :func:`safe_url`, which also covers
  reference definitions and autolinks, and the link rule checks the href again before writing it.
  Every link opens in a new tab with ``rel="noopener noreferrer"``.
- Images are never loaded (no tracking pixels, saved notebooks stay self-contained): an image becomes a
  link to its (http/https) source, labelled with its alt text.
- ``styled=True`` gives every element an inline style from ``styles.MD_STYLES`` (headings get size and
  weight, so a reply looks the same in a widget and in a static output area) and highlights fenced and
  indented code with Pygments; the default is bare tags.
- GFM task boxes (``- [x] done``) become glyphs, not form controls.
- markdown-it-py is linear on pathological input (1 MB of nested ``*``, ``[`` or backticks) and caps
  nesting: text nested deeper than ``maxNesting`` (which markdown-it would silently drop) is shown as
  plain text. :func:`markdown_to_html` never raises (a bug shows the text in ``<pre>``).
- :func:`unclosed_fence` tells a Markdown writer which fence line closes a block the agent left open
  (streaming replies stop mid-block), from the same parser, so the export stays valid.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.code import code_block_html, lexer_for_language

__all__ = [
    "AGENT_MARKDOWN_LIMIT",
    "agent_markdown_html",
    "markdown_cost",
    "markdown_to_html",
    "safe_url",
    "too_costly",
    "unclosed_fence",
]

log = logging.getLogger("silo_nb.notebook.render")

_SAFE_SCHEMES = ("http", "https", "mailto")
_SCHEME = re.compile(r"^([^/?#]*):")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")
_LANG_JUNK = re.compile(r"[^\w+#.\-]")
_TASK_BOXES = {"[ ] ": "☐ ", "[x] ": "☑ ", "[X] ": "☑ "}
_MAX_NESTING = 20  # markdown-it drops blocks beyond it (shown plain instead); "[" costs grow with it
_LINK_ATTRS = (("target", "_blank"), ("rel", "noopener noreferrer"))
# Longer agent text is shown whole but plain (HTML) or fenced (Markdown): markdown-it-py needs ~1.4 s per
# MB, four times that on text dense with ``*``/``_``/``[`` (:func:`too_costly` weighs them), too long for
# a kernel re-rendering a live turn.
AGENT_MARKDOWN_LIMIT = 100_000


def safe_url(url: str) -> bool:
    """Whether a link target is http/https/mailto or relative, with no whitespace or control characters.

    A colon before the first ``/``, ``?`` or ``#`` means a scheme (browsers also read ``java%09script:``
    that way in some contexts), so anything but the three schemes is refused.
    """
    if not url or _CONTROL.search(url):
        return False
    scheme = _SCHEME.match(url)
    return scheme is None or scheme.group(1).lower() in _SAFE_SCHEMES


class _SafeMarkdownIt(MarkdownIt):
    def validateLink(self, url: str) -> bool:  # markdown-it's name
        return safe_url(url)


def _parser() -> _SafeMarkdownIt:
    options = {"html": False, "xhtmlOut": False, "breaks": False, "maxNesting": _MAX_NESTING}
    md = _SafeMarkdownIt("commonmark", options)
    md.enable(["table", "strikethrough"])
    md.disable(["html_inline", "html_block"])  # off already with html=False; not even tried (~10% faster)
    md.add_render_rule("fence", _render_code)
    md.add_render_rule("code_block", _render_code)
    md.add_render_rule("link_open", _render_link_open)
    md.add_render_rule("image", _render_image)
    return md


def _styled(env: Any) -> bool:
    return bool(isinstance(env, dict) and env.get("styled"))


def _render_code(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    info = html.unescape(token.info).strip() if token.type == "fence" else ""
    language = _LANG_JUNK.sub("", info.split()[0])[:40] if info else ""
    code = token.content.rstrip("\n")
    if _styled(env):
        return code_block_html(code, lexer_for_language(language), language=language) + "\n"
    attrs = f' class="language-{html.escape(language, quote=True)}"' if language else ""
    return f"<pre><code{attrs}>{html.escape(code, quote=False)}</code></pre>\n"


def _render_link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    href = token.attrGet("href")
    if not isinstance(href, str) or not safe_url(href):  # markdown-it validated it; check again anyway
        token.attrs.pop("href", None)
    for name, value in _LINK_ATTRS:
        token.attrSet(name, value)
    return str(self.renderToken(tokens, idx, options, env))


def _render_image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """An image as a link to its source (never loaded); the alt text (or the URL) is the label."""
    token = tokens[idx]
    src = token.attrGet("src")
    alt = self.renderInlineAsText(token.children or [], options, env)
    if not isinstance(src, str) or not src.lower().startswith(("http://", "https://")) or not safe_url(src):
        return html.escape(alt, quote=False)
    label = html.escape(alt or src, quote=False)
    style = f' style="{styles.MD_STYLES["a"]}"' if _styled(env) else ""
    attrs = "".join(f' {name}="{value}"' for name, value in _LINK_ATTRS)
    return f'<a href="{html.escape(src, quote=True)}" title="image"{attrs}{style}>{label}</a>'


def _decorate(tokens: list[Token], styled: bool) -> None:
    """Task boxes to glyphs; with ``styled``, each tag's inline style (joined to markdown-it's own)."""
    for index, token in enumerate(tokens):
        if (
            token.type == "inline"
            and index >= 2
            and tokens[index - 2].type == "list_item_open"
            and token.children
            and token.children[0].type == "text"
        ):
            first = token.children[0]
            box = _TASK_BOXES.get(first.content[:4])
            if box is not None:
                first.content = box + first.content[4:]
        if not styled:
            continue
        style = styles.MD_STYLES.get(token.tag) if token.nesting >= 0 else None
        if style and token.type not in ("fence", "code_block"):
            own = token.attrGet("style")
            token.attrSet("style", f"{own};{style}" if own else style)
        if token.children:
            _decorate(token.children, styled)


_MD = _parser()


def _plain(text: str, styled: bool) -> str:
    """Text too deeply nested for the parser (it would lose the rest): shown as it is, escaped."""
    style = f"white-space:pre-wrap;{styles.MD_STYLES['p']}" if styled else "white-space:pre-wrap"
    return f'<p style="{style}">{html.escape(text, quote=False)}</p>'


def markdown_to_html(text: str, *, styled: bool = False) -> str:
    """``text`` (Markdown) as an HTML fragment; everything escaped, never raises."""
    if not isinstance(text, str):
        text = str(text)
    try:
        env: dict[str, Any] = {"styled": styled}
        tokens = _MD.parse(text, env)
        if any(token.level >= _MAX_NESTING - 1 for token in tokens):
            return _plain(text, styled)
        _decorate(tokens, styled)
        return str(_MD.renderer.render(tokens, _MD.options, env)).rstrip("\n")
    except Exception:  # a bug here must never break a transcript: show the text instead
        log.exception("Markdown rendering failed; showing the text as is")
        return f"<pre>{html.escape(text)}</pre>"


# markdown-it-py's time grows with emphasis delimiters and brackets far more than with other characters
# (100 KB of prose: 0.14 s; of nested `*`/`_`: 0.59 s; of `[`: 0.43 s, measured): each counts as this many.
_DELIMITER_COST = 7
_BRACKET_COST = 13


def markdown_cost(text: str) -> int:
    """About how long markdown-it-py takes on ``text``, in characters of ordinary prose."""
    delimiters = text.count("*") + text.count("_")
    return len(text) + _DELIMITER_COST * delimiters + _BRACKET_COST * text.count("[")


def too_costly(text: str, limit: int) -> bool:
    """Whether ``text`` is longer than ``limit`` characters, or would take a parser as long as one and a
    half times that much prose: shown plain (or fenced) instead, never a stalled kernel."""
    return len(text) > limit or markdown_cost(text) > limit * 3 // 2


def agent_markdown_html(text: str) -> str:
    """An agent's Markdown as styled HTML, or as plain text when parsing it would cost too much."""
    if too_costly(text, AGENT_MARKDOWN_LIMIT):
        return f'<div style="white-space:pre-wrap">{html.escape(text)}</div>'
    return markdown_to_html(text, styled=True)


def unclosed_fence(text: str) -> str | None:
    """The line that closes a code block left open at the end of ``text`` (``None``: none open).

    It is the fence's own characters, indented like the opening fence so that it also closes a fence
    inside a list item. A fence inside a blockquote needs none: the blank line before the next part
    ends the quote, and the fence with it.
    """
    try:
        tokens = _MD.parse(text)
    except Exception:
        log.exception("Markdown parsing failed; assuming no open fence")
        return None
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    quotes = 0
    for token in tokens:
        if token.type == "blockquote_open":
            quotes += 1
        elif token.type == "blockquote_close":
            quotes -= 1
        elif token.type == "fence" and token.map is not None and not quotes:
            start, end = token.map
            body_lines = token.content.count("\n") + (
                not token.content.endswith("\n") and bool(token.content)
            )
            closed = end - start == body_lines + 2  # the opening line, the body, the closing line
            if closed or any(line.strip() for line in lines[end:]):
                continue
            opening = lines[start]
            prefix = opening[: max(opening.find(token.markup), 0)]
            return "".join(ch if ch == "\t" else " " for ch in prefix) + token.markup
    return None
