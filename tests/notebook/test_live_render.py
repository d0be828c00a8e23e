"""Bounded work and traffic for a live turn (issue 10 items 2–3, issue 8 item 6): the streaming Markdown
block cache, long replies cut with "Show all", diffs once per content and truncated visibly, and a live
view that re-sends only the segment that changed, within its byte and message budgets."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from silo_nb.model.models import AgentContentBlock, AgentSessionUpdate, AgentToolCall
from silo_nb.notebook.render import labels, streaming
from silo_nb.notebook.render import live_entries as live_render
from silo_nb.notebook.render.md_html import markdown_to_html
from silo_nb.notebook.widgets import TurnView, live_body
from silo_nb.updates.transcript import MessageEntry, ToolEntry
from tests.notebook.widget_utils import Sent


def chunk(text: str, message_id: str = "m1") -> AgentSessionUpdate:
    return AgentSessionUpdate(
        kind="agent_message_chunk",
        text=text,
        content=AgentContentBlock(type="text", text=text),
        message_id=message_id,
    )


def tool(n: int, **fields: Any) -> AgentSessionUpdate:
    call = AgentToolCall(tool_call_id=f"t{n}", title=f"Step {n}", kind="read", **fields)
    return AgentSessionUpdate(kind="tool_call", tool_call=call)


def sent_bytes(sent: list[Sent]) -> int:
    return sum(len(json.dumps(data)) for kind, _, data in sent if kind in ("comm_msg", "comm_open"))


# -- streaming Markdown ------------------------------------------------------------------------------


def test_completed_blocks_render_once_and_match_the_whole_render(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "# Title\n\nSome **bold** text.\n\n```python\nx = 1\n\ny = 2\n```\n\n- a\n- b\n\nlast para"
    calls: list[str] = []

    def counting(source: str, *, styled: bool = False) -> str:
        calls.append(source)
        return markdown_to_html(source, styled=styled)

    monkeypatch.setattr(streaming, "markdown_to_html", counting)
    key = ("agent", "stream-test", None)
    for end in range(1, len(text) + 1):
        streaming.streaming_markdown_html(key, text[:end], None)
    whole = streaming.streaming_markdown_html(key, text, None)
    assert whole == markdown_to_html(text, styled=True)  # blocks alone render as the whole does here
    blocks = [c for c in calls if c.endswith("\n\n")]
    # each completed block parsed once (the fence holds a blank line: it is not cut there)
    assert sorted(set(blocks)) == sorted(blocks) and "```python\nx = 1\n\ny = 2\n```\n\n" in blocks


def test_a_long_unfinished_tail_is_plain_and_a_long_reply_is_cut() -> None:
    key = ("agent", "long", None)
    pathological = "*a " * 3_000  # no blank line: the tail never completes
    shown = streaming.streaming_markdown_html(key, pathological, live_render.LIVE_MESSAGE_CHARS)
    assert "<em>" not in shown and "white-space:pre-wrap" in shown
    reply = ("word " * 30 + "\n\n") * 400  # ~62k characters
    entry = MessageEntry(role="agent", text=reply, message_id="m-long")
    cut_html, cut = live_render.live_entry_html(entry)
    assert cut and "silo-cut" in cut_html and len(cut_html) < len(reply)
    whole_html, cut = live_render.live_entry_html(entry, whole=True)
    assert not cut and whole_html.count("<p") == 400


# -- diffs -------------------------------------------------------------------------------------------


def test_a_diff_is_computed_once_per_content_and_truncated_visibly(monkeypatch: pytest.MonkeyPatch) -> None:
    import difflib

    runs: list[int] = []
    real = difflib.unified_diff

    def counting(*args: Any, **kwargs: Any) -> Any:
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(labels.difflib, "unified_diff", counting)
    old = "\n".join(f"line {i}" for i in range(10_000))
    new = "\n".join(f"line {i}" for i in range(0, 10_000, 2)) + "\n" + old  # interleaved: quadratic
    for _ in range(5):
        shown = labels.diff(old, new)
    assert len(runs) == 1
    assert shown.truncated is not None and "diff truncated" in shown.truncated
    assert len(shown.shown) <= labels.DIFF_LINE_LIMIT
    content = [{"type": "diff", "path": "big.txt", "oldText": old, "newText": new}]
    from silo_nb.notebook.render import static_bundle
    from silo_nb.updates.parse import parse_update
    from silo_nb.updates.transcript import fold_all

    update = parse_update(
        {"sessionUpdate": "tool_call", "toolCallId": "c", "kind": "edit", "content": content}
    )
    assert update is not None
    data, _ = static_bundle(fold_all([update]), metadata={})
    assert all("diff truncated" in data[mime] for mime in ("text/html", "text/markdown", "text/plain"))
    assert len(runs) == 1


# -- the live view's traffic -------------------------------------------------------------------------


async def test_a_long_turn_re_sends_only_the_changed_segment(comms: list[Sent]) -> None:
    view = TurnView(label="Demo", throttle=0.0)
    for n in range(600):
        view.transcript.apply(tool(n, status="completed"))
    view.flush()
    segments = len(view.body.box.children) - 2
    assert segments > 10  # the box is many segments
    before = len(comms)
    for i in range(200):
        view.transcript.apply(chunk(f"w{i} "))
        await asyncio.sleep(0)
    view.flush()
    later = comms[before:]
    segment_ids = {child.model_id for child in view.body.box.children[1:-1]}
    touched = {comm_id for kind, comm_id, _ in later if kind == "comm_msg" and comm_id in segment_ids}
    assert len(touched) <= 2  # the new message's segment (and at most the one it opened)
    assert sent_bytes(later) < 200 * (live_body.SEGMENT_CHARS + 2_000)
    assert "w199" in view.html
    view.close_all()


async def test_pacing_bounds_bytes_and_messages_per_second(comms: list[Sent]) -> None:
    view = TurnView(label="Demo", throttle=0.02)
    first = len(comms)  # the view's own widgets
    loop = asyncio.get_running_loop()
    started = loop.time()
    n = 0
    while loop.time() - started < 1.0:  # a flood: 20 tool calls every 5 ms
        for _ in range(20):
            view.transcript.apply(tool(n, status="completed", raw_output={"lines": "x" * 300}))
            n += 1
        await asyncio.sleep(0.005)
    elapsed = loop.time() - started
    sent = [m for m in comms[first:] if m[0] in ("comm_msg", "comm_open")]
    assert len(sent) / elapsed <= 22, (len(sent), elapsed)  # ≤ 20/s, plus the first burst
    assert sent_bytes(comms[first:]) / elapsed <= 110_000, sent_bytes(comms[first:]) / elapsed
    assert view.body.waiting > 0 and "live view paced" in view.html  # said, not silently dropped
    view.transcript.set_status("finished", stop_reason="end_turn")
    assert view.html.count('class="silo-tool"') == n  # the end shows every entry
    view.close_all()


async def test_show_all_lifts_the_cut(comms: list[Sent]) -> None:
    view = TurnView(label="Demo", throttle=0.0)
    view.transcript.apply(chunk(("long reply " * 20 + "\n\n") * 200))
    view.flush()
    assert "silo-cut" in view.html and view.show_all_button.layout.display == ""
    view.show_all()
    view.flush()
    assert "silo-cut" not in view.html and view.show_all_button.layout.display == "none"
    view.close_all()


def test_entries_kept_whole_in_the_live_view_are_the_saved_ones() -> None:
    entry = ToolEntry(tool_call_id="t", title="small", status="completed")
    html, cut = live_render.live_entry_html(entry)
    assert not cut
    from silo_nb.notebook.render import entry_html

    assert html == entry_html(entry)
