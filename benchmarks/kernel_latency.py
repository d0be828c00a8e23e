"""``1+1`` round trips in a REAL kernel while a ``%%prompt --bg`` turn streams, vs the same kernel idle.

A kernel (jupyter_client, as a browser would drive it) loads silo_nb and connects to
``benchmarks/scenario_agent.py``; then, per round: ``1+1`` is sent every 20 ms for 1 s with nothing
running (the reference), and then from the moment a ``%%prompt --bg <scenario>`` cell is sent until its
static transcript replaces the live view (the figure). Rounds alternate; the median of the rounds' p95s
is shown. Scenarios (issue 10, issue 8):

- ``chunks 100000``; ``mixed 20000`` (text, tool calls, updates with diffs); ``tools 20000`` (20,000
  distinct tool calls); ``markdown 1000000`` (1 MB of pathological Markdown);
- ``terminal 10000000``: the agent runs a command in a client terminal (``terminal/create``) that prints
  10 MB, shown inside its tool call (issue 18);
- ``next 100000``: a turn of 100,000 chunks first (not timed), then the figure is the next ``%%prompt``
  of a new cell (its restore check reads the journal) and its short turn.
- ``permissions 20``: ``tests/agents/permission_agent.py``'s hostile permission requests (10,000 options,
  a repeated option id, none, another session's id, a NUL path), SIZE times over in one turn; the buttons
  are clicked as they appear ("Option 3", "Reject") and at the end the answers the agent reports having
  received are checked against the ones clicked (issue 21).

``--silo-path DIR`` runs the kernel on another copy of silo_nb (the "before" figure). ``--tuning on|off``
sets both of ``silo_nb.tuning``'s switches in the kernel (its environment variables); without it the
kernel has this process's environment.

Run: ``python benchmarks/kernel_latency.py SCENARIO SIZE [--rounds 3] [--tuning on|off]``; rewrites the
section "kernel latency: SCENARIO SIZE (<label>)" of RESULTS.md (``--label -``: print only).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _results import write_section

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from tests.integration.kernel_harness import KernelHarness, Message  # noqa: E402

# silo_nb.tuning.ENVIRONMENT's names, written out: --silo-path may point at a copy without that module.
TUNING_VARIABLES = ("SILO_NB_SWITCH_INTERVAL", "SILO_NB_GC_TUNING")
# A 1+1 still unanswered after this long will never be. It was seen in about half of the runs until the
# harness's shell pump stopped waiting on its socket for good (a send on that socket can consume the
# poll's wake-up: see tests/integration/kernel_harness.py); the kernel had answered each time.
UNANSWERED = 60.0
WEDGED = f"a 1+1 got no reply in {UNANSWERED:.0f} s: look at the kernel (py-spy dump) and at the client"
BREAKDOWN: list[tuple[float, float, float]] | None = None  # --stalls: (round trip, started, replied)


def _stamp(value: Any) -> float:
    return (
        value if isinstance(value, datetime.datetime) else datetime.datetime.fromisoformat(value)
    ).timestamp()


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def ping(kernel: KernelHarness, until: Any, *, gap: float = 0.02, limit: float = 600) -> list[float]:
    """``1+1`` round trips (seconds) until ``until()`` is true."""
    samples: list[float] = []
    started = time.perf_counter()
    while not until() and time.perf_counter() - started < limit:
        sent, sent_wall = time.perf_counter(), time.time()
        try:  # answered: the reply
            reply = await kernel.reply(kernel.execute("1+1"), timeout=UNANSWERED, settled=False)
        except TimeoutError:
            raise SystemExit(WEDGED) from None
        samples.append(time.perf_counter() - sent)
        if BREAKDOWN is not None:
            began = _stamp(reply["metadata"]["started"]) - sent_wall
            replied = _stamp(reply["header"]["date"]) - sent_wall
            BREAKDOWN.append((samples[-1], began, replied))
        await asyncio.sleep(gap)
    return samples


def swapped(kernel: KernelHarness, msg_id: str) -> bool:
    """The prompt cell's live view was replaced by its static transcript (the turn ended)."""
    return any(
        m["msg_type"] == "update_display_data" and "text/markdown" in m["content"].get("data", {})
        for m in kernel.outputs(msg_id)
    )


async def prompt_round(kernel: KernelHarness, text: str, cell: str) -> list[float]:
    msg_id = kernel.execute(f"%%prompt --bg\n{text}", cell_id=cell)
    samples = await ping(kernel, lambda: swapped(kernel, msg_id))
    await kernel.reply(msg_id)
    return samples


PERMISSION_AGENT = HERE.parent / "tests" / "agents" / "permission_agent.py"
PERMISSION_ANSWERS = {
    "many": "o3",
    "duplicate": "cancelled",
    "empty": "cancelled",
    "foreign": "error -32602",
    "nul": "reject",
}


def _buttons(messages: list[Message], labels: tuple[str, ...]) -> list[str]:
    found = []
    for message in messages:
        if message["msg_type"] == "comm_open":
            state = message["content"].get("data", {}).get("state", {})
            if state.get("_model_name") == "ButtonModel" and state.get("description") in labels:
                found.append(message["content"]["comm_id"])
    return found


async def permissions_round(kernel: KernelHarness, rounds: int, cell: str) -> list[float]:
    """A --bg turn of hostile permission requests, clicked as they appear; the answers checked after."""
    msg_id = kernel.execute("%%prompt perm --bg\ngo", cell_id=cell)
    try:  # the cell returns at once (--bg); pinging starts then
        await kernel.reply(msg_id, timeout=UNANSWERED, settled=False)
    except TimeoutError:
        raise SystemExit(f"the %%prompt --bg cell got no reply in {UNANSWERED:.0f} s") from None
    seen = len(kernel.iopub)

    async def clicker() -> None:  # reads each message once: the figure is the kernel's, not this loop's
        nonlocal seen
        while True:
            fresh, seen = kernel.iopub[seen:], len(kernel.iopub)
            for comm_id in _buttons(fresh, ("Option 3", "Reject")):
                kernel.click(comm_id)
            await asyncio.sleep(0.05)

    start = len(kernel.iopub)

    def ended() -> str | None:
        for message in kernel.iopub[start:]:
            content = message["content"]
            if (
                message["msg_type"] == "update_display_data"
                and "text/markdown" in content.get("data", {})
                and content["metadata"].get("silo", {}).get("cell_id") == cell
            ):
                return str(content["data"]["text/plain"])
        return None

    task = asyncio.create_task(clicker())
    try:
        samples = await ping(kernel, lambda: ended() is not None)
    finally:
        task.cancel()
    plain = ended() or ""
    reported = next(line for line in plain.splitlines() if "[[" in line)
    received = json.loads(reported[reported.index("[[") :])
    expected = [[label, answer] for _ in range(rounds) for label, answer in PERMISSION_ANSWERS.items()]
    if received != expected:
        raise SystemExit(f"the agent received other answers than the ones clicked: {received[:10]}")
    return samples


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "scenario",
        choices=["chunks", "mixed", "tools", "markdown", "terminal", "next", "permissions"],
    )
    parser.add_argument("size", type=int)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--silo-path", default=str(HERE.parent))
    parser.add_argument("--label", default="after", help="of the RESULTS.md section; -: print only")
    parser.add_argument("--tuning", choices=["on", "off"], default=None, help="both switches of the kernel")
    parser.add_argument("--profile", default=None, help="write a pyinstrument profile of the kernel here")
    parser.add_argument("--stalls", action="store_true", help="print where the kernel's loop stalled")
    args = parser.parse_args()
    global BREAKDOWN
    BREAKDOWN = [] if args.stalls else None
    root = Path(tempfile.mkdtemp(prefix="silo-bench-latency-"))
    profiles = root / "profiles.json"
    agent = {
        "id": "bench",
        "label": "Bench",
        "command": sys.executable,
        "args": [str(HERE / "scenario_agent.py")],
    }
    hostile = {
        "id": "perm",
        "label": "Hostile",
        "command": sys.executable,
        "args": [str(PERMISSION_AGENT), str(args.size)],
    }
    profiles.write_text(json.dumps({"profiles": [agent, hostile]}))
    env = {
        "SILO_NB_DATA_DIR": str(root / "data"),
        "SILO_NB_PROFILES": str(profiles),
        "PYTHONPATH": args.silo_path,
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    if args.tuning is not None:
        env.update(dict.fromkeys(TUNING_VARIABLES, "1" if args.tuning == "on" else "0"))
    (root / "work").mkdir()
    kernel = await KernelHarness.start(root / "work", env)
    try:
        await kernel.run("%load_ext silo_nb")
        await kernel.run("%silo connect bench")
        if args.scenario == "permissions":
            await kernel.run("%silo connect perm")
        if args.profile:
            await kernel.run("from pyinstrument import Profiler\n_prof = Profiler(async_mode='disabled')")
        if args.stalls:
            await kernel.run(f"exec(open({str(HERE / 'stall_probe.py')!r}).read())")
        figures, references = [], []
        for round_ in range(args.rounds):
            idle_until = time.perf_counter() + 1.0
            references.append(p95(await ping(kernel, lambda t=idle_until: time.perf_counter() > t)))
            if args.profile:
                await kernel.run("_prof.start()")
            if args.scenario == "permissions":
                samples = await permissions_round(kernel, args.size, f"perm-{round_}")
            elif args.scenario == "next":
                await prompt_round(kernel, f"chunks {args.size}", f"fill-{round_}")  # not timed
                samples = await prompt_round(kernel, "chunks 10", f"next-{round_}")
            else:
                samples = await prompt_round(kernel, f"{args.scenario} {args.size}", f"cell-{round_}")
            figures.append(p95(samples))
            if args.profile:
                code = f"_prof.stop()\nopen({args.profile!r}, 'w').write(_prof.output_text(color=False))"
                await kernel.run(code)
            if args.stalls:
                shown = kernel.execute("print(_stall_probe.report()); _stall_probe.reset()")
                await kernel.reply(shown)
                print("".join(m["content"]["text"] for m in kernel.outputs(shown, "stream")))
                slow = sorted(BREAKDOWN or [], reverse=True)[:6]
                print("slowest pings (ms): round trip / kernel started it / kernel replied")
                print(
                    "  " + "; ".join(f"{a * 1000:.0f} / {b * 1000:.0f} / {c * 1000:.0f}" for a, b, c in slow)
                )
                BREAKDOWN = []
            print(
                f"round {round_}: idle p95 {references[-1] * 1000:.0f} ms, streaming p95 "
                f"{figures[-1] * 1000:.0f} ms over {len(samples)} pings, max {max(samples) * 1000:.0f} ms"
            )
    finally:
        await kernel.stop()
    fig, ref = statistics.median(figures), statistics.median(references)
    what = {
        "next": f"the next %%prompt after a turn of {args.size:,} chunks (journal ≥ {args.size:,} updates)",
        "chunks": f"a turn of {args.size:,} text chunks",
        "mixed": f"a turn of {args.size:,} mixed updates (text, tool calls, updates with diffs)",
        "tools": f"a turn of {args.size:,} distinct tool calls (each then completed)",
        "markdown": f"a turn of {args.size / 1e6:g} MB of pathological Markdown",
        "terminal": f"a client terminal streaming {args.size / 1e6:g} MB of output inside a tool call",
        "permissions": f"{args.size} rounds of hostile permission requests (10,000 options, a repeated id, "
        "none, another session's, a NUL path), clicked as they appear; answers received = answers clicked",
    }[args.scenario]
    tuned = "" if args.tuning is None else f"; tuning {args.tuning}"
    lines = [
        f"{args.label}: `1+1` round trip in a real kernel during {what}; {args.rounds} alternating rounds"
        + tuned,
        f"p95 while streaming: {fig * 1000:,.0f} ms (median of rounds: "
        + ", ".join(f"{f * 1000:,.0f}" for f in figures)
        + ")",
        f"p95 idle (ref):      {ref * 1000:,.0f} ms",
        f"ratio: {fig / ref:.1f}",
    ]
    print("\n".join(lines))
    if args.label != "-":
        write_section(f"kernel latency: {args.scenario} {args.size} ({args.label})", lines)


if __name__ == "__main__":
    asyncio.run(main())
