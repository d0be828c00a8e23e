"""Syntax highlighting with Pygments, as inline-styled HTML that reads in light and dark themes.

- Tokens are coloured from :data:`~silo_nb.notebook.render.styles.TOKEN_STYLES` (mid-tone colours,
  comments by opacity, everything else ``inherit``), never from a Pygments stylesheet: the output must
  be self-contained, and a fixed light-theme palette would be unreadable on a dark background.
- Adjacent tokens with the same style share one ``<span>``, so highlighted code stays compact.
- The language comes from a fence's info string (:func:`lexer_for_language`) or a file name
  (:func:`lexer_for_filename`); an unknown one gives plain, escaped text. Lexer look-ups are cached:
  Pygments scans its whole registry on each.
- Highlighting is linear but not free: code beyond :data:`HIGHLIGHT_LIMIT` characters is shown plain.
"""

from __future__ import annotations

import html
import logging
import os
from functools import lru_cache
from typing import Any

from pygments.lexer import Lexer  # type: ignore[import-untyped]
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename  # type: ignore[import-untyped]
from pygments.util import ClassNotFound  # type: ignore[import-untyped]

from silo_nb.notebook.render import styles

__all__ = ["HIGHLIGHT_LIMIT", "code_block_html", "highlight", "lexer_for_filename", "lexer_for_language"]

log = logging.getLogger("silo_nb.notebook.render")

HIGHLIGHT_LIMIT = 100_000  # characters of one code block worth colouring


@lru_cache(maxsize=128)
def lexer_for_language(language: str) -> Lexer | None:
    """The lexer for a fence's language name (``py``, ``python3``, ``ts``…), None when unknown."""
    name = language.strip().lower()
    if not name or len(name) > 40:
        return None
    try:
        return get_lexer_by_name(name, stripnl=False)
    except ClassNotFound:
        return None


@lru_cache(maxsize=256)
def _lexer_for_basename(basename: str) -> Lexer | None:
    try:
        return get_lexer_for_filename(basename, stripnl=False)
    except ClassNotFound:
        return None


def lexer_for_filename(path: str | None) -> Lexer | None:
    """The lexer for a file path (by its name only), None when Pygments has none."""
    if not path:
        return None
    basename = os.path.basename(path.replace("\\", "/").rstrip("/"))
    return _lexer_for_basename(basename) if basename else None


@lru_cache(maxsize=512)
def _style_for(token_type: Any) -> str:
    """The inline style of a Pygments token type (untyped: its class is private to pygments.token)."""
    current: Any = token_type
    while current is not None:
        style = styles.TOKEN_STYLES.get(str(current)[len("Token.") :])
        if style is not None:
            return style
        current = current.parent
    return ""


def highlight(code: str, lexer: Lexer | None) -> str:
    """``code`` as escaped HTML with coloured ``<span>`` s (no wrapper); plain when no lexer.

    Lexers see the code with a final newline (some drop an unterminated last line otherwise); if the
    tokens do not give back exactly the code, the plain text is shown instead: nothing is ever lost.
    """
    if lexer is None or len(code) > HIGHLIGHT_LIMIT:
        return html.escape(code, quote=False)
    runs: list[tuple[str, str]] = []
    try:
        for token_type, value in lexer.get_tokens(code if code.endswith("\n") else code + "\n"):
            style = _style_for(token_type)
            if runs and runs[-1][0] == style:
                runs[-1] = (style, runs[-1][1] + value)
            else:
                runs.append((style, value))
    except Exception:  # a lexer bug must not break a transcript
        log.exception("highlighting with %s failed", getattr(lexer, "name", lexer))
        return html.escape(code, quote=False)
    if runs and not code.endswith("\n") and runs[-1][1].endswith("\n"):
        runs[-1] = (runs[-1][0], runs[-1][1][:-1])
    if "".join(text for _, text in runs) != code:
        return html.escape(code, quote=False)
    return "".join(_span(style, text) for style, text in runs)


def _span(style: str, text: str) -> str:
    escaped = html.escape(text, quote=False)
    return f'<span style="{style}">{escaped}</span>' if style and text.strip() else escaped


def code_block_html(code: str, lexer: Lexer | None, *, language: str = "") -> str:
    """A ``<pre><code>`` block, highlighted when a lexer is known; ``language`` becomes its class."""
    attrs = f' class="language-{html.escape(language, quote=True)}"' if language else ""
    code_html = highlight(code, lexer)
    inner = f'<code{attrs} style="{styles.CODE_IN_PRE}">{code_html}</code>'
    return f'<pre style="{styles.CODE_PRE}">{inner}</pre>'
