"""Restore's fold: the reducer over a 100,000-update journal, vs a bare linear pass (the reference).

The updates are a realistic turn mix (text chunks of several messages, thoughts, tool calls and their
updates with diffs, plans, usage, an unknown kind), built once. Figure: seconds to ``fold_all`` them.
Reference: one loop over the same updates doing the least a linear fold must (a dict upsert per tool
call, a list append per chunk). Linearity: the fold at 10k, 50k and 100k updates. Reading the journal
(JSON decode) is not included: that is the sessions layer's part (``sessions/journal.parse_lines``).
Runs alternate (figure, reference), median of ``rounds``. ``--before REV`` also times the reducer of a
git revision (e.g. the commit before this change) on the 10k/50k updates, for the before column.

``--tuning on|off`` sets both of ``silo_nb.tuning``'s switches (default: as the environment says; only
``gc_tuning`` matters to a fold).

Run: ``python benchmarks/fold.py [--rounds 3] [--before REV] [--tuning on|off] [--section NAME]``;
rewrites "fold (restore reducer)" in RESULTS.md (``--section -``: print only).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

from _results import write_section

from silo_nb import tuning
from silo_nb.model.models import AgentSessionUpdate
from silo_nb.updates.parse import parse_update
from silo_nb.updates.transcript import fold_all

ROOT = Path(__file__).resolve().parent.parent


def wire(kind: str, /, **fields: Any) -> AgentSessionUpdate:
    update = parse_update({"sessionUpdate": kind, **fields})
    assert update is not None
    return update


def mixed_updates(count: int) -> list[AgentSessionUpdate]:
    """A turn mix: per 20 updates, 12 text chunks, 2 thoughts, a tool call, 3 updates (one with a diff),
    a plan or usage, and an unknown kind."""
    out: list[AgentSessionUpdate] = []
    i = 0
    while len(out) < count:
        m = f"m{i // 5}"
        out += [wire("agent_message_chunk", messageId=m, content={"type": "text", "text": f"tok {i} "})] * 12
        out += [wire("agent_thought_chunk", messageId=m, content={"type": "text", "text": "hmm "})] * 2
        tool = f"t{i}"
        out.append(wire("tool_call", toolCallId=tool, title=f"Edit f{i}.py", kind="edit", status="pending"))
        out.append(wire("tool_call_update", toolCallId=tool, status="in_progress"))
        diff = {"type": "diff", "path": f"f{i}.py", "oldText": "a\nb\n", "newText": "a\nc\n"}
        out.append(wire("tool_call_update", toolCallId=tool, content=[diff]))
        out.append(wire("tool_call_update", toolCallId=tool, status="completed"))
        out.append(
            wire("plan", entries=[{"content": f"step {i}", "status": "in_progress"}])
            if i % 2
            else wire("usage_update", used=i, size=10**6)
        )
        out.append(wire("vendor_progress"))
        i += 1
    return out[:count]


def reference(updates: list[AgentSessionUpdate]) -> int:
    """The least a linear fold does: one dict upsert per tool call, one append per other update."""
    tools: dict[str, int] = {}
    parts: list[str] = []
    for update in updates:
        call = update.tool_call
        if call is not None:
            tools[call.tool_call_id] = tools.get(call.tool_call_id, 0) + 1
        elif update.text is not None:
            parts.append(update.text)
    return len(tools) + len("".join(parts))


def timed(fn: Any, *args: Any) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def old_fold_all(rev: str) -> Any:
    source = subprocess.run(
        ["git", "show", f"{rev}:silo_nb/updates/transcript.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType("old_transcript")
    sys.modules["old_transcript"] = module
    exec(compile(source, "old_transcript.py", "exec"), module.__dict__)
    return module.fold_all


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default=None, help="a git revision whose reducer to time too")
    parser.add_argument("--tuning", choices=["on", "off"], default=None, help="both switches")
    parser.add_argument("--section", default="fold (restore reducer)", help="of RESULTS.md; -: print only")
    args = parser.parse_args()
    if args.tuning is not None:
        tuning.set_tuning(switch_interval=args.tuning == "on", gc_tuning=args.tuning == "on")
    switches = tuning.tuning()
    updates = mixed_updates(100_000)
    figure, ref = [], []
    for _ in range(args.rounds):  # alternating, so both see the same machine
        figure.append(timed(fold_all, updates))
        ref.append(timed(reference, updates))
    fig_s, ref_s = statistics.median(figure), statistics.median(ref)
    sizes = {
        n: statistics.median(timed(fold_all, updates[:n]) for _ in range(args.rounds))
        for n in (10_000, 50_000)
    }
    sizes[100_000] = fig_s
    lines = [
        f"fold_all of 100,000 mixed updates (chunks, tool calls + updates with diffs, plans, usage, unknown);"
        f" {args.rounds} alternating rounds, median; gc_tuning {'on' if switches.gc_tuning else 'off'}",
        f"fold (this reducer):        {fig_s:.3f} s",
        f"linear reference loop:      {ref_s:.3f} s",
        f"ratio fold / reference:     {fig_s / ref_s:.1f}",
        "linearity: "
        + ", ".join(f"{n // 1000}k {t:.3f} s" for n, t in sizes.items())
        + f" (100k / 10k = {sizes[100_000] / sizes[10_000]:.1f}; linear = 10)",
        "not included: the journal read (JSON decode), sessions/journal.parse_lines (another engineer's)",
    ]
    if args.before:
        old = old_fold_all(args.before)
        before = {n: timed(old, updates[:n]) for n in (10_000, 50_000)}
        lines.append(
            f"before ({args.before}): "
            + ", ".join(f"{n // 1000}k {t:.2f} s" for n, t in before.items())
            + " (quadratic; 100k not run)"
        )
    print("\n".join(lines))
    if args.section != "-":
        write_section(args.section, lines)


if __name__ == "__main__":
    sys.exit(main())
