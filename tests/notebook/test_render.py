"""Static rendering of transcripts: HTML (live widget + saved output), Markdown, plain text, bundle, badge."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from html import unescape
from typing import Any

import pytest

from silo_nb.model.models import AgentContentBlock, AgentSessionUpdate
from silo_nb.notebook.render import (
    DIFF_LINE_LIMIT,
    TOOL_TEXT_LIMIT,
    entry_html,
    markdown_to_html,
    static_bundle,
    status_badge_html,
    transcript_body_html,
    transcript_html,
    transcript_markdown,
    transcript_text,
    turn_header_html,
    unclosed_fence,
)
from silo_nb.updates.parse import parse_update
from silo_nb.updates.transcript import (
    TranscriptState,
    fold,
    fold_all,
    with_status,
)

RENDERERS = [transcript_html, transcript_markdown, transcript_text]


def wire(session_update: str, /, **fields: Any) -> AgentSessionUpdate:
    """A model built from a wire update, the way the client parses it."""
    update = parse_update({"sessionUpdate": session_update, **fields})
    assert update is not None
    return update


def text(kind: str, chunk: str, message_id: str = "m1") -> AgentSessionUpdate:
    return wire(kind, messageId=message_id, content={"type": "text", "text": chunk})


OPTIONS = [
    {"optionId": "once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "always", "name": "Allow always", "kind": "allow_always"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


@dataclass
class Asked:
    """A permission request as a session records it (``permission_request``, then its decision)."""

    tool_call_id: str
    title: str
    answer: str | None = None
    answered: bool = False
    request_id: str = field(default_factory=lambda: f"silo-permission-{next(_REQUEST_IDS)}")

    def respond(self, option_id: str) -> None:
        if not self.answered:
            known = any(o["optionId"] == option_id for o in OPTIONS)
            self.answer, self.answered = (option_id if known else None), True


_REQUEST_IDS = itertools.count(1)


def permission(tool_call_id: str, title: str, answer: str | None = None) -> Asked:
    request = Asked(tool_call_id, title)
    if answer is not None:
        request.respond(answer)
    return request


def with_permission(state: TranscriptState, request: Asked) -> TranscriptState:
    """Fold the lines a session records for ``request``: the request, and its decision once answered."""
    raw: dict[str, Any] = {
        "synthesized": True,
        "requestId": request.request_id,
        "toolCallId": request.tool_call_id,
        "title": request.title,
        "options": OPTIONS,
    }
    state = fold(state, AgentSessionUpdate(kind="permission_request", raw=raw))
    if request.answered:
        state = fold(
            state, AgentSessionUpdate(kind="permission_decision", raw={**raw, "optionId": request.answer})
        )
    return state


def with_prompt(state: TranscriptState, prompt: str) -> TranscriptState:
    """Fold the synthesized user prompt a session records before it sends a turn."""
    return fold(
        state,
        AgentSessionUpdate(
            kind="user_message_chunk",
            text=prompt,
            content=AgentContentBlock(type="text", text=prompt),
            message_id="silo-journal-user-1",
            raw={"synthesized": True},
        ),
    )


PLAN = [
    {"content": "Read the notes", "status": "completed", "priority": "high"},
    {"content": "Edit the notes", "status": "in_progress", "priority": "medium"},
    {"content": "Report back", "status": "pending", "priority": "low"},
]


def full_state() -> TranscriptState:
    """A finished turn with every kind of entry."""
    state = with_prompt(TranscriptState(), "Fix <notes> & 'quotes'\nsecond line")
    state = fold_all(
        [
            text("agent_thought_chunk", "I should *read* ", "t1"),
            text("agent_thought_chunk", "the file first.", "t1"),
            wire("plan", entries=PLAN),
            wire(
                "tool_call",
                toolCallId="call-1",
                title="Edit notes.md",
                kind="edit",
                status="pending",
                locations=[{"path": "/work/notes.md", "line": 3}, {"path": "/work/other.md"}],
            ),
        ],
        state,
    )
    request = permission("call-1", "Edit notes.md")
    state = with_permission(state, request)
    request.respond("always")
    state = with_permission(state, request)
    state = fold_all(
        [
            wire(
                "tool_call_update",
                toolCallId="call-1",
                status="completed",
                content=[
                    {
                        "type": "diff",
                        "path": "/work/notes.md",
                        "oldText": "alpha\nbeta\ngamma\n",
                        "newText": "alpha\nBETA <b>\ngamma\ndelta\n",
                    }
                ],
            ),
            wire(
                "tool_call",
                toolCallId="call-2",
                title="Run tests",
                kind="execute",
                status="failed",
                content=[
                    {"type": "terminal", "terminalId": "term-7"},
                    {"type": "content", "content": {"type": "text", "text": "FAILED test_x\n1 failed"}},
                ],
            ),
            wire(
                "tool_call", toolCallId="call-3", title="Fetch docs", kind="fetch", rawOutput={"status": 200}
            ),
            text("agent_message_chunk", "## Done\n\nI fixed **notes.md** ", "m1"),
            text("agent_message_chunk", "<script>alert(1)</script>\n\n- one\n- two\n", "m1"),
            wire("usage_update", used=53_000, size=200_000, cost={"amount": 0.045, "currency": "USD"}),
            wire("session_info_update", title="Notes session"),
        ],
        state,
    )
    return with_status(state, "finished", stop_reason="end_turn")


def fence_lines(markdown: str) -> list[str]:
    """Lines that are fences, container prefixes (quotes, list indentation) stripped."""
    return [line for line in markdown.splitlines() if re.match(r"^[> ]*(```|~~~)", line)]


# -- HTML -------------------------------------------------------------------------------------------


def test_html_is_one_self_contained_fragment() -> None:
    html = transcript_html(full_state())
    assert html.startswith('<div class="silo-transcript" style="')
    assert html.endswith("</div>")
    assert "<script" not in html
    assert "<style" not in html
    assert "class=" in html and "style=" in html
    assert "color:inherit" in html
    assert "rgba(127,127,127" in html
    # Balanced divs: the fragment closes everything it opens.
    assert html.count("<div") == html.count("</div>")
    assert html.count("<details") == html.count("</details>")


def test_html_escapes_user_and_agent_text() -> None:
    html = transcript_html(full_state())
    assert "Fix &lt;notes&gt; &amp; &#x27;quotes&#x27;" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "BETA &lt;b&gt;" in html
    assert ">You<" in html


def test_html_agent_text_is_markdown() -> None:
    html = transcript_html(full_state())
    assert "<h2" in html and ">Done</h2>" in html
    assert "<strong>notes.md</strong>" in html
    assert re.search(r"<li>one</li>\s*<li>two</li>", html)
    # Headings carry their own size and weight: the same in a widget and in a saved output area.
    assert re.search(r'<h2 style="font-weight:600;[^"]*font-size:[\d.]+em', html)


def test_html_thoughts_are_collapsed_and_muted() -> None:
    html = transcript_html(full_state())
    match = re.search(
        r"<details class=\"silo-thought\" style=\"([^\"]*)\"><summary[^>]*>Thinking</summary>", html
    )
    assert match is not None
    assert "opacity" in match.group(1)
    assert "I should <em>read</em> the file first." in html
    assert '<details class="silo-thought" open' not in html


def test_html_tool_calls() -> None:
    html = transcript_html(full_state())
    assert "✎ edit" in html and "Edit notes.md" in html
    assert ">completed</span>" in html
    assert "/work/notes.md:3 · /work/other.md" in html
    # A real line diff: removed and added lines with red and green backgrounds and their marker in a
    # gutter of its own, context lines with none, hunk header muted.
    gutter = r'<span class="silo-diff-gutter" style="[^"]*">'
    assert re.search(rf'background:rgba\(244,67,54,[^"]*">{gutter}−</span>beta</div>', html)
    assert re.search(rf'background:rgba\(46,160,67,[^"]*">{gutter}\+</span>BETA &lt;b&gt;</div>', html)
    assert re.search(rf'background:rgba\(46,160,67,[^"]*">{gutter}\+</span>delta</div>', html)
    assert re.search(rf'padding:0 6px 0 0;">{gutter}</span>alpha</div>', html)
    assert "@@ -1,3 +1,4 @@" in html
    assert "+2</span>" in html and "−1</span>" in html
    # Terminal, text output, failed badge.
    assert "terminal term-7" in html
    assert "FAILED test_x\n1 failed" in html
    assert ">failed</span>" in html
    # Raw output summarized when there is no content; a missing status shows as pending.
    assert "output: {&quot;status&quot;:200}" in html
    assert "⇣ fetch" in html
    assert ">pending</span>" in html


def test_html_new_file_diff() -> None:
    state = fold(
        TranscriptState(),
        wire(
            "tool_call",
            toolCallId="c",
            kind="edit",
            title="Create a.py",
            status="completed",
            content=[{"type": "diff", "path": "a.py", "newText": "x = 1\ny = 2\n"}],
        ),
    )
    html = transcript_html(state)
    assert "new file" in html
    assert "+</span>x = 1</div>" in html and "+</span>y = 2</div>" in html
    assert "@@" not in html
    markdown = transcript_markdown(state)
    assert "--- /dev/null" in markdown and "+x = 1" in markdown
    assert "+++ a.py" in transcript_text(state)


def test_html_plan_checklist() -> None:
    html = transcript_html(full_state())
    assert "☑ Read the notes" in html
    assert "◐ Edit the notes" in html
    assert "☐ Report back" in html
    assert ">high</span>" in html and "in progress · medium" in html


def test_html_permissions() -> None:
    html = transcript_html(full_state())
    assert "Permission: Edit notes.md → <b>Allow always</b>" in html
    assert "(always)" in html
    state = with_permission(TranscriptState(), permission("c1", "Run <rm>"))
    state = with_permission(state, permission("c2", "Write", answer="once"))
    state = with_permission(state, permission("c3", "Delete", answer="no-such-option"))
    html = transcript_html(state)
    assert "Permission: Run &lt;rm&gt; → <i>waiting…</i>" in html
    assert "Permission: Write → <b>Allow once</b></div>" in html
    assert "Permission: Delete → <i>cancelled</i>" in html
    assert html.count("(always)") == 0


def test_html_footer_status_usage_meta_title() -> None:
    html = transcript_html(full_state(), meta="restored from journal")
    assert "✓ finished" in html
    assert "stop:" not in html  # end_turn is the normal end
    assert "53,000 / 200,000 tokens (26%) · $0.045" in html
    assert "restored from journal" in html
    assert '<div class="silo-title"' in html and ">Notes session</div>" in html
    assert ">Other title</div>" in transcript_html(full_state(), title="Other title")
    failed = with_status(full_state(), "failed", stop_reason="refusal", error="agent said <no>")
    html = transcript_html(failed)
    assert "✗ failed" in html and "stop: refusal" in html and "error: agent said &lt;no&gt;" in html
    for status, label in [("running", "● running"), ("cancelled", "■ cancelled"), ("restored", "↺ restored")]:
        assert label in transcript_html(with_status(TranscriptState(), status))  # type: ignore[arg-type]


def test_usage_formats() -> None:
    state = fold(TranscriptState(), wire("usage_update", used=1234.6, size=0))
    assert "1,235 / 0 tokens</span>" in transcript_html(state)
    state = fold(state, wire("usage_update", used=100, size=1000, cost={"amount": 0.5, "currency": "EUR"}))
    assert "100 / 1,000 tokens (10%) · 0.50 EUR" in transcript_text(state)
    state = fold(state, wire("usage_update", used=1, size=4, cost={"amount": 12, "currency": "usd"}))
    assert "(25%) · \\$12.00" in transcript_markdown(state)
    assert "(25%) · $12.00" in transcript_html(state)


def test_long_tool_output_is_collapsed_and_huge_output_cut() -> None:
    long_text = "\n".join(f"line {i}" for i in range(100))
    huge_text = "x" * (TOOL_TEXT_LIMIT + 5000)
    state = fold(
        TranscriptState(),
        wire(
            "tool_call",
            toolCallId="c",
            kind="execute",
            content=[
                {"type": "content", "content": {"type": "text", "text": long_text}},
                {"type": "content", "content": {"type": "text", "text": huge_text}},
                {"type": "content", "content": {"type": "text", "text": "short"}},
            ],
        ),
    )
    html = transcript_html(state)
    assert "Output (100 lines)</summary>" in html
    assert "line 99" in html
    assert "5,000 more characters" in html
    assert "x" * (TOOL_TEXT_LIMIT + 1) not in html
    assert "<div><pre" in html and '">short</pre>' in html


def test_tool_output_in_fences_renders_as_markdown() -> None:
    content = {"type": "content", "content": {"type": "text", "text": "```console\n$ ls\nnotes.md\n```"}}
    state = fold(TranscriptState(), wire("tool_call", toolCallId="c", kind="execute", content=[content]))
    html = transcript_html(state)
    match = re.search(r'<code class="language-console"[^>]*>(.*?)</code>', html, re.DOTALL)
    assert match is not None
    assert re.sub(r"<[^>]+>", "", match.group(1)) == "$ ls\nnotes.md"


def test_huge_diff_is_cut() -> None:
    old = "\n".join(f"old {i}" for i in range(DIFF_LINE_LIMIT))
    new = "\n".join(f"new {i}" for i in range(DIFF_LINE_LIMIT))
    content = [{"type": "diff", "path": "big.txt", "oldText": old, "newText": new}]
    state = fold(TranscriptState(), wire("tool_call", toolCallId="c", kind="edit", content=content))
    html = transcript_html(state)
    assert "more lines</div>" in html
    assert '<details class="silo-diff" style' in html  # long diffs start collapsed
    assert "more lines" in transcript_markdown(state)
    assert "more lines" in transcript_text(state)


# -- Markdown ---------------------------------------------------------------------------------------


def test_markdown_parts() -> None:
    markdown = transcript_markdown(full_state(), meta="restored from journal")
    assert markdown.startswith(
        "**Notes session**\n\n> **You:**\n>\n> Fix &lt;notes> & 'quotes'\n> second line\n"
    )
    assert "> _Thinking:_\n>\n> I should *read* the file first." in markdown
    assert "<details" not in markdown
    assert "## Done\n\nI fixed **notes.md** &lt;script>" in markdown  # agent Markdown kept, its HTML as text
    assert "- [x] Read the notes _(high)_" in markdown
    assert "- [ ] Edit the notes _(in progress, medium)_" in markdown
    assert "- [ ] Report back _(low)_" in markdown
    # inside its tool call's item, where it was asked (before the diff the call showed afterwards)
    assert (
        "_completed_ · `/work/notes.md:3`, `/work/other.md`\n"
        "  - ⚑ Permission: Edit notes.md → **Allow always** (always)\n  ```diff" in markdown
    )
    assert "* ✎ **edit** · Edit notes.md · _completed_ · `/work/notes.md:3`, `/work/other.md`" in markdown
    assert (
        "  ```diff\n  --- /work/notes.md\n  +++ /work/notes.md\n  @@ -1,3 +1,4 @@\n   alpha\n  -beta\n"
        in markdown
    )
    assert "  - terminal `term-7`" in markdown
    assert '  - output: `{"status":200}`' in markdown
    assert markdown.rstrip().endswith(
        "_✓ finished · context 53,000 / 200,000 tokens (26%) · \\$0.045 · restored from journal_"
    )
    assert len(fence_lines(markdown)) % 2 == 0
    assert unclosed_fence(markdown) is None


def test_markdown_closes_fences_the_agent_left_open() -> None:
    state = with_prompt(TranscriptState(), "Show me code")
    state = fold_all(
        [
            text("agent_message_chunk", "Here:\n\n```python\nprint('streaming')\n", "m1"),
            wire("tool_call", toolCallId="c", title="Read", kind="read", status="in_progress"),
            text("agent_message_chunk", "More:\n~~~~\nunfinished", "m2"),
            text("agent_thought_chunk", "```\nthought code", "t1"),
        ],
        state,
    )
    markdown = transcript_markdown(state)
    assert len(fence_lines(markdown)) % 2 == 0
    assert unclosed_fence(markdown) is None
    # Parts after the open fence are not swallowed into the code block.
    html = markdown_to_html(markdown)
    assert "<strong>read</strong>" in html
    assert "<em>● running</em>" in html


def test_markdown_fences_survive_backticks_in_tool_output() -> None:
    output = "a line with ``` inside\nand ```` four"
    content = [
        {"type": "content", "content": {"type": "text", "text": output}},
        {"type": "diff", "path": "README.md", "oldText": "```\nx\n```\n", "newText": "```py\nx\n```\n"},
    ]
    state = fold(TranscriptState(), wire("tool_call", toolCallId="c", kind="edit", content=content))
    markdown = transcript_markdown(state)
    assert "  `````\n  a line with ``` inside\n" in markdown
    assert "  ````diff\n" in markdown
    html = markdown_to_html(markdown)
    assert "a line with ``` inside\nand ```` four</code></pre>" in html
    assert "-```\n+```py" in html


def test_markdown_escapes_our_inline_fields() -> None:
    state = fold(
        TranscriptState(),
        wire(
            "tool_call", toolCallId="c", kind="edit", title="Replace *all* `x` in [a](b) $5 <i>", status="odd"
        ),
    )
    markdown = transcript_markdown(state, title="My *title*")
    assert "**My \\*title\\***" in markdown
    assert "Replace \\*all\\* \\`x\\` in \\[a\\](b) \\$5 \\<i\\>" in markdown
    html = markdown_to_html(markdown)
    assert "Replace *all* `x` in [a](b) $5 &lt;i&gt;" in html
    assert "_odd_" in markdown


# -- plain text -------------------------------------------------------------------------------------


def test_plain_text() -> None:
    plain = transcript_text(full_state(), meta="restored from journal")
    lines = plain.splitlines()
    assert lines[0] == "== Notes session =="
    assert lines[1] == "you> Fix <notes> & 'quotes'"
    assert lines[2] == "     second line"
    assert "thinking> I should *read* the file first." in lines
    assert "plan:" in lines
    assert "  [x] Read the notes (high)" in lines
    assert "  [~] Edit the notes (in progress, medium)" in lines
    assert "  [ ] Report back (low)" in lines
    assert "    permission> Edit notes.md → Allow always (always)" in lines  # inside its tool call
    assert "[tool call-1] edit · Edit notes.md · completed" in lines
    assert "    at /work/notes.md:3, /work/other.md" in lines
    assert "    -beta" in lines and "    +BETA <b>" in lines and "    +delta" in lines
    assert "[tool call-2] execute · Run tests · failed" in lines
    assert "    terminal term-7" in lines
    assert "    FAILED test_x" in lines
    assert '    output: {"status":200}' in lines
    assert "agent> ## Done" in lines
    assert (
        lines[-1] == "-- ✓ finished · context 53,000 / 200,000 tokens (26%) · $0.045 · restored from journal"
    )


# -- bundle -----------------------------------------------------------------------------------------


def test_static_bundle() -> None:
    state = full_state()
    metadata = {"sessionId": "s-1", "profileId": "demo", "cellId": "cell-9", "turn": 2}
    data, meta = static_bundle(state, metadata=metadata, title="T", meta="restored")
    assert set(data) == {"text/html", "text/markdown", "text/plain"}
    assert data["text/html"] == transcript_html(state, title="T", meta="restored")
    assert data["text/markdown"] == transcript_markdown(state, title="T", meta="restored")
    assert data["text/plain"] == transcript_text(state, title="T", meta="restored")
    assert meta == {"silo": metadata}
    assert meta["silo"] is not metadata  # a copy: later changes to the caller's dict do not leak in
    assert all(isinstance(value, str) for value in data.values())


# -- robustness -------------------------------------------------------------------------------------


@pytest.mark.parametrize("render", RENDERERS)
def test_empty_state(render: Any) -> None:
    output = render(TranscriptState())
    assert "running" in output
    output = render(with_status(TranscriptState(), "finished"))
    assert "finished" in output
    assert "None" not in output


def test_empty_state_html() -> None:
    assert "Waiting for the agent…" in transcript_html(TranscriptState())
    assert "No messages." in transcript_html(with_status(TranscriptState(), "cancelled"))


def test_unknown_kinds_render() -> None:
    state = fold_all(
        [
            wire("brand_new_kind", foo=1),
            wire("brand_new_kind"),
            wire("another_kind"),
            wire("agent_message_chunk", messageId="m", content={"type": "image", "mimeType": "image/png"}),
            wire(
                "tool_call",
                toolCallId="t",
                kind="teleport",
                status="warping",
                content=[
                    {"type": "hologram"},
                    {
                        "type": "content",
                        "content": {"type": "resource_link", "uri": "file:///a", "name": "a"},
                    },
                    {"type": "content"},
                ],
            ),
            wire("plan", entries=[{"content": "Odd step", "status": "someday"}, {"content": "Plain step"}]),
            wire("tool_call_update", toolCallId="untitled"),
        ],
        TranscriptState(),
    )
    html = transcript_html(state)
    assert "? unknown update brand_new_kind ×2" in html and "? unknown update another_kind" in html
    assert "not shown" not in html  # every unknown update above is shown (issue 31 item 7)
    assert "+ image" in html
    assert "⚙ teleport" in html and ">warping</span>" in html
    assert "[hologram]" in html and "[resource_link a file:///a]" in html and "[empty content]" in html
    assert "• Odd step" in html and "someday" in html and "☐ Plain step" in html
    assert "other" in html  # the kind of a call that never said
    markdown = transcript_markdown(state)
    assert "- [ ] Odd step _(someday)_" in markdown
    assert "\\[hologram\\]" in markdown
    plain = transcript_text(state)
    assert "[tool t] teleport · teleport · warping" in plain
    assert "  [?] Odd step (someday)" in plain
    assert "agent> " in plain and "+ image" in plain


def test_every_prefix_of_a_stream_renders() -> None:
    """The live widget re-renders after each chunk: half a fence, half a table, half a link."""
    reply = (
        "# Title\n\n| a | b |\n|---|---|\n| 1 | [link](https://x.y) |\n\n```py\nprint('hi')\n```\n**done**"
    )
    state = with_prompt(TranscriptState(), "go")
    for end in range(1, len(reply) + 1):
        partial = fold(state, text("agent_message_chunk", reply[:end]))
        html = transcript_html(partial)
        assert "<script" not in html
        markdown = transcript_markdown(partial)
        assert unclosed_fence(markdown) is None
        transcript_text(partial)


def test_message_chunks_join_and_empty_messages_skip() -> None:
    state = fold_all(
        [
            text("agent_message_chunk", "Hel"),
            text("agent_message_chunk", "lo"),
            text("agent_message_chunk", "", "m2"),
        ],
        TranscriptState(),
    )
    assert '<p style="margin:.4em 0">Hello</p>' in transcript_html(state)
    assert transcript_html(state).count('class="silo-agent"') == 1


# -- status badge -----------------------------------------------------------------------------------


@pytest.mark.parametrize("activity", ["idle", "working", "blocked", "error", "dead", "none"])
def test_status_badge(activity: str) -> None:
    html = status_badge_html(activity)
    assert html.startswith('<span class="silo-badge" style="')
    assert f"● {activity}</span>" in html or f"</span> {activity}</span>" in html
    assert "<script" not in html


def test_status_badge_colours_and_elapsed() -> None:
    colours = {
        activity: re.findall(r"rgba\((\d+,\d+,\d+)", status_badge_html(activity))[0]
        for activity in ("idle", "working", "blocked", "error")
    }
    assert len(set(colours.values())) == 4
    assert status_badge_html("working", elapsed=12.7).endswith(" working 12 s</span>")
    assert status_badge_html("working", elapsed=65).endswith(" working 1 m 05 s</span>")
    assert status_badge_html("working", elapsed=3720).endswith(" working 1 h 02 m</span>")
    assert status_badge_html("working", elapsed=-3).endswith(" working 0 s</span>")
    assert status_badge_html("working", elapsed=float("nan")).endswith(" working 0 s</span>")
    assert "&lt;b&gt;" in status_badge_html("<b>")


# -- read tool calls: the file as code --------------------------------------------------------------


def read_state(text: str, *, path: str | None = "/work/app.py", title: str = "Read file") -> TranscriptState:
    locations = [{"path": path}] if path else []
    content = [{"type": "content", "content": {"type": "text", "text": text}}]
    call = wire(
        "tool_call",
        toolCallId="r",
        kind="read",
        title=title,
        status="completed",
        locations=locations,
        content=content,
    )
    return fold(TranscriptState(), call)


def visible_text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def test_read_tool_call_shows_the_file_as_highlighted_code() -> None:
    source = "# Title, not a heading\ndef f(x):\n    return '<b>' * x\n"
    html = transcript_html(read_state(source))
    assert "<h1" not in html
    code = re.search(r"<pre[^>]*><code[^>]*>(.*?)</code></pre>", html, re.DOTALL)
    assert code is not None
    assert re.search(r'<span style="color:[^"]+">def</span>', code.group(1))
    assert "&lt;b&gt;" in code.group(1) and "<b>" not in code.group(1)
    assert unescape(visible_text(code.group(1))) == source  # every character, in order
    markdown = transcript_markdown(read_state(source))
    assert "  ```python\n  # Title, not a heading\n" in markdown
    assert unclosed_fence(markdown) is None


def test_read_tool_call_language_from_title_fence_or_nothing() -> None:
    # No location: a file name in the title.
    html = transcript_html(read_state("const x: number = 1;\n", path=None, title="Read src/app.ts"))
    assert re.search(r'<span style="color:[^"]+">const</span>', html)
    # A Markdown file is shown as its source, not rendered.
    html = transcript_html(read_state("# Notes\n\n* item\n", path="/w/README.md"))
    assert "<h1" not in html and "<li>" not in html and "# Notes" in visible_text(html)
    # The agent wrapped the file in a fence: unwrapped, the fence's language used when the path has none.
    html = transcript_html(read_state("```python\nimport os\n```", path="/w/script"))
    assert "```" not in html and re.search(r'<span style="color:[^"]+">import</span>', html)
    # Unknown kind of file: plain, escaped.
    html = transcript_html(read_state("<script>alert(1)</script>\nplain", path="/w/data.nosuchext"))
    assert "<script" not in html and "&lt;script&gt;" in html
    assert "<span" not in re.search(r"<code[^>]*>(.*?)</code>", html, re.DOTALL).group(1)  # type: ignore[union-attr]


def test_read_tool_call_long_files_are_cut() -> None:
    source = "x = 1\n" * (TOOL_TEXT_LIMIT // 6 + 2000)
    html = transcript_html(read_state(source))
    assert "more characters" in html
    assert visible_text(html).count("x = 1") <= TOOL_TEXT_LIMIT // 6 + 1
    assert "Output (" in html  # collapsed


# -- per-entry cache --------------------------------------------------------------------------------


def test_unchanged_entries_are_not_rendered_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace as replace_card

    from silo_nb.notebook.render.cards import CARDS

    rendered: list[object] = []

    def counting(real: Any) -> Any:
        def render(entry: Any) -> str:
            rendered.append(entry)
            return str(real(entry))

        return render

    for entry_type, card in list(CARDS.items()):
        monkeypatch.setitem(CARDS, entry_type, replace_card(card, html=counting(card.html)))
    state = with_prompt(TranscriptState(), "go")
    for index in range(200):
        state = fold(state, wire("tool_call", toolCallId=f"t{index}", title=f"Step {index}", kind="read"))
        state = fold(state, text("agent_message_chunk", f"Reply **{index}**", f"m{index}"))
    first = transcript_html(state)
    assert len(rendered) == 401
    rendered.clear()
    assert transcript_html(state) == first
    assert rendered == []
    # One more chunk: only the message it extends is rendered again.
    state = fold(state, text("agent_message_chunk", " and more", "m199"))
    second = transcript_html(state)
    assert rendered == [state.entries[-1]]
    assert "Reply <strong>199</strong> and more" in second
    # A tool update replaces one entry: only that one.
    rendered.clear()
    state = fold(state, wire("tool_call_update", toolCallId="t5", status="completed"))
    transcript_html(state)
    assert len(rendered) == 1 and rendered[0] is state.entries[11]
    assert entry_html(state.entries[11]) == entry_html(state.entries[11])


# -- header row: live and static alike --------------------------------------------------------------


def test_turn_header() -> None:
    state = with_prompt(TranscriptState(), "go")
    header = turn_header_html(state, label="demo <1>", elapsed=65)
    assert header.startswith('<div class="silo-header" style="')
    assert "min-height:var(--jp-widgets-inline-height,28px)" in header
    assert "justify-content:space-between" in header
    assert "demo &lt;1&gt;" in header and "● running 1 m 05 s</span>" in header
    # Waiting for a permission answer shows in the pill.
    blocked = with_permission(state, permission("c1", "Edit"))
    assert "waiting for permission" in turn_header_html(blocked, label="demo")
    assert "waiting for permission" not in turn_header_html(with_status(blocked, "cancelled"), label="demo")
    finished = with_status(state, "finished")
    assert "✓ finished</span>" in turn_header_html(finished, label="demo")


def test_transcript_with_label_starts_with_the_header_row() -> None:
    state = full_state()
    html = transcript_html(state, label="demo", meta="restored")
    box = re.match(r'<div class="silo-transcript" style="([^"]*)">(.*)</div>$', html, re.DOTALL)
    assert box is not None
    assert "box-sizing:border-box" in box.group(1) and "width:100%" in box.group(1)
    assert box.group(2).startswith(turn_header_html(state, label="demo"))
    assert html.count("✓ finished") == 1  # the status shows once: in the header, not again in the footer
    assert "restored" in html and "53,000 / 200,000 tokens" in html
    assert html.count("<div") == html.count("</div>")
    # Without a label: no header row, the footer has the status.
    assert "silo-header" not in transcript_html(state)
    assert transcript_body_html(state) in transcript_html(state)


def test_static_bundle_has_the_live_header() -> None:
    state = full_state()
    data, _ = static_bundle(state, metadata={}, label="demo", title="")
    assert data["text/html"] == transcript_html(state, label="demo", title="")
    assert 'class="silo-header"' in data["text/html"]
    assert data["text/markdown"].startswith("**demo** · _✓ finished_\n\n")
    assert data["text/plain"].splitlines()[0] == "demo · ✓ finished"
    assert data["text/plain"].splitlines()[-1] == "-- context 53,000 / 200,000 tokens (26%) · $0.045"
    assert unclosed_fence(data["text/markdown"]) is None


# -- safety: nothing the agent or user sends is live markup -----------------------------------------

HOSTILE = (
    '<script>alert(1)</script> <img src=x onerror="alert(2)"> [a](javascript:alert(3)) '
    "[b][r] <javascript:alert(4)> [c](data:text/html;base64,PHNjcmlwdD4=) "
    "![d](data:image/png;base64,AAAA) ![e](javascript:alert(5)) [f](vbscript:x)\n\n"
    "[r]: javascript:alert(6)\n\n```html\n<script>alert(7)</script>\n```\n"
)


def test_hostile_text_is_inert_everywhere() -> None:
    state = with_prompt(TranscriptState(), HOSTILE)
    state = fold_all(
        [
            text("agent_thought_chunk", HOSTILE, "t"),
            text("agent_message_chunk", HOSTILE, "m"),
            wire(
                "tool_call",
                toolCallId="x",
                kind="execute",
                title=HOSTILE,
                locations=[{"path": "<script>p</script>"}],
                content=[{"type": "content", "content": {"type": "text", "text": "# out\n" + HOSTILE}}],
            ),
            wire(
                "tool_call",
                toolCallId="y",
                kind="read",
                title="Read a.html",
                locations=[{"path": "a.html"}],
                content=[{"type": "content", "content": {"type": "text", "text": HOSTILE}}],
            ),
            wire("plan", entries=[{"content": HOSTILE, "status": "pending"}]),
            wire("session_info_update", title=HOSTILE),
        ],
        state,
    )
    state = with_permission(state, permission("x", HOSTILE))
    html = transcript_html(state, label=HOSTILE, meta=HOSTILE)
    lowered = html.lower()
    for bad in ("<script", "<img", "<style", "<iframe", "javascript:", "vbscript:", "data:"):
        hrefs = re.findall(r'(?:href|src)="([^"]*)"', lowered)
        assert not any(bad in href for href in hrefs), bad
    assert "<script" not in lowered and "<img" not in lowered
    assert "onerror=&quot;alert(2)&quot;" in lowered  # shown, as text
    for tag in re.finditer(r"<([a-z0-9]+)((?:\s[a-z-]+=\"[^\"<>]*\")*)\s*>", html):
        names = set(re.findall(r'\s([a-z-]+)="', tag.group(2)))
        assert names <= {"class", "style", "title", "href", "target", "rel", "start"}, tag.group(0)
    assert len(re.findall(r"<[a-z]", html)) == len(
        re.findall(r"<([a-z0-9]+)((?:\s[a-z-]+=\"[^\"<>]*\")*)\s*>", html)
    )
    for href in re.findall(r'href="([^"]*)"', html):
        assert href.startswith(("http://", "https://", "mailto:")) or ":" not in href.split("/")[0]
    for anchor in re.findall(r"<a [^>]*>", html):
        assert 'rel="noopener noreferrer"' in anchor and 'target="_blank"' in anchor


def test_very_long_agent_text_is_shown_plain_and_whole() -> None:
    from silo_nb.notebook.render.md_html import AGENT_MARKDOWN_LIMIT

    reply = ("**word** " * (AGENT_MARKDOWN_LIMIT // 9 + 10)) + "<b>end</b>"
    html = transcript_html(fold(TranscriptState(), text("agent_message_chunk", reply)))
    assert html.count("**word**") == AGENT_MARKDOWN_LIMIT // 9 + 10  # all of it, not parsed
    assert "&lt;b&gt;end&lt;/b&gt;" in html


def test_a_huge_turn_is_saved_as_its_two_ends_and_says_what_it_left_out() -> None:
    from silo_nb.notebook.render import SAVED_ENTRIES_LIMIT

    count = SAVED_ENTRIES_LIMIT + 3_000
    updates = [
        parse_update(
            {"sessionUpdate": "tool_call", "toolCallId": f"t{i}", "title": f"Read f{i}", "kind": "read"}
        )
        for i in range(count)
    ]
    state = fold_all([u for u in updates if u is not None])
    data, _ = static_bundle(state, metadata={}, title="", label="Demo")
    for mime, text in data.items():
        assert "3,001 entries of this turn are not saved" in text, mime  # the note is one of the 1,000
        assert "Read f0" in text and f"Read f{count - 1}" in text, mime
        assert f"Read f{SAVED_ENTRIES_LIMIT // 2 + 10}" not in text, mime
    small = fold_all([u for u in updates[:10] if u is not None])
    assert "not saved" not in static_bundle(small, metadata={}, title="", label="Demo")[0]["text/html"]


def test_a_saved_huge_turn_holds_at_most_the_bound_note_included_so_its_markdown_stays_markdown() -> None:
    from silo_nb.notebook.render import SAVED_ENTRIES_LIMIT, saved_part
    from silo_nb.notebook.render.markdown import TRANSCRIPT_MARKDOWN_ENTRIES

    updates = [
        parse_update(
            {"sessionUpdate": "tool_call", "toolCallId": f"t{i}", "title": f"Read f{i}", "kind": "read"}
        )
        for i in range(SAVED_ENTRIES_LIMIT + 1)
    ]
    state = fold_all([u for u in updates if u is not None])
    saved = saved_part(state)
    assert len(saved.entries) <= SAVED_ENTRIES_LIMIT  # the docstring's promise: the note is one of them
    left_out = len(state.entries) - (len(saved.entries) - 1)
    assert f"{left_out:,} entries of this turn are not saved" in saved.entries[SAVED_ENTRIES_LIMIT // 2].text
    # A saved turn is not too many entries for Markdown: not the plain-text fence.
    if SAVED_ENTRIES_LIMIT <= TRANSCRIPT_MARKDOWN_ENTRIES:
        markdown = static_bundle(state, metadata={}, title="", label="Demo")[0]["text/markdown"]
        assert not markdown.startswith("`"), markdown[:80]
