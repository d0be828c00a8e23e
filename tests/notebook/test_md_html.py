"""Agent Markdown → HTML (markdown-it-py): constructs, escaping, safe links, highlighting, speed, totality."""

from __future__ import annotations

import random
import re

import pytest

from silo_nb.notebook.render import markdown_to_html, unclosed_fence
from silo_nb.notebook.render.md_html import safe_url
from tests.work import calls, growth

ALLOWED_TAGS = {
    "p", "br", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "code", "ul", "ol", "li", "blockquote", "hr",
    "em", "strong", "s", "a", "table", "thead", "tbody", "tr", "th", "td", "span",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"href", "title", "target", "rel", "class", "start", "style"}
TAG = re.compile(r"<(/?)([^\s>/]+)([^>]*)>")
ATTRIBUTE = re.compile(r'\s([a-z-]+)="([^"]*)"')


def md(text: str, *, styled: bool = False) -> str:
    """The HTML without markdown-it's newlines between tags (easier to compare)."""
    return re.sub(r"(?<=>)\n(?=<)", "", markdown_to_html(text, styled=styled))


def assert_only_our_markup(html: str) -> None:
    """Every tag is one the converter makes, with known attributes; every href is a safe one."""
    for match in TAG.finditer(html):
        assert match.group(2) in ALLOWED_TAGS, match.group(0)
        attributes = match.group(3)
        assert TAG.sub("", attributes) == attributes
        for name, value in ATTRIBUTE.findall(attributes):
            assert name in ALLOWED_ATTRIBUTES, match.group(0)
            if name == "href":
                lowered = value.lower()
                assert not re.match(r"[^/?#]*:", lowered) or lowered.startswith(
                    ("http:", "https:", "mailto:")
                ), value
        leftover = ATTRIBUTE.sub("", attributes).strip()
        assert leftover in ("", "/"), match.group(0)
        if match.group(2) == "a" and not match.group(1):
            assert 'rel="noopener noreferrer"' in attributes and 'target="_blank"' in attributes


# -- blocks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", range(1, 7))
def test_atx_headings(level: int) -> None:
    assert md("#" * level + " Title *x*") == f"<h{level}>Title <em>x</em></h{level}>"


def test_heading_details() -> None:
    assert md("## Closed ##") == "<h2>Closed</h2>"
    assert md("####### seven") == "<p>####### seven</p>"
    assert md("#hashtag") == "<p>#hashtag</p>"
    assert md("Title\n=====\n\nSub\n---") == "<h1>Title</h1><h2>Sub</h2>"


def test_headings_have_explicit_size_and_weight() -> None:
    """Bare headings look different in a widget and an output area: the style says both."""
    sizes = set()
    for level in range(1, 7):
        style = re.search(r'<h\d style="([^"]*)"', md("#" * level + " T", styled=True))
        assert style is not None
        assert "font-weight:600" in style.group(1)
        size = re.search(r"font-size:([\d.]+)em", style.group(1))
        assert size is not None
        sizes.add(float(size.group(1)))
    assert max(sizes) > 1.2 and len(sizes) >= 5


def test_paragraphs_soft_and_hard_breaks() -> None:
    assert md("one\ntwo\n\nthree") == "<p>one\ntwo</p><p>three</p>"
    assert md("one  \ntwo") == "<p>one<br>\ntwo</p>"
    assert md("one\\\ntwo") == "<p>one<br>\ntwo</p>"  # a backslash hard break, new with CommonMark
    assert md("one \ntwo") == "<p>one\ntwo</p>"  # a single space is not a break
    assert md("end  ") == "<p>end</p>"
    assert md("a\r\nb\r\n\r\nc") == "<p>a\nb</p><p>c</p>"
    assert md("") == ""
    assert md("\n\n  \n") == ""


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_fenced_code(fence: str) -> None:
    html = md(f"before\n{fence}python\nif a < b:\n    x = '&'\n{fence}\nafter")
    assert html == (
        "<p>before</p>"
        "<pre><code class=\"language-python\">if a &lt; b:\n    x = '&amp;'</code></pre>"
        "<p>after</p>"
    )


def test_fence_details() -> None:
    assert md("```\nplain\n```") == "<pre><code>plain</code></pre>"
    # A shorter or different fence does not close; the info string's first word is the language.
    assert (
        md("````md title\n```\ninner\n```\n````")
        == '<pre><code class="language-md">```\ninner\n```</code></pre>'
    )
    assert md("~~~\n```\n~~~") == "<pre><code>```</code></pre>"
    # Markdown inside code stays literal.
    assert md("```\n# not a heading\n*x*\n```") == "<pre><code># not a heading\n*x*</code></pre>"
    # A hostile language is reduced to safe characters.
    assert 'class="language-xonload"' in md('```x"onload\ncode\n```')
    assert 'class="language-xonload"' in md('```x"onload\ncode\n```', styled=True)


def test_indented_code_and_entities_now_work() -> None:
    assert md("    indented <code>\n    more") == "<pre><code>indented &lt;code&gt;\nmore</code></pre>"
    assert md("&amp; &copy; &#35; &lt;b&gt; &bogus;") == "<p>&amp; © # &lt;b&gt; &amp;bogus;</p>"


def test_unterminated_fence_runs_to_the_end() -> None:
    assert md("Here:\n\n```python\nprint(1)\n\n") == (
        '<p>Here:</p><pre><code class="language-python">print(1)</code></pre>'
    )
    assert md("```") == "<pre><code></code></pre>"
    assert md("~~~sh\n# comment\n- item") == '<pre><code class="language-sh"># comment\n- item</code></pre>'


def test_unclosed_fence() -> None:
    assert unclosed_fence("") is None
    assert unclosed_fence("```py\nx") == "```"
    assert unclosed_fence("```py\nx\n\n\n") == "```"
    assert unclosed_fence("````\n```\n") == "````"
    assert unclosed_fence("~~~\nx\n~~~\n```") == "```"
    assert unclosed_fence("```py\nx\n```") is None
    assert unclosed_fence("text with ``` inline") is None
    # A fence in a quote ends with it (the blank line before the next part ends the quote).
    assert unclosed_fence("> ```\n> code") is None
    # In a list item: one that the item's end closed needs nothing; an open one is closed *inside* the
    # item (indented like its opening line), or the closer would open a new block at the top level.
    assert unclosed_fence("- item\n  ```\n  code\nnext paragraph") is None
    assert unclosed_fence("- item\n  ```\n  code") == "  ```"
    assert unclosed_fence("1. a\n   - b\n     ~~~~\n     x\n\n") == "     ~~~~"


@pytest.mark.parametrize(
    "text", ["```py\nx", "- item\n  ```\n  code", "> quote\n\n1. a\n   ````\n   x ```", "~~~\n```\n"]
)
def test_closing_an_unclosed_fence_really_closes_it(text: str) -> None:
    closer = unclosed_fence(text)
    assert closer is not None
    html = md(f"{text}\n{closer}\n\n**after**")
    assert html.endswith("<p><strong>after</strong></p>")
    assert unclosed_fence(f"{text}\n{closer}\n\n**after**") is None


def test_bullet_lists() -> None:
    for bullet in "-*+":
        assert md(f"{bullet} a\n{bullet} **b**") == "<ul><li>a</li><li><strong>b</strong></li></ul>"
    # Another bullet char starts another list (as on GitHub).
    assert md("- a\n* b") == "<ul><li>a</li></ul><ul><li>b</li></ul>"
    assert md("text\n- item") == "<p>text</p><ul><li>item</li></ul>"


def test_ordered_lists() -> None:
    assert md("1. one\n2. two") == "<ol><li>one</li><li>two</li></ol>"
    assert md("3) three\n4) four") == '<ol start="3"><li>three</li><li>four</li></ol>'
    # Only "1." interrupts a paragraph: "in 2024. that" stays text.
    assert md("we met in\n2024. that was") == "<p>we met in\n2024. that was</p>"


def test_nested_lists_and_continuations() -> None:
    html = md("- a\n  - a1\n  - a2\n- b\n  continued\n1. x\n   - x1")
    assert html == (
        "<ul><li>a\n<ul><li>a1</li><li>a2</li></ul></li><li>b\ncontinued</li></ul>"
        "<ol><li>x\n<ul><li>x1</li></ul></li></ol>"
    )
    # CommonMark: under "1. " a bullet must be indented three spaces to nest; two make a new list.
    assert md("1. x\n  - y") == "<ol><li>x</li></ol><ul><li>y</li></ul>"
    # A code block inside an item.
    assert md("- run:\n  ```sh\n  make\n  ```\n- done") == (
        '<ul><li>run:<pre><code class="language-sh">make</code></pre></li><li>done</li></ul>'
    )


def test_loose_lists_get_paragraphs_and_task_boxes_get_glyphs() -> None:
    assert md("- a\n\n- b") == "<ul><li><p>a</p></li><li><p>b</p></li></ul>"
    assert (
        md("- [ ] todo\n- [x] done\n- [X] also") == "<ul><li>☐ todo</li><li>☑ done</li><li>☑ also</li></ul>"
    )
    assert "<input" not in md("- [ ] todo", styled=True)


def test_blockquotes() -> None:
    assert md("> quoted *x*\n> more\nlazy") == "<blockquote><p>quoted <em>x</em>\nmore\nlazy</p></blockquote>"
    assert md("> a\n>\n> > inner") == "<blockquote><p>a</p><blockquote><p>inner</p></blockquote></blockquote>"
    assert md("> # Title\n> - item") == "<blockquote><h1>Title</h1><ul><li>item</li></ul></blockquote>"


def test_deep_nesting_keeps_the_text() -> None:
    """markdown-it drops blocks nested beyond its limit; such text is shown plain, nothing lost."""
    html = md(">" * 5000 + " deep\n\nafter")
    assert "deep" in html and "after" in html
    assert html.count("<blockquote>") < 50
    html = md("\n".join("  " * depth + f"- x{depth}" for depth in range(500)) + "\n\nafter")
    assert "x499" in html and "after" in html
    assert html.count("<ul>") < 50
    # Ordinary nesting is still Markdown.
    assert md("\n".join("  " * depth + "- x" for depth in range(8))).count("<ul>") == 8


@pytest.mark.parametrize("rule", ["---", "***", "___", "- - -", " *  *  * "])
def test_horizontal_rules(rule: str) -> None:
    assert md(f"above\n\n{rule}\n\nbelow") == "<p>above</p><hr><p>below</p>"


def test_tables() -> None:
    html = md("| a | b | c |\n|:--|:-:|--:|\n| 1 | **2** | `3` |\n| 4 |")
    assert html == (
        '<table><thead><tr><th style="text-align:left">a</th><th style="text-align:center">b</th>'
        '<th style="text-align:right">c</th></tr></thead><tbody><tr><td style="text-align:left">1</td>'
        '<td style="text-align:center"><strong>2</strong></td><td style="text-align:right"><code>3</code>'
        '</td></tr><tr><td style="text-align:left">4</td><td style="text-align:center"></td>'
        '<td style="text-align:right"></td></tr></tbody></table>'
    )
    assert md("a | b\n--|--").startswith("<table><thead><tr><th>a</th><th>b</th>")
    assert md("not | a table\n---") == "<h2>not | a table</h2>"
    # Styled: the alignment and our cell style are joined into one valid declaration list.
    styled = md("| a |\n|:-:|\n| 1 |", styled=True)
    assert re.search(r'<th style="text-align:center;border:[^"]+">a</th>', styled)
    assert re.search(r'<td style="text-align:center;border:[^"]+">1</td>', styled)


# -- inline ------------------------------------------------------------------------------------------


def test_inline_code() -> None:
    assert md("use `a < b` here") == "<p>use <code>a &lt; b</code> here</p>"
    assert md("``code with ` tick``") == "<p><code>code with ` tick</code></p>"
    assert md("`` `x` ``") == "<p><code>`x`</code></p>"
    assert md("`*not em*`") == "<p><code>*not em*</code></p>"
    assert md("an ` unmatched tick") == "<p>an ` unmatched tick</p>"


def test_emphasis() -> None:
    assert md("**bold** *it* _it_ __bold__") == (
        "<p><strong>bold</strong> <em>it</em> <em>it</em> <strong>bold</strong></p>"
    )
    assert md("***both***") == "<p><em><strong>both</strong></em></p>"
    assert md("*a **b** c*") == "<p><em>a <strong>b</strong> c</em></p>"
    assert md("~~gone~~") == "<p><s>gone</s></p>"
    # Underscores inside words stay (snake_case); lone and unbalanced markers stay text.
    assert md("snake_case_name and 2 * 3 * 4") == "<p>snake_case_name and 2 * 3 * 4</p>"
    assert md("**unclosed and *also") == "<p>**unclosed and *also</p>"
    assert md("\\*literal\\* \\_x\\_") == "<p>*literal* _x_</p>"
    # Emphasis across a soft line break.
    assert md("*one\ntwo*") == "<p><em>one\ntwo</em></p>"


def test_links() -> None:
    assert md("[site](https://example.com/a?b=1&c=2)") == (
        '<p><a href="https://example.com/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">'
        "site</a></p>"
    )
    html = md('[a](http://x.y "Title") [m](mailto:me@x.y) [r](./docs/a.md) [h](#part) [`c` *e*](/p)')
    assert '<a href="http://x.y" title="Title"' in html
    assert '<a href="mailto:me@x.y"' in html
    assert '<a href="./docs/a.md"' in html
    assert '<a href="#part"' in html
    assert "><code>c</code> <em>e</em></a>" in html
    assert md("[wiki](https://en.wikipedia.org/wiki/A_(b))").count("A_(b)") == 1
    assert md("<https://example.com/x>") == (
        '<p><a href="https://example.com/x" target="_blank" rel="noopener noreferrer">https://example.com/x</a></p>'
    )
    assert '<a href="mailto:me@x.y"' in md("<me@x.y>")
    # No links inside links; unmatched brackets stay.
    assert md("[a [b](http://x) c](http://y)").count("<a ") == 1
    assert md("[just brackets] and ]") == "<p>[just brackets] and ]</p>"
    # Styled links keep the attributes and get a colour.
    styled = md("[x](http://x)", styled=True)
    assert 'target="_blank" rel="noopener noreferrer"' in styled and 'style="color:' in styled
    assert_only_our_markup(styled)


def test_reference_links_now_work() -> None:
    html = md('See [the docs][ref] and [ref].\n\n[ref]: https://e.com/d "Docs"')
    assert (
        html.count('<a href="https://e.com/d" title="Docs" target="_blank" rel="noopener noreferrer">') == 2
    )
    assert "[ref]:" not in html


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "jav\tascript:alert(1)",
        "\x01javascript:alert(1)",
        "vbscript:msgbox(1)",
        "data:text/html;base64,PHNjcmlwdD4=",
        "data:image/png;base64,iVBORw0KGgo=",
        "file:///etc/passwd",
        "<javascript:alert(1)>",
        "&#106;avascript:alert(1)",
        "java%09script:alert(1)",
    ],
)
def test_unsafe_links_are_inert(url: str) -> None:
    for text in (
        f"[click]({url}) <{url}>",
        f"[click][r]\n\n[r]: {url}",  # reference-style
        f"![click]({url})",
        f"[click]\n\n[click]: <{url}>",
    ):
        for styled in (False, True):
            html = markdown_to_html(text, styled=styled)
            assert "<a " not in html, text
            assert "click" in html
            assert_only_our_markup(html)


def test_safe_url() -> None:
    for url in ("http://x", "HTTPS://x/y?a=b:c", "mailto:a@b", "/p:x", "./a:b", "#h", "?q=a:b", "rel"):
        assert safe_url(url), url
    for url in ("javascript:x", "data:x", "vbscript:x", "file:x", "java%09script:x", "a b", "\x00", ""):
        assert not safe_url(url), url


def test_images_become_links_to_http_sources() -> None:
    html = md("![alt *x*](https://e.com/i.png) ![](http://e.com/a.png) ![r](/rel.png)")
    assert "<img" not in html
    assert (
        '<a href="https://e.com/i.png" title="image" target="_blank" rel="noopener noreferrer">alt x</a>'
        in html
    )
    assert ">http://e.com/a.png</a>" in html  # no alt text: the URL is the label
    assert html.endswith(" r</p>")  # a relative source: the alt text only
    assert_only_our_markup(html)
    assert "<img" not in md('![x](https://e.com/i.png "t" onerror=alert(1))', styled=True)


def test_hrefs_and_titles_are_escaped() -> None:
    html = md('[x](http://a.b/"onmouseover="alert(1)) [y](/p \'a"b\')')
    assert 'href="http://a.b/%22onmouseover=%22alert(1)"' in html
    assert 'title="a&quot;b"' in html
    assert_only_our_markup(html)


def test_raw_html_is_shown_as_text() -> None:
    html = md('<script>alert("x")</script>\n\n<img src=x onerror=alert(1)> & <b>bold</b>')
    assert "<script" not in html
    assert "<img" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html
    assert_only_our_markup(html)
    assert md("# <i>t</i>") == "<h1>&lt;i&gt;t&lt;/i&gt;</h1>"
    assert md("| <b> |\n|---|\n| <script> |").count("&lt;") == 2
    assert md("nul\x00byte") == "<p>nul\ufffdbyte</p>"
    styled = md("<style>p{}</style>\n\n```html\n<script>x</script>\n```", styled=True)
    assert "<style" not in styled and "<script" not in styled
    assert_only_our_markup(styled)


def test_styled_output_uses_inline_styles_only() -> None:
    html = md("# T\n\n> q\n\n`c`\n\n```\nx\n```\n\n|a|\n|-|\n|b|\n\n- l", styled=True)
    assert "<style" not in html
    for tag in ("pre", "code", "blockquote", "h1", "p", "table", "th", "td", "ul"):
        assert f'<{tag} style="' in html, tag
    assert_only_our_markup(html)
    assert "style=" not in md("# T\n\n> q\n\n`c`")


def test_fenced_code_is_highlighted_when_styled() -> None:
    html = md("```python\ndef f(x):\n    return 'a' # note <b>\n```", styled=True)
    assert re.search(r'<span style="color:[^"]+">def</span>', html)
    assert re.search(
        r'<span style="color:[^"]+">&#x27;a&#x27;</span>|<span style="color:[^"]+">\'a\'</span>', html
    )
    assert "# note &lt;b&gt;" in html and "<b>" not in html
    # Unknown or missing language: plain, escaped.
    assert md("```nosuchlang\n<x> & y\n```", styled=True).count("<span") == 0
    assert "&lt;x&gt; &amp; y" in md("```nosuchlang\n<x> & y\n```", styled=True)
    assert "<span" not in md("```\nif x: pass\n```", styled=True)
    # Colours are mid-tones or opacity, never a fixed light-theme background.
    assert "background:#" not in html


def test_agent_reply_sample() -> None:
    reply = (
        "## Silo demo agent\n\nYou said: **hello**\n\n"
        "- This reply is scripted.\n- Keywords to try: `edit`, `plan`.\n\n"
        '```python\ndef greet(name: str) -> str:\n    return f"Hello, {name}!"\n```\n'
    )
    assert md(reply) == (
        "<h2>Silo demo agent</h2><p>You said: <strong>hello</strong></p>"
        "<ul><li>This reply is scripted.</li>"
        "<li>Keywords to try: <code>edit</code>, <code>plan</code>.</li></ul>"
        '<pre><code class="language-python">def greet(name: str) -&gt; str:\n'
        '    return f"Hello, {name}!"</code></pre>'
    )


# -- robustness --------------------------------------------------------------------------------------

SECTION = (
    "## Step\n\nSome *emphasis*, **strong**, `code`, [a link](https://example.com/?a=1&b=2) and "
    "snake_case names.  \nA second line.\n\n- one\n- two\n  - nested\n\n> a quote\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nfor i in range(10):\n    print(i)\n```\n\n"
)


def test_a_long_reply_converts_in_linear_work() -> None:
    """Work counted in calls, not seconds (issue 21; markdown-it-py's speed, about 1.6 s/MB of such text,
    is a benchmark's business): 200 kB converts, and four times the text is about four times the work."""
    text = (SECTION * (200_000 // len(SECTION) + 1))[:200_000]
    html = markdown_to_html(text, styled=True)
    assert html.count("<h2") > 400
    assert growth(lambda n: markdown_to_html(SECTION * n, styled=True), 20) < 8


@pytest.mark.parametrize(
    "text",
    ["*" * 1_000_000, "`" * 1_000_000, "[x](http://y" + "(" * 1_000_000],
    ids=["nested-stars", "backticks", "parens"],
)
def test_one_megabyte_of_nested_delimiters_takes_the_plain_path(text: str) -> None:
    """A megabyte of one delimiter never reaches the parser: a few hundred calls, whatever its length."""
    assert calls(markdown_to_html, text) < 2_000


@pytest.mark.parametrize(
    ("unit", "size"),
    [
        ("*a ", 7_500),
        ("_a_b ", 5_000),
        ("[", 7_500),
        ("`a ``b ", 4_000),
        ("![", 2_500),  # markdown-it-py spends ~50 µs per "![" (linear: see below)
        ("<https://a", 7_500),
    ],
    ids=["stars", "underscores", "brackets", "backticks", "images", "autolinks"],
)
def test_pathological_inline_input_is_linear(unit: str, size: int) -> None:
    """Four times the input is about four times the work (quadratic would be sixteen): calls counted."""
    assert growth(lambda n: markdown_to_html(unit * n), size) < 6


def test_never_raises_on_junk() -> None:
    rng = random.Random(20240611)
    alphabet = [
        *"*_~`[]()!<>&\"'#>-+=|:\\ \t\n\n1.x",
        "```",
        "~~~",
        "    ",
        "http://",
        "javascript:",
        "é",
        "\x00",
        "&#106;",
        "](",
    ]
    for _ in range(400):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 120)))
        html = markdown_to_html(text)
        assert isinstance(html, str)
        assert_only_our_markup(html)
        assert_only_our_markup(markdown_to_html(text, styled=True))
        unclosed_fence(text)


def test_deterministic() -> None:
    text = "# a\n\n*b* [c](http://d) `e`\n\n- f\n- g"
    assert markdown_to_html(text) == markdown_to_html(text)
