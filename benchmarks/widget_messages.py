"""How many widget messages a fast agent causes, throttled vs unthrottled (the reference), side by side.

A turn view receives U text chunks spread over S seconds (as an agent streaming at U/S chunks per second
would send them). Widget messages are counted on a recording comm; the reference is the same view with
throttling off (interval 0). The figure that matters: messages per second reaching the frontend.

Run: ``.venv/bin/python benchmarks/widget_messages.py [chunks] [seconds]``; rewrites the
"widget messages" section of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
import comm
from _results import write_section

from silo_nb.notebook.widgets import TurnView
from silo_nb.sessions.parse import parse_update

HERE = Path(__file__).resolve().parent


class CountingComm(comm.base_comm.BaseComm):  # type: ignore[misc]
    messages = 0

    def publish_msg(
        self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **_: Any
    ) -> None:
        if msg_type == "comm_msg":
            CountingComm.messages += 1


async def stream(chunks: int, seconds: float, throttle: float) -> tuple[int, float]:
    CountingComm.messages = 0
    view = TurnView(label="bench", throttle=throttle)
    update = parse_update(
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "m",
            "content": {"type": "text", "text": "tok "},
        }
    )
    assert update is not None
    gap = seconds / chunks
    started = time.perf_counter()
    for index in range(chunks):
        view.transcript.apply(update)
        # Each chunk arrives in its own read of the agent's stdout: let the loop turn, then keep the pace.
        await anyio.sleep(max(0.0, started + gap * (index + 1) - time.perf_counter()))
    view.transcript.set_status("finished", stop_reason="end_turn")
    elapsed = time.perf_counter() - started
    sent = CountingComm.messages
    view.close_all()
    return sent, elapsed


async def main(chunks: int, seconds: float) -> None:
    comm.create_comm = CountingComm
    throttled, t_elapsed = await stream(chunks, seconds, 0.1)
    unthrottled, u_elapsed = await stream(chunks, seconds, 0.0)
    lines = [
        f"{chunks:,} chunks streamed over {seconds:g} s ({chunks / seconds:,.0f} chunks/s)",
        f"throttled (0.1 s):  {throttled:,} widget messages, {throttled / t_elapsed:,.1f} per second",
        f"unthrottled (ref):  {unthrottled:,} widget messages, {unthrottled / u_elapsed:,.1f} per second",
        f"ratio throttled / unthrottled: {throttled / max(unthrottled, 1):.4f}",
    ]
    print("\n".join(lines))
    write_section("widget messages", lines)


if __name__ == "__main__":
    anyio.run(
        main,
        int(sys.argv[1]) if len(sys.argv) > 1 else 5000,
        float(sys.argv[2]) if len(sys.argv) > 2 else 2.0,
    )
