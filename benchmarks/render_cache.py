"""What one more chunk costs to re-render in a long live turn: the per-entry HTML cache vs none, side by side.

A transcript of E entries (agent messages with Markdown and code, tool calls with diffs, a plan) is folded
through the reducer; then one chunk is appended to the last message and the whole transcript HTML is
rendered again, as a live view's throttle tick does. With the cache only the changed entry is rendered
(entries are immutable, so every other one is a cache hit); the reference renders every entry afresh.

Run: ``.venv/bin/python benchmarks/render_cache.py [entries] [rounds]``; rewrites the "render cache"
section of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import statistics
import sys
import time

from _results import write_section

from silo_nb.model.models import AgentSessionUpdate
from silo_nb.notebook.render import html as render_html
from silo_nb.notebook.render import transcript_html
from silo_nb.updates.parse import parse_update
from silo_nb.updates.transcript import TranscriptState, fold, fold_all


def wire(session_update: str, /, **fields: object) -> AgentSessionUpdate:
    update = parse_update({"sessionUpdate": session_update, **fields})
    assert update is not None
    return update


def transcript(entries: int) -> TranscriptState:
    updates: list[AgentSessionUpdate] = []
    for i in range(entries // 2):
        text = f"## Step {i}\n\nSome **bold** text and `code`.\n\n```python\nprint({i})\n```\n"
        updates.append(wire("agent_message_chunk", messageId=f"m{i}", content={"type": "text", "text": text}))
        diff = {"type": "diff", "path": f"f{i}.py", "oldText": "a\nb\n", "newText": "a\nc\n"}
        updates.append(
            wire("tool_call", toolCallId=f"t{i}", title=f"Edit f{i}.py", kind="edit", content=[diff])
        )
    updates.append(wire("agent_message_chunk", messageId="last", content={"type": "text", "text": "Done"}))
    return fold_all(updates)


def tick(state: TranscriptState, *, cached: bool) -> float:
    """Seconds to render the transcript again after one more chunk."""
    state = fold(state, wire("agent_message_chunk", messageId="last", content={"type": "text", "text": "."}))
    if not cached:
        render_html._cache.clear()
    start = time.perf_counter()
    transcript_html(state)
    return time.perf_counter() - start


def main(entries: int = 2_000, rounds: int = 7) -> None:
    state = transcript(entries)
    transcript_html(state)  # warm: every entry rendered once, as a live view would have
    with_cache, without = [], []
    for _ in range(rounds):  # interleaved, so both see the same machine
        with_cache.append(tick(state, cached=True))
        without.append(tick(state, cached=False))
        transcript_html(state)  # re-warm after the uncached round emptied the cache
    cached_s, uncached_s = statistics.median(with_cache), statistics.median(without)
    lines = [
        f"transcript of {len(state.entries):,} entries; one more chunk; {rounds} rounds (median shown)",
        f"per-entry cache:  {cached_s * 1000:,.1f} ms per re-render",
        f"no cache (ref):   {uncached_s * 1000:,.1f} ms per re-render",
        f"ratio cached / uncached: {cached_s / uncached_s:.3f}",
    ]
    print("\n".join(lines))
    write_section("render cache", lines)


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
