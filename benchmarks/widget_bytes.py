"""Widget traffic of a live turn view while a long turn streams: bytes and messages per second.

A ``TurnView`` (in-process, every comm message recorded and measured as the JSON it would be sent as)
is fed a turn at an agent's pace, on a running event loop with the view's default throttle:

- ``chunks``: 10,000 text chunks into one reply at 2,000 chunks/s;
- ``tools``: 3,000 tool calls, each then completed with a small output, at 600 calls/s.

Figure: bytes/s and messages/s over the whole stream and over its last second (it must not grow with
the turn's length). Reference, same run: the ideal incremental traffic — per tick, the saved HTML of
just the entries that changed since the previous tick (what a keyed list would send).

``PYTHONPATH`` decides which silo_nb is measured (a ``git archive`` of the commit before gives the
"before" figure; its view re-sent the whole transcript each tick).

Run: ``python benchmarks/widget_bytes.py [chunks|tools] [--rounds 3]``; rewrites
"widget bytes: <scenario> (<label>)" in RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import comm
from _results import write_section

from silo_nb.model.models import AgentSessionUpdate
from silo_nb.notebook.render import entry_html
from silo_nb.notebook.widgets import TurnView
from silo_nb.updates.parse import parse_update

Record = tuple[float, int]  # (time, bytes) of one widget message


class MeasuringComm(comm.base_comm.BaseComm):  # type: ignore[misc]
    log: list[Record] = []  # noqa: RUF012 - one recording per run

    def publish_msg(
        self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **_: Any
    ) -> None:
        if msg_type in ("comm_open", "comm_msg"):
            MeasuringComm.log.append((time.perf_counter(), len(json.dumps(data, separators=(",", ":")))))


def wire(kind: str, /, **fields: Any) -> AgentSessionUpdate:
    update = parse_update({"sessionUpdate": kind, **fields})
    assert update is not None
    return update


def updates_for(scenario: str) -> tuple[list[AgentSessionUpdate], float]:
    """The turn's updates and the rate (updates per second) the agent sends them at."""
    prompt = wire("user_message_chunk", content={"type": "text", "text": "go"})
    if scenario == "chunks":
        text = [
            wire("agent_message_chunk", messageId="m", content={"type": "text", "text": f"word{i} "})
            for i in range(10_000)
        ]
        return [prompt, *text], 2_000
    out = [prompt]
    for i in range(3_000):
        out.append(
            wire("tool_call", toolCallId=f"t{i}", title=f"Read f{i}.py", kind="read", status="in_progress")
        )
        out.append(wire("tool_call_update", toolCallId=f"t{i}", status="completed", rawOutput={"bytes": i}))
    return out, 1_200


async def stream(updates: list[AgentSessionUpdate], rate: float) -> tuple[list[Record], float, int]:
    """Feed the view at ``rate`` updates/s; the messages sent while streaming, the duration, and the
    ideal incremental bytes (changed entries' HTML per 0.1 s tick)."""
    MeasuringComm.log = []
    view = TurnView(label="bench")
    created = len(MeasuringComm.log)
    ideal, last, seen = 0, time.perf_counter(), {}
    started = time.perf_counter()
    for index, update in enumerate(updates):
        view.transcript.apply(update)
        now = time.perf_counter()
        if now - last >= 0.1:  # the reference: only what changed since the last tick
            for position, entry in enumerate(view.state.entries):
                if seen.get(position) is not entry:
                    seen[position] = entry
                    ideal += len(entry_html(entry))
            last = now
        if index % 20 == 0:
            await asyncio.sleep(max(0.0, started + (index + 1) / rate - time.perf_counter()))
    elapsed = time.perf_counter() - started
    sent = MeasuringComm.log[created:]
    view.close_all()
    return sent, elapsed, ideal


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["chunks", "tools"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--label", default="after")
    args = parser.parse_args()
    comm.create_comm = MeasuringComm
    updates, rate = updates_for(args.scenario)
    rates, last_seconds, messages, ideals = [], [], [], []
    for _ in range(args.rounds):
        sent, elapsed, ideal = await stream(updates, rate)
        end = max(t for t, _ in sent) if sent else time.perf_counter()
        rates.append(sum(b for _, b in sent) / elapsed)
        last_seconds.append(sum(b for t, b in sent if t > end - 1.0))
        messages.append(len(sent) / elapsed)
        ideals.append(ideal / elapsed)
    fig, ref = statistics.median(rates), statistics.median(ideals)
    what = {"chunks": "10,000 text chunks at 2,000/s", "tools": "3,000 tool calls (+ updates) at 600/s"}
    lines = [
        f"{args.label}: live turn view while streaming {what[args.scenario]}; {args.rounds} rounds, median",
        f"widget traffic:   {fig / 1000:,.1f} KB/s, {statistics.median(messages):.1f} messages/s; "
        f"last second of the turn: {statistics.median(last_seconds) / 1000:,.1f} KB",
        f"ideal incremental (ref, changed entries' HTML per tick): {ref / 1000:,.1f} KB/s",
        f"ratio: {fig / ref:.2f}",
    ]
    print("\n".join(lines))
    write_section(f"widget bytes: {args.scenario} ({args.label})", lines)


if __name__ == "__main__":
    asyncio.run(main())
