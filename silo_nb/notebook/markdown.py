"""A small, safe Markdown → HTML converter for agent replies.

- Safety first: every piece of the input reaches the output through ``html.escape``; raw HTML is shown as
  text, links are made only for http/https/mailto and relative URLs (no control characters), and every
  attribute value is escaped. Nothing the agent writes can open a tag of its own.
- Two passes, both linear-ish: a line-based block pass (fences, ATX/setext headings, rules, blockquotes,
  lists with nesting and task boxes, GFM tables, paragraphs) and, per block, one left-to-right scan of
  the already-escaped text (code spans, ``\\`` escapes, ``<https://…>`` autolinks, links, and
  ``**``/``*``/``_``/``~~`` delimiters matched through per-char opener stacks, so unmatched ones cost
  nothing). Nesting is capped at :data:`MAX_DEPTH`; a 1 MB reply converts in well under a second.
- Streaming friendly: an unterminated fence runs to the end of the text; :func:`unclosed_fence` tells a
  Markdown writer which fence to close before appending more.
- ``styled=True`` adds small inline styles (code, quotes, tables, headings) for places with no
  stylesheet, such as an ipywidgets ``HTML`` value; the default output is plain tags.
- Deterministic and total: :func:`markdown_to_html` never raises (a last-resort fallback shows the text
  escaped in a ``<pre>``).
"""

from __future__ import annotations

import re
import string
import unicodedata
from bisect import bisect_right
from html import escape, unescape

__all__ = ["MAX_DEPTH", "markdown_to_html", "unclosed_fence"]

MAX_DEPTH = 12  # nested blockquotes/lists beyond this are shown as plain paragraphs
_MAX_URL = 2048

_STYLES = {
    "pre": "background:rgba(127,127,127,.12);padding:6px 8px;border-radius:4px;overflow-x:auto;"
    "margin:.4em 0;tab-size:4",
    "code": "background:rgba(127,127,127,.15);padding:0 .25em;border-radius:3px",
    "blockquote": "margin:.4em 0;padding:0 0 0 .8em;border-left:3px solid rgba(127,127,127,.45);opacity:.9",
    "table": "border-collapse:collapse;margin:.4em 0",
    "th": "border:1px solid rgba(127,127,127,.35);padding:2px 6px;background:rgba(127,127,127,.1)",
    "td": "border:1px solid rgba(127,127,127,.35);padding:2px 6px",
    "hr": "border:none;border-top:1px solid rgba(127,127,127,.4);margin:.6em 0",
    "p": "margin:.4em 0",
    "ul": "margin:.3em 0;padding-left:1.6em",
    "ol": "margin:.3em 0;padding-left:1.6em",
    "h1": "font-size:1.3em;margin:.6em 0 .3em",
    "h2": "font-size:1.2em;margin:.6em 0 .3em",
    "h3": "font-size:1.1em;margin:.5em 0 .3em",
    "h4": "font-size:1em;margin:.5em 0 .2em",
    "h5": "font-size:1em;margin:.5em 0 .2em",
    "h6": "font-size:1em;margin:.5em 0 .2em;opacity:.8",
}

_ASCII_PUNCT = frozenset(string.punctuation)
_INLINE_SPECIAL = re.compile(r"[`*_~\[\]!\\\n]|&(?=lt;(?:https?://|mailto:))", re.IGNORECASE)
_URL_PLAIN = re.compile(r"[^\s\[\]()\\&\x00-\x1f\x7f]{1,2048}")
_BULLETS = ("-", "*", "+")
_TASK_BOXES = {"[ ] ": "☐ ", "[x] ": "☑ ", "[X] ": "☑ "}
_BLOCK_STARTS = frozenset("#>`~-*+_|0123456789 ")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BACKTICKS = re.compile(r"`+")
_AUTOLINK = re.compile(
    r"&lt;((?:https?://|mailto:)(?:[^\s&]|&amp;|&quot;|&#x27;){1,2048})&gt;", re.IGNORECASE
)
_UNESCAPE_PUNCT = re.compile(r"\\([!-/:-@\[-`{-~])")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_DELIM_CELL = re.compile(r"^:?-+:?$")
_LANG_JUNK = re.compile(r"[^\w+#.\-]")
_HARD_BREAK = "\x00"  # marks a two-space line ending inside a paragraph (input NULs are replaced)


# -- block helpers -----------------------------------------------------------------------------------


def _expand_indent(line: str) -> str:
    """Leading tabs become 4-column stops; the rest of the line is untouched."""
    if "\t" not in line[: len(line) - len(line.lstrip(" \t")) + 1]:
        return line
    body = line.lstrip(" \t")
    return line[: len(line) - len(body)].expandtabs(4) + body


def _fence_open(s: str) -> tuple[str, int, str] | None:
    """(char, length, info) when ``s`` (left-stripped) opens a fence."""
    char = s[:1]
    if char not in ("`", "~"):
        return None
    length = len(s) - len(s.lstrip(char))
    if length < 3:
        return None
    info = s[length:].strip()
    if char == "`" and "`" in info:
        return None
    return char, length, info


def _fence_closes(s: str, char: str, length: int) -> bool:
    body = s.strip()
    return len(body) >= length and body == char * len(body)


def _track_fence(state: tuple[str, int] | None, line: str) -> tuple[str, int] | None:
    """The open fence (char, length) after ``line``, given the one before it."""
    s = line.lstrip(" ")
    if state is None:
        fence = _fence_open(s)
        return None if fence is None else (fence[0], fence[1])
    return None if _fence_closes(s, *state) else state


def unclosed_fence(text: str) -> str | None:
    """The fence line that closes a code block left open at the end of ``text`` (``None``: none open).

    Containers are approximated the CommonMark way: a fence opened in a blockquote ends with the quote
    (so it needs no closing line once a blank line follows), and one indented by 2+ columns (a list
    item) ends at the first non-blank line indented less than it.
    """
    open_fence: tuple[str, int, int, bool] | None = None  # char, length, indent, quoted
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = _expand_indent(raw)
        s = line.lstrip(" ")
        indent = len(line) - len(s)
        if open_fence is not None:
            char, length, fence_indent, quoted = open_fence
            if quoted:
                ended = not s.startswith(">")
            else:
                ended = fence_indent >= 2 and bool(s.strip()) and indent < fence_indent
            if not ended:
                body = s.lstrip("> ") if quoted else s
                if _fence_closes(body, char, length):
                    open_fence = None
                continue
            open_fence = None
        quoted = s.startswith(">")
        fence = _fence_open(s.lstrip("> ") if quoted else s)
        if fence is not None:
            open_fence = (fence[0], fence[1], indent, quoted)
    if open_fence is None or open_fence[3]:
        return None
    return open_fence[0] * open_fence[1]


def _heading(s: str) -> tuple[int, str] | None:
    level = len(s) - len(s.lstrip("#"))
    if not 1 <= level <= 6:
        return None
    rest = s[level:]
    if rest and rest[0] not in " \t":
        return None
    rest = rest.strip()
    without = rest.rstrip("#")
    if without != rest and (not without or without[-1] in " \t"):
        rest = without.rstrip()
    return level, rest


def _is_rule(s: str) -> bool:
    compact = "".join(s.split())
    return len(compact) >= 3 and compact[0] in "-*_" and compact == compact[0] * len(compact)


def _list_marker(s: str) -> tuple[str, int, int] | None:
    """(list kind, marker width, start number) when ``s`` (left-stripped) starts a list item.

    The kind is the bullet char (``-``, ``*``, ``+``) or the ordered delimiter (``.``, ``)``): as in
    CommonMark, a different one starts a new list.
    """
    first = s[:1]
    if first in ("-", "*", "+") and (len(s) == 1 or s[1] in " \t"):
        return first, 1, 0
    digits = 0
    while digits < len(s) and digits < 10 and "0" <= s[digits] <= "9":
        digits += 1
    if 1 <= digits <= 9 and s[digits : digits + 1] in (".", ")"):
        after = s[digits + 1 : digits + 2]
        if after in ("", " ", "\t"):
            return s[digits], digits + 1, int(s[:digits])
    return None


def _split_row(s: str) -> list[str]:
    body = s.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", body)]


def _table_aligns(header: str, delimiter: str) -> list[str] | None:
    """Column alignments when ``header`` + ``delimiter`` start a GFM table."""
    if "|" not in header or "|" not in delimiter:
        return None
    cells = _split_row(delimiter)
    if not cells or not all(_DELIM_CELL.match(cell) for cell in cells):
        return None
    if len(_split_row(header)) != len(cells):
        return None
    aligns = []
    for cell in cells:
        left, right = cell.startswith(":"), cell.endswith(":")
        aligns.append("center" if left and right else "right" if right else "left" if left else "")
    return aligns


def _interrupts(s: str) -> bool:
    """Whether a left-stripped line starts a block that ends a paragraph."""
    if not s:
        return False
    if _fence_open(s) or _heading(s) or s.startswith(">") or _is_rule(s):
        return True
    marker = _list_marker(s)
    if marker is None or not s[marker[1] :].strip():
        return False
    return marker[0] in _BULLETS or marker[2] == 1


# -- inline ------------------------------------------------------------------------------------------


_SPACE, _PUNCT, _OTHER = 0, 1, 2


def _classify(ch: str) -> int:
    if not ch or ch.isspace() or ch == _HARD_BREAK:
        return _SPACE
    if ch in _ASCII_PUNCT or unicodedata.category(ch).startswith("P"):
        return _PUNCT
    return _OTHER


_CLASSES = {chr(code): _classify(chr(code)) for code in range(256)} | {"": _SPACE}


def _char_class(ch: str) -> int:
    """For the flanking rules: the text edge and whitespace, punctuation, anything else."""
    known = _CLASSES.get(ch)
    return _classify(ch) if known is None else known


def _safe_url(escaped: str) -> bool:
    """Whether an (escaped) link target is http/https/mailto or relative, with no control characters."""
    url = unescape(escaped)
    if not url or _CONTROL.search(url):
        return False
    scheme = _SCHEME.match(url)
    return scheme is None or scheme.group(1).lower() in ("http", "https", "mailto")


def _link_destination(text: str, start: int) -> tuple[str, str | None, int] | None:
    """Parse ``(url "title")`` at ``text[start] == "("`` in escaped text: (url, title, end after ``)``)."""
    n = len(text)
    i = start + 1
    while i < n and text[i] in " \t\n":
        i += 1
    begin, depth = i, 0
    while i < n and i - begin <= _MAX_URL:
        plain = _URL_PLAIN.match(text, i)
        if plain is not None:
            i = plain.end()
            continue
        ch = text[i]
        if ch in " \t\n[]" or ord(ch) < 0x20 or text.startswith(("&lt;", "&gt;"), i):
            break
        if ch == "\\" and i + 1 < n and text[i + 1] in _ASCII_PUNCT:
            i += 2
            continue
        if ch == "(":
            depth += 1
            if depth > 3:
                return None
        elif ch == ")":
            if depth == 0:
                break
            depth -= 1
        i += 1
    url = text[begin:i]
    while i < n and text[i] in " \t\n":
        i += 1
    title: str | None = None
    quote = next((q for q in ("&quot;", "&#x27;") if text.startswith(q, i)), None)
    if quote is not None and i > begin + len(url):
        close = text.find(quote, i + len(quote), i + _MAX_URL)
        if close < 0:
            return None
        title = text[i + len(quote) : close]
        i = close + len(quote)
        while i < n and text[i] in " \t\n":
            i += 1
    if i >= n or text[i] != ")":
        return None
    return _UNESCAPE_PUNCT.sub(r"\1", url), title, i + 1


_OPEN, _CLOSE = 1, 2


def _link_open(url: str, title: str | None) -> str:
    """``url`` and ``title`` are already escaped (they come from the escaped text)."""
    title_attr = f' title="{title}"' if title else ""
    return f'<a href="{url}"{title_attr} target="_blank" rel="noopener noreferrer">'


class _Inline:
    """One inline scan over escaped text, producing HTML.

    Delimiter runs and open brackets live in flat lists of ints and strings rather than one object
    each, so a paragraph of a million ``*`` gives the garbage collector nothing to walk.
    """

    def __init__(self, text: str, code_tag: str) -> None:
        self.text = text
        self.code_tag = code_tag
        self.nodes: list[str] = []
        # delimiter runs: their node, char, chars left, _OPEN|_CLOSE flags, tags they open and close
        self.d_node: list[int] = []
        self.d_char: list[str] = []
        self.d_count: list[int] = []
        self.d_flags: list[int] = []
        self.d_opens: list[str] = []
        self.d_closes: list[str] = []
        # open brackets: their node and how many delimiters came before; those below floor are inactive
        self.b_node: list[int] = []
        self.b_delim: list[int] = []
        self.b_floor = 0

    def run(self) -> str:
        text, nodes = self.text, self.nodes
        runs: dict[int, list[int]] = {}
        if "`" in text:
            for match in _BACKTICKS.finditer(text):
                runs.setdefault(match.end() - match.start(), []).append(match.start())
        n, i = len(text), 0
        for found in _INLINE_SPECIAL.finditer(text):
            j = found.start()
            if j < i:
                continue  # inside something already consumed (a code span, a link, a run)
            if j > i:
                nodes.append(text[i:j])
            ch = text[j]
            i = j + 1
            if ch in "*_~":
                i = self.delimiter(j)
            elif ch == "\n":
                nodes.append("<br>\n" if j > 0 and text[j - 1] == _HARD_BREAK else " ")
            elif ch == "`":
                i = self.code_span(j, runs)
            elif ch == "\\":
                nxt = text[j + 1 : j + 2]
                if nxt and nxt in _ASCII_PUNCT:
                    nodes.append(nxt)
                    i = j + 2
                else:
                    nodes.append("\\")
            elif ch == "[" or (ch == "!" and text[j + 1 : j + 2] == "["):
                self.b_node.append(len(nodes))
                self.b_delim.append(len(self.d_char))
                nodes.append("[" if ch == "[" else "![")
                i = j + len(nodes[-1])
            elif ch == "]":
                i = self.close_bracket(j)
            elif ch == "&" and (auto := _AUTOLINK.match(text, j)) is not None and _safe_url(auto.group(1)):
                nodes.append(f"{_link_open(auto.group(1), None)}{auto.group(1)}</a>")
                i = auto.end()
            else:  # "&" of an entity, a lone "!"
                nodes.append(ch)
        if i < n:
            nodes.append(text[i:])
        self.resolve(0)
        for k, node in enumerate(self.d_node):
            nodes[node] = self.d_closes[k] + self.d_char[k] * self.d_count[k] + self.d_opens[k]
        return "".join(nodes).replace(_HARD_BREAK, "")

    def code_span(self, j: int, runs: dict[int, list[int]]) -> int:
        text = self.text
        end = j
        while end < len(text) and text[end] == "`":
            end += 1
        positions = runs.get(end - j, [])
        k = bisect_right(positions, end - 1)  # the next run of exactly this length closes the span
        if k == len(positions):
            self.nodes.append(text[j:end])
            return end
        close = positions[k]
        code = text[end:close].replace(_HARD_BREAK, "").replace("\n", " ")
        if len(code) > 2 and code[0] == code[-1] == " " and code.strip():
            code = code[1:-1]
        self.nodes.append(f"{self.code_tag}{code}</code>")
        return close + end - j

    def delimiter(self, j: int) -> int:
        """Record the run of ``*``/``_``/``~`` at ``j`` (plain text when it can neither open nor close)."""
        text = self.text
        ch, end = text[j], j + 1
        while end < len(text) and text[end] == ch:
            end += 1
        before = _char_class(text[j - 1 : j])
        after = _char_class(text[end : end + 1])
        left = after != _SPACE and (after != _PUNCT or before != _OTHER)
        right = before != _SPACE and (before != _PUNCT or after != _OTHER)
        if ch == "_":  # no intraword emphasis with "_": snake_case stays as is
            left, right = left and (not right or before == _PUNCT), right and (not left or after == _PUNCT)
        flags = (_OPEN if left else 0) | (_CLOSE if right else 0)
        if not flags or (ch == "~" and end - j != 2):
            self.nodes.append(text[j:end])
            return end
        self.d_node.append(len(self.nodes))
        self.d_char.append(ch)
        self.d_count.append(end - j)
        self.d_flags.append(flags)
        self.d_opens.append("")
        self.d_closes.append("")
        self.nodes.append("")  # filled in by run()
        return end

    def resolve(self, first: int) -> None:
        """Match closers with the nearest opener of the same char, from delimiter ``first`` on.

        Openers between a matched pair are dropped (they stay text); afterwards these delimiters are
        inert, so an enclosing scope (the text around a link) does not match them again.
        """
        stacks: dict[str, list[int]] = {"*": [], "_": [], "~": []}
        count, flags = self.d_count, self.d_flags
        for k in range(first, len(count)):
            char = self.d_char[k]
            stack = stacks[char]
            while flags[k] & _CLOSE and count[k] and stack:
                opener = stack[-1]
                use = 2 if count[opener] >= 2 and count[k] >= 2 else 1
                tag = "del" if char == "~" else "strong" if use == 2 else "em"
                self.d_opens[opener] = f"<{tag}>{self.d_opens[opener]}"
                self.d_closes[k] += f"</{tag}>"
                count[opener] -= use
                count[k] -= use
                for other in stacks.values():
                    while other and other[-1] > opener:
                        other.pop()
                if not count[opener]:
                    stack.pop()
            if flags[k] & _OPEN and count[k]:
                stack.append(k)
        for k in range(first, len(flags)):
            flags[k] = 0

    def close_bracket(self, j: int) -> int:
        """Handle ``]`` at ``j``: a link when the bracket is active and a safe ``(url)`` follows."""
        text, nodes = self.text, self.nodes
        if not self.b_node:
            nodes.append("]")
            return j + 1
        node, first_delim = self.b_node.pop(), self.b_delim.pop()
        active = len(self.b_node) >= self.b_floor
        self.b_floor = min(self.b_floor, len(self.b_node))
        parsed = _link_destination(text, j + 1) if active and text[j + 1 : j + 2] == "(" else None
        if parsed is None or not _safe_url(parsed[0]):
            nodes.append("]")
            return j + 1
        url, title, end = parsed
        self.resolve(first_delim)
        if nodes[node] == "[":
            self.b_floor = len(self.b_node)  # no links inside links
        nodes[node] = _link_open(url, title)
        nodes.append("</a>")
        return end


class _Converter:
    def __init__(self, styled: bool) -> None:
        self.styled = styled

    def tag(self, name: str, attrs: str = "") -> str:
        style = _STYLES.get(name) if self.styled else None
        return f'<{name}{attrs} style="{style}">' if style else f"<{name}{attrs}>"

    def inline(self, raw: str) -> str:
        """Inline Markdown of one block. The text is escaped first; every tag in the result is ours."""
        text = escape(raw)
        if _INLINE_SPECIAL.search(text) is None:
            return text.replace(_HARD_BREAK, "")
        return _Inline(text, self.tag("code")).run()

    # -- blocks ----------------------------------------------------------------------------------

    def blocks(self, lines: list[str], depth: int, tight: bool = False) -> list[str]:
        out: list[str] = []
        i, n = 0, len(lines)
        while i < n:
            line = lines[i]
            s = line.lstrip(" ")
            if not s.strip():
                i += 1
                continue
            indent = len(line) - len(s)
            fence = _fence_open(s)
            heading = _heading(s) if fence is None else None
            marker = _list_marker(s) if fence is None and heading is None else None
            if fence is not None:
                i = self.fenced(lines, i, indent, fence, out)
            elif heading is not None:
                level, body = heading
                out.append(f"{self.tag(f'h{level}')}{self.inline(body)}</h{level}>")
                i += 1
            elif _is_rule(s):
                out.append(self.tag("hr"))
                i += 1
            elif s.startswith(">"):
                i = self.blockquote(lines, i, depth, out)
            elif marker is not None:
                i = self.list_block(lines, i, depth, out)
            elif i + 1 < n and (aligns := _table_aligns(s, lines[i + 1])) is not None:
                i = self.table(lines, i, aligns, out)
            else:
                i = self.paragraph(lines, i, tight, out)
        return out

    def fenced(
        self, lines: list[str], i: int, indent: int, fence: tuple[str, int, str], out: list[str]
    ) -> int:
        char, length, info = fence
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            line = lines[j]
            j += 1
            if _fence_closes(line, char, length) and len(line) - len(line.lstrip(" ")) < indent + 4:
                break
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
        else:  # unterminated (a reply still streaming): no trailing blank lines
            while body and not body[-1].strip():
                body.pop()
        lang = _LANG_JUNK.sub("", info.split()[0])[:40] if info else ""
        attrs = f' class="language-{escape(lang)}"' if lang else ""
        code = escape("\n".join(body).replace(_HARD_BREAK, ""))
        out.append(f"{self.tag('pre')}<code{attrs}>{code}</code></pre>")
        return j

    def blockquote(self, lines: list[str], i: int, depth: int, out: list[str]) -> int:
        inner: list[str] = []
        fence: tuple[str, int] | None = None
        j = i
        while j < len(lines):
            s = lines[j].lstrip(" ")
            if s.startswith(">"):
                body = s[1:]
                inner.append(body[1:] if body.startswith(" ") else body)
            elif (
                fence is None
                and s.strip()
                and inner
                and inner[-1].strip()
                and not _interrupts(s)
                and _list_marker(s) is None
            ):
                inner.append(s)  # lazy continuation of the quoted paragraph
            else:
                break
            fence = _track_fence(fence, inner[-1])
            j += 1
        if depth >= MAX_DEPTH:
            out.append(f"{self.tag('p')}{escape(' '.join(part.strip() for part in inner))}</p>")
        else:
            body = "\n".join(self.blocks(inner, depth + 1))
            out.append(f"{self.tag('blockquote')}{body}</blockquote>")
        return j

    def list_block(self, lines: list[str], i: int, depth: int, out: list[str]) -> int:
        n = len(lines)
        first = lines[i].lstrip(" ")
        base = _list_marker(first)
        assert base is not None
        kind, _, start = base
        items: list[list[str]] = []
        loose = False
        while i < n:
            line = lines[i]
            s = line.lstrip(" ")
            marker = _list_marker(s)
            if marker is None or marker[0] != kind:
                break
            indent = len(line) - len(s)
            rest = s[marker[1] :]
            spaces = len(rest) - len(rest.lstrip(" \t"))
            if not rest.strip():
                content_indent, first_line = indent + marker[1] + 1, ""
            elif spaces > 4:
                content_indent, first_line = indent + marker[1] + 1, rest[1:]
            else:
                content_indent, first_line = indent + marker[1] + spaces, rest[spaces:]
            box = _TASK_BOXES.get(first_line[:4])
            item = [box + first_line[4:] if box else first_line]  # GFM task list: a glyph, not a form
            fence = _track_fence(None, first_line)
            nested = indent + 2
            blanks = 0
            j = i + 1
            while j < n:
                line2 = lines[j]
                s2 = line2.lstrip(" ")
                if not s2.strip():
                    blanks += 1
                    j += 1
                    continue
                indent2 = len(line2) - len(s2)
                if indent2 >= nested:
                    if blanks:
                        item.extend([""] * blanks)
                        loose = loose or fence is None
                    item.append(line2[min(indent2, content_indent) :])
                elif (
                    blanks == 0
                    and fence is None
                    and item[-1].strip()
                    and _list_marker(s2) is None
                    and not _interrupts(s2)
                    and not (j + 1 < n and _table_aligns(s2, lines[j + 1]) is not None)
                ):
                    item.append(s2)  # lazy paragraph continuation
                else:
                    break
                fence = _track_fence(fence, item[-1])
                blanks = 0
                j += 1
            items.append(item)
            i = j
            if j < n and blanks:
                following = _list_marker(lines[j].lstrip(" "))
                if following is not None and following[0] == kind:
                    loose = True
        tag = "ul" if kind in _BULLETS else "ol"
        attrs = f' start="{start}"' if tag == "ol" and start != 1 else ""
        parts = [self.tag(tag, attrs)]
        for item in items:
            if depth >= MAX_DEPTH:
                body = escape(" ".join(part.strip() for part in item))
            elif len(item) == 1 and not loose and item[0][:1] not in _BLOCK_STARTS:
                body = self.inline(item[0].strip())  # the common one-line item, without a block pass
            else:
                body = "".join(self.blocks(item, depth + 1, tight=not loose))
            parts.append(f"<li>{body}</li>")
        parts.append(f"</{tag}>")
        out.append("".join(parts))
        return i

    def table(self, lines: list[str], i: int, aligns: list[str], out: list[str]) -> int:
        def row(cells: list[str], cell_tag: str) -> str:
            padded = (cells + [""] * len(aligns))[: len(aligns)]
            rendered = []
            for cell, align in zip(padded, aligns, strict=True):
                attrs = f' align="{align}"' if align else ""
                rendered.append(f"{self.tag(cell_tag, attrs)}{self.inline(cell)}</{cell_tag}>")
            return "<tr>" + "".join(rendered) + "</tr>"

        parts = [self.tag("table"), "<thead>", row(_split_row(lines[i]), "th"), "</thead>"]
        j = i + 2
        body: list[str] = []
        while j < len(lines):
            s = lines[j].lstrip(" ")
            if not s.strip() or "|" not in s or _interrupts(s):
                break
            body.append(row(_split_row(s), "td"))
            j += 1
        if body:
            parts += ["<tbody>", *body, "</tbody>"]
        parts.append("</table>")
        out.append("".join(parts))
        return j

    def paragraph(self, lines: list[str], i: int, tight: bool, out: list[str]) -> int:
        collected: list[str] = []
        j = i
        n = len(lines)
        while j < n:
            s = lines[j].lstrip(" ")
            if not s.strip():
                break
            if collected:
                body = s.strip()
                if body and (body == "=" * len(body) or body == "-" * len(body)):
                    level = 1 if body[0] == "=" else 2
                    text = "\n".join(collected).rstrip(_HARD_BREAK)
                    out.append(f"{self.tag(f'h{level}')}{self.inline(text)}</h{level}>")
                    return j + 1
                if _interrupts(s) or (j + 1 < n and _table_aligns(s, lines[j + 1]) is not None):
                    break
            hard = s.endswith("  ")
            collected.append(s.rstrip() + (_HARD_BREAK if hard else ""))
            j += 1
        text = "\n".join(collected).rstrip(_HARD_BREAK)
        html = self.inline(text)
        out.append(html if tight else f"{self.tag('p')}{html}</p>")
        return j

    def convert(self, text: str) -> str:
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")
        lines = [_expand_indent(line) for line in text.split("\n")]
        return "\n".join(self.blocks(lines, 0))


def markdown_to_html(text: str, *, styled: bool = False) -> str:
    """``text`` (Markdown) as an HTML fragment; everything escaped, never raises."""
    if not isinstance(text, str):
        text = str(text)
    try:
        return _Converter(styled).convert(text)
    except Exception:  # a bug here must never break a transcript: show the text instead
        return f"<pre>{escape(text)}</pre>"
