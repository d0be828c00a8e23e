"""Property tests for the renderers (HTML, Markdown, text): any transcript renders without raising or
hanging, and no agent text becomes active HTML — no ``<script>`` (or other unexpected element), no
``on…=`` attribute, no link or source other than http/https/mailto/relative. Markdown is checked as the
worst renderer would show it: markdown-it-py and mistune with raw HTML on (issue 8, item 10).

Agent text may still *contain* the characters ``javascript:`` as shown text; what is checked is that
nothing made of them is a live element, attribute or link.
"""

from __future__ import annotations

import html.parser
import re
from typing import Any

import mistune
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from silo_nb.notebook.render import (
    entry_html,
    static_bundle,
    transcript_html,
    transcript_markdown,
    transcript_text,
    turn_header_html,
)
from silo_nb.updates.parse import MessageIdSynthesizer
from silo_nb.updates.transcript import TranscriptState, fold_all, with_status
from tests.property.strategies import as_update, examples, hostile_text, wire_updates, within

# Elements silo_nb's HTML and Markdown-made HTML contain; anything else came from agent text.
ALLOWED_TAGS = {
    "div", "span", "pre", "code", "details", "summary", "i", "b", "p", "em", "strong", "a", "img", "ul",
    "ol", "li", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "br", "table", "thead", "tbody",
    "tr", "th", "td", "s", "del",
}  # fmt: skip
_SCHEME = re.compile(r"^([^/?#]*):")
_INVISIBLE = re.compile(r"[\x00-\x20\x7f]")


class ActiveHtml(html.parser.HTMLParser):
    """Collects every way an HTML string could run code or load something a transcript must not."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.problems.append(f"element <{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"event attribute {name}= on <{tag}>")
            # The parser has decoded entities, as a browser does; browsers also ignore controls/space.
            seen = _INVISIBLE.sub("", value or "").lower()
            if name in ("href", "src", "action", "formaction", "xlink:href", "srcset", "poster"):
                scheme = _SCHEME.match(seen)
                if scheme is not None and scheme.group(1) not in ("http", "https", "mailto"):
                    self.problems.append(f"{name}={seen[:40]!r} on <{tag}>")
            if name == "style" and ("url(" in seen or "expression(" in seen or "javascript:" in seen):
                self.problems.append(f"style {seen[:60]!r}")

    def handle_comment(self, data: str) -> None:
        self.problems.append("comment")

    def handle_pi(self, data: str) -> None:
        self.problems.append("processing instruction")

    def unknown_decl(self, data: str) -> None:
        self.problems.append("declaration")

    def handle_decl(self, decl: str) -> None:
        self.problems.append("doctype")


def assert_inert_html(markup: str) -> None:
    checker = ActiveHtml()
    checker.feed(markup)
    checker.close()
    assert not checker.problems, (checker.problems, markup[:2000])


def worst_markdown_renders(markdown: str) -> list[str]:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    careless = mistune.create_markdown(escape=False, plugins=["table", "strikethrough"])
    return [md.render(markdown), str(careless(markdown))]


def state_of(wires: list[dict[str, Any]], status: str, error: str | None) -> TranscriptState:
    ids = MessageIdSynthesizer()
    updates = [ids.apply(u) for u in map(as_update, wires) if u is not None]
    state = fold_all(updates)
    if status != "running":
        state = with_status(state, status, stop_reason="end_turn", error=error)  # type: ignore[arg-type]
    return state


states = st.builds(
    state_of,
    st.lists(wire_updates, max_size=8),
    st.sampled_from(["running", "done", "error", "cancelled"]),
    st.none() | hostile_text,
)
labels = st.none() | hostile_text


@settings(max_examples=examples(150))
@given(states, labels, labels, labels)
def test_html_renders_anything_and_nothing_is_active(
    state: TranscriptState, title: str | None, meta: str | None, label: str | None
) -> None:
    with within(10):
        whole = transcript_html(state, title=title, meta=meta, label=label)
        pieces = [entry_html(entry) for entry in state.entries]
        header = turn_header_html(state, label=label or "agent", elapsed=1.5)
    for markup in (whole, header, *pieces):
        assert_inert_html(markup)


@settings(max_examples=examples(150))
@given(states, labels, labels, labels)
def test_markdown_and_text_render_anything_and_the_markdown_is_inert(
    state: TranscriptState, title: str | None, meta: str | None, label: str | None
) -> None:
    with within(10):
        markdown = transcript_markdown(state, title=title, meta=meta, label=label)
        text = transcript_text(state, title=title, meta=meta, label=label)
        rendered = worst_markdown_renders(markdown)
    assert isinstance(text, str)
    for markup in rendered:
        assert_inert_html(markup)


@settings(max_examples=examples(60))
@given(states, labels)
def test_the_static_bundle_is_inert_in_every_form(state: TranscriptState, label: str | None) -> None:
    with within(10):
        data, _ = static_bundle(state, metadata={"silo_nb": {"x": 1}}, title="T", label=label)
    assert set(data) >= {"text/html", "text/markdown", "text/plain"}
    assert_inert_html(data["text/html"])
    for markup in worst_markdown_renders(data["text/markdown"]):
        assert_inert_html(markup)


ACTIVE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="java&#115;cript:alert(1)">x</a>',
    '<a href="java\tscript:alert(1)">x</a>',
    "<!-- c -->",
    '<div style="background:url(javascript:alert(1))">',
    "[x](javascript:alert(1))",
]


def test_the_checker_sees_active_html() -> None:
    """The properties above mean something only if the checker catches what they rule out."""
    for source in ACTIVE:
        caught = []
        for markup in (source, *worst_markdown_renders(source)):
            checker = ActiveHtml()
            checker.feed(markup)
            checker.close()
            caught.append(bool(checker.problems))
        assert any(caught), source
