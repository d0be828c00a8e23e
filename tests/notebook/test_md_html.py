"""The safe Markdown → HTML converter for agent replies: constructs, escaping, streaming, speed, totality."""

from __future__ import annotations

import random
import re
import time

import pytest

from silo_nb.notebook.render import markdown_to_html, unclosed_fence

ALLOWED_TAGS = {
    "p", "br", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "code", "ul", "ol", "li", "blockquote", "hr",
    "em", "strong", "del", "a", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"href", "title", "target", "rel", "class", "start", "align", "style"}
TAG = re.compile(r"<(/?)([^\s>/]+)([^>]*)>")
ATTRIBUTE = re.compile(r'\s([a-z-]+)="([^"]*)"')


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
                assert not re.match(r"[a-z][a-z0-9+.-]*:", lowered) or lowered.startswith(
                    ("http:", "https:", "mailto:")
                ), value
        leftover = ATTRIBUTE.sub("", attributes).strip()
        assert leftover in ("", "/", "open"), match.group(0)


# -- blocks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", range(1, 7))
def test_atx_headings(level: int) -> None:
    assert markdown_to_html("#" * level + " Title *x*") == f"<h{level}>Title <em>x</em></h{level}>"


def test_heading_details() -> None:
    assert markdown_to_html("## Closed ##") == "<h2>Closed</h2>"
    assert markdown_to_html("####### seven") == "<p>####### seven</p>"
    assert markdown_to_html("#hashtag") == "<p>#hashtag</p>"
    assert markdown_to_html("Title\n=====\n\nSub\n---") == "<h1>Title</h1>\n<h2>Sub</h2>"


def test_paragraphs_soft_and_hard_breaks() -> None:
    assert markdown_to_html("one\ntwo\n\nthree") == "<p>one two</p>\n<p>three</p>"
    assert markdown_to_html("one  \ntwo") == "<p>one<br>\ntwo</p>"
    assert markdown_to_html("one \ntwo") == "<p>one two</p>"  # a single space is not a break
    assert markdown_to_html("end  ") == "<p>end</p>"
    assert markdown_to_html("a\r\nb\r\n\r\nc") == "<p>a b</p>\n<p>c</p>"
    assert markdown_to_html("") == ""
    assert markdown_to_html("\n\n  \n") == ""


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_fenced_code(fence: str) -> None:
    html = markdown_to_html(f"before\n{fence}python\nif a < b:\n    x = '&'\n{fence}\nafter")
    assert html == (
        "<p>before</p>\n"
        '<pre><code class="language-python">if a &lt; b:\n    x = &#x27;&amp;&#x27;</code></pre>\n'
        "<p>after</p>"
    )


def test_fence_details() -> None:
    assert markdown_to_html("```\nplain\n```") == "<pre><code>plain</code></pre>"
    # A shorter or different fence does not close; the info string's first word is the language.
    html = markdown_to_html("````md title\n```\ninner\n```\n````")
    assert html == '<pre><code class="language-md">```\ninner\n```</code></pre>'
    assert markdown_to_html("~~~\n```\n~~~") == "<pre><code>```</code></pre>"
    # Markdown inside code stays literal.
    assert (
        markdown_to_html("```\n# not a heading\n*x*\n```") == "<pre><code># not a heading\n*x*</code></pre>"
    )
    # A hostile language is reduced to safe characters.
    assert 'class="language-xonload"' in markdown_to_html('```x"onload\ncode\n```')


def test_unterminated_fence_runs_to_the_end() -> None:
    assert markdown_to_html("Here:\n\n```python\nprint(1)\n\n") == (
        '<p>Here:</p>\n<pre><code class="language-python">print(1)</code></pre>'
    )
    assert markdown_to_html("```") == "<pre><code></code></pre>"
    assert (
        markdown_to_html("~~~sh\n# comment\n- item")
        == '<pre><code class="language-sh"># comment\n- item</code></pre>'
    )


def test_unclosed_fence() -> None:
    assert unclosed_fence("") is None
    assert unclosed_fence("```py\nx") == "```"
    assert unclosed_fence("````\n```\n") == "````"
    assert unclosed_fence("~~~\nx\n~~~\n```") == "```"
    assert unclosed_fence("```py\nx\n```") is None
    assert unclosed_fence("text with ``` inline") is None
    # Fences in containers end with them: a quote (needs no closer) or a list item (less indent ends it).
    assert unclosed_fence("> ```\n> code") is None
    assert unclosed_fence("- item\n  ```\n  code\nnext paragraph") is None
    assert unclosed_fence("- item\n  ```\n  code") == "```"


def test_bullet_lists() -> None:
    for bullet in "-*+":
        assert (
            markdown_to_html(f"{bullet} a\n{bullet} **b**")
            == "<ul><li>a</li><li><strong>b</strong></li></ul>"
        )
    # Another bullet char starts another list (as on GitHub).
    assert markdown_to_html("- a\n* b") == "<ul><li>a</li></ul>\n<ul><li>b</li></ul>"
    assert markdown_to_html("text\n- item") == "<p>text</p>\n<ul><li>item</li></ul>"


def test_ordered_lists() -> None:
    assert markdown_to_html("1. one\n2. two") == "<ol><li>one</li><li>two</li></ol>"
    assert markdown_to_html("3) three\n4) four") == '<ol start="3"><li>three</li><li>four</li></ol>'
    # Only "1." interrupts a paragraph: "in 2024. that" stays text.
    assert markdown_to_html("we met in\n2024. that was") == "<p>we met in 2024. that was</p>"


def test_nested_lists_and_continuations() -> None:
    html = markdown_to_html("- a\n  - a1\n  - a2\n- b\n  continued\n1. x\n   - x1")
    assert html == (
        "<ul><li>a<ul><li>a1</li><li>a2</li></ul></li><li>b continued</li></ul>\n"
        "<ol><li>x<ul><li>x1</li></ul></li></ol>"
    )
    # Numbered items often nest bullets by two spaces only.
    assert markdown_to_html("1. x\n  - y") == "<ol><li>x<ul><li>y</li></ul></li></ol>"
    # A code block inside an item.
    assert markdown_to_html("- run:\n  ```sh\n  make\n  ```\n- done") == (
        '<ul><li>run:<pre><code class="language-sh">make</code></pre></li><li>done</li></ul>'
    )


def test_loose_lists_get_paragraphs_and_task_boxes_get_glyphs() -> None:
    assert markdown_to_html("- a\n\n- b") == "<ul><li><p>a</p></li><li><p>b</p></li></ul>"
    assert markdown_to_html("- [ ] todo\n- [x] done") == "<ul><li>☐ todo</li><li>☑ done</li></ul>"


def test_blockquotes() -> None:
    assert (
        markdown_to_html("> quoted *x*\n> more\nlazy")
        == "<blockquote><p>quoted <em>x</em> more lazy</p></blockquote>"
    )
    assert (
        markdown_to_html("> a\n>\n> > inner")
        == "<blockquote><p>a</p>\n<blockquote><p>inner</p></blockquote></blockquote>"
    )
    assert (
        markdown_to_html("> # Title\n> - item")
        == "<blockquote><h1>Title</h1>\n<ul><li>item</li></ul></blockquote>"
    )


def test_deep_nesting_is_capped() -> None:
    html = markdown_to_html(">" * 5000 + " deep")
    assert "deep" in html
    assert html.count("<blockquote>") < 50
    html = markdown_to_html("\n".join("  " * depth + "- x" for depth in range(500)))
    assert html.count("<ul>") < 50


@pytest.mark.parametrize("rule", ["---", "***", "___", "- - -", " *  *  * "])
def test_horizontal_rules(rule: str) -> None:
    assert markdown_to_html(f"above\n\n{rule}\n\nbelow") == "<p>above</p>\n<hr>\n<p>below</p>"


def test_tables() -> None:
    html = markdown_to_html("| a | b | c |\n|:--|:-:|--:|\n| 1 | **2** | `3` |\n| 4 |")
    assert html == (
        '<table><thead><tr><th align="left">a</th><th align="center">b</th><th align="right">c</th></tr>'
        '</thead><tbody><tr><td align="left">1</td><td align="center"><strong>2</strong></td>'
        '<td align="right"><code>3</code></td></tr><tr><td align="left">4</td><td align="center"></td>'
        '<td align="right"></td></tr></tbody></table>'
    )
    assert markdown_to_html("a | b\n--|--").startswith("<table><thead><tr><th>a</th><th>b</th>")
    assert markdown_to_html("not | a table\n---") == "<h2>not | a table</h2>"


# -- inline ------------------------------------------------------------------------------------------


def test_inline_code() -> None:
    assert markdown_to_html("use `a < b` here") == "<p>use <code>a &lt; b</code> here</p>"
    assert markdown_to_html("``code with ` tick``") == "<p><code>code with ` tick</code></p>"
    assert markdown_to_html("`` `x` ``") == "<p><code>`x`</code></p>"
    assert markdown_to_html("`*not em*`") == "<p><code>*not em*</code></p>"
    assert markdown_to_html("an ` unmatched tick") == "<p>an ` unmatched tick</p>"


def test_emphasis() -> None:
    assert markdown_to_html("**bold** *it* _it_ __bold__") == (
        "<p><strong>bold</strong> <em>it</em> <em>it</em> <strong>bold</strong></p>"
    )
    assert markdown_to_html("***both***") == "<p><em><strong>both</strong></em></p>"
    assert markdown_to_html("*a **b** c*") == "<p><em>a <strong>b</strong> c</em></p>"
    assert markdown_to_html("~~gone~~") == "<p><del>gone</del></p>"
    # Underscores inside words stay (snake_case); lone and unbalanced markers stay text.
    assert markdown_to_html("snake_case_name and 2 * 3 * 4") == "<p>snake_case_name and 2 * 3 * 4</p>"
    assert markdown_to_html("**unclosed and *also") == "<p>**unclosed and *also</p>"
    assert markdown_to_html("\\*literal\\* \\_x\\_") == "<p>*literal* _x_</p>"
    # Emphasis across a soft line break.
    assert markdown_to_html("*one\ntwo*") == "<p><em>one two</em></p>"


def test_links() -> None:
    assert markdown_to_html("[site](https://example.com/a?b=1&c=2)") == (
        '<p><a href="https://example.com/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">'
        "site</a></p>"
    )
    html = markdown_to_html(
        '[a](http://x.y "Title") [m](mailto:me@x.y) [r](./docs/a.md) [h](#part) [`c` *e*](/p)'
    )
    assert '<a href="http://x.y" title="Title"' in html
    assert '<a href="mailto:me@x.y"' in html
    assert '<a href="./docs/a.md"' in html
    assert '<a href="#part"' in html
    assert "><code>c</code> <em>e</em></a>" in html
    assert markdown_to_html("[wiki](https://en.wikipedia.org/wiki/A_(b))").count("A_(b)") == 1
    assert markdown_to_html("<https://example.com/x>") == (
        '<p><a href="https://example.com/x" target="_blank" rel="noopener noreferrer">https://example.com/x</a></p>'
    )
    # No links inside links; unmatched brackets stay.
    assert markdown_to_html("[a [b](http://x) c](http://y)").count("<a ") == 1
    assert markdown_to_html("[just brackets] and ]") == "<p>[just brackets] and ]</p>"


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "jav\tascript:alert(1)",
        "\x01javascript:alert(1)",
        "vbscript:msgbox(1)",
        "data:text/html;base64,PHNjcmlwdD4=",
        "file:///etc/passwd",
        "<javascript:alert(1)>",
    ],
)
def test_unsafe_links_are_text(url: str) -> None:
    html = markdown_to_html(f"[click]({url}) <{url}>")
    assert "<a " not in html
    assert "click" in html
    assert_only_our_markup(html)


def test_hrefs_and_titles_are_escaped() -> None:
    html = markdown_to_html('[x](http://a.b/"onmouseover="alert(1)) [y](/p \'a"b\')')
    assert 'href="http://a.b/&quot;onmouseover=&quot;alert(1)"' in html
    assert 'title="a&quot;b"' in html
    assert_only_our_markup(html)
    # An entity cannot smuggle a scheme: the & is escaped, so the browser sees it literally.
    html = markdown_to_html("[x](&#106;avascript:alert(1))")
    assert "&amp;#106;" in html
    assert_only_our_markup(html)


def test_raw_html_is_shown_as_text() -> None:
    html = markdown_to_html('<script>alert("x")</script>\n\n<img src=x onerror=alert(1)> & <b>bold</b>')
    assert "<script" not in html
    assert "<img" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html
    assert_only_our_markup(html)
    assert markdown_to_html("# <i>t</i>") == "<h1>&lt;i&gt;t&lt;/i&gt;</h1>"
    assert markdown_to_html("| <b> |\n|---|\n| <script> |").count("&lt;") == 2
    assert markdown_to_html("nul\x00byte") == "<p>nul\ufffdbyte</p>"


def test_styled_output_uses_inline_styles_only() -> None:
    html = markdown_to_html("# T\n\n> q\n\n`c`\n\n```\nx\n```\n\n|a|\n|-|\n|b|", styled=True)
    assert "<style" not in html
    assert '<pre style="' in html
    assert '<code style="' in html
    assert '<blockquote style="' in html
    assert '<h1 style="' in html
    assert_only_our_markup(html)
    assert "style=" not in markdown_to_html("# T\n\n> q\n\n`c`")


def test_agent_reply_sample() -> None:
    reply = (
        "## Silo demo agent\n\nYou said: **hello**\n\n"
        "- This reply is scripted.\n- Keywords to try: `edit`, `plan`.\n\n"
        '```python\ndef greet(name: str) -> str:\n    return f"Hello, {name}!"\n```\n'
    )
    assert markdown_to_html(reply) == (
        "<h2>Silo demo agent</h2>\n<p>You said: <strong>hello</strong></p>\n"
        "<ul><li>This reply is scripted.</li>"
        "<li>Keywords to try: <code>edit</code>, <code>plan</code>.</li></ul>\n"
        '<pre><code class="language-python">def greet(name: str) -&gt; str:\n'
        "    return f&quot;Hello, {name}!&quot;</code></pre>"
    )


# -- robustness --------------------------------------------------------------------------------------


def test_one_megabyte_converts_quickly() -> None:
    section = (
        "## Step\n\nSome *emphasis*, **strong**, `code`, [a link](https://example.com/?a=1&b=2) and "
        "snake_case names.  \nA second line.\n\n- one\n- two\n  - nested\n\n> a quote\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nfor i in range(10):\n    print(i)\n```\n\n"
    )
    text = (section * (1_000_000 // len(section) + 1))[:1_000_000]
    start = time.perf_counter()
    html = markdown_to_html(text)
    assert time.perf_counter() - start < 2.0
    assert html.count("<h2>") > 1000


@pytest.mark.parametrize(
    "text",
    [
        "*a " * 100_000,
        "_a_b " * 60_000,
        "[" * 100_000 + "](" * 50_000,
        "`a ``b " * 40_000,
        "![" * 100_000,
        "[x](http://y" + "(" * 100_000,
        "<https://a" * 30_000,
    ],
    ids=["stars", "underscores", "brackets", "backticks", "images", "parens", "autolinks"],
)
def test_pathological_inline_input_is_linear(text: str) -> None:
    start = time.perf_counter()
    markdown_to_html(text)
    assert time.perf_counter() - start < 2.0


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
