"""The kernel tools from the agent's side, in a REAL kernel: tool round trips, and ``1+1`` while they run.

A kernel (jupyter_client) loads silo_nb, makes a 100,000-row DataFrame and connects the demo agent, whose
turn is then held open (``%%prompt --bg`` asking to edit: it waits for a permission nobody gives), so the
tools answer. This process plays the agent: the official ``mcp`` SDK's client starts the relay the kernel
offered (``python -I .../kernel_tools/__main__.py``, the socket and token of the session) and calls
``list_variables`` then ``inspect_variable("df")``: stdio → relay → Unix socket → the kernel's loop.

- relay start: spawn → initialized → tools listed (the SDK's import dominates; once per session).
- round trip: ``list_variables`` + ``inspect_variable`` (N pairs), p50 / p95 of a pair.
- ``1+1`` p95 in the kernel, idle, and while the client calls the pair in a loop.

Run: ``python benchmarks/kernel_tools.py [--pairs 200] [--seconds 10] [--label after]``; rewrites the
section "kernel tools (<label>)" of RESULTS.md (``--label -``: print only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _results import write_section

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from kernel_latency import p95, ping  # noqa: E402
from mcp.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from tests.integration.kernel_harness import KernelHarness  # noqa: E402

SETUP = """
import numpy as np, pandas as pd
rng = np.random.default_rng(0)
df = pd.DataFrame({"group": rng.choice(["a", "b", "c"], 100_000), "value": rng.normal(size=100_000)})
"""
CONFIG = """
import json
_tools = get_ipython()._silo_nb.connections["demo"].kernel_tools.server_config
print(json.dumps({"command": _tools.command, "args": list(_tools.args), "env": _tools.env}))
"""


async def pair(client: Client) -> float:
    started = time.perf_counter()
    for tool, arguments in (("list_variables", {}), ("inspect_variable", {"name": "df"})):
        result = await client.call_tool(tool, arguments)
        if result.is_error:
            raise SystemExit(f"{tool} failed: {result.content}")
    return time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--label", default="after")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="silo-bench-tools-"))
    (root / "work").mkdir()
    env = {
        "SILO_NB_DATA_DIR": str(root / "data"),
        "SILO_NB_DEMO_STATE_DIR": str(root / "demo"),
        "SILO_NB_DEMO_DELAY": "0",
        "PYTHONPATH": str(HERE.parent),
    }
    kernel = await KernelHarness.start(root / "work", env)
    try:
        for code in ("%load_ext silo_nb", SETUP, "%silo connect demo", "%%prompt --bg\nedit the notes"):
            await kernel.run(code)
        msg_id = kernel.execute(CONFIG)
        await kernel.reply(msg_id)
        printed = "".join(m["content"].get("text", "") for m in kernel.outputs(msg_id, "stream"))
        config = json.loads(printed)
        idle = await ping(kernel, _after(1.0))
        started = time.perf_counter()
        params = StdioServerParameters(command=config["command"], args=config["args"], env=config["env"])
        async with Client(stdio_client(params, errlog=sys.stderr)) as client:
            await client.list_tools()
            start_up = time.perf_counter() - started
            trips = [await pair(client) for _ in range(args.pairs)]
            stop = asyncio.Event()
            calls = 0

            async def hammer() -> None:
                nonlocal calls
                while not stop.is_set():
                    await pair(client)
                    calls += 1

            task = asyncio.create_task(hammer())
            busy = await ping(kernel, _after(args.seconds))
            stop.set()
            await task
    finally:
        await kernel.stop()
    ms = [t * 1000 for t in trips]
    lines = [
        "the agent's side: the official mcp client -> relay (stdio) -> Unix socket -> the kernel's loop",
        f"relay start (spawn, initialize, tools/list): {start_up:.2f} s",
        f"list_variables + inspect_variable(df: 100,000 rows): p50 {statistics.median(ms):.1f} ms, "
        f"p95 {p95(ms):.1f} ms ({len(ms)} pairs)",
        f"1+1 p95: idle {p95(idle) * 1000:.1f} ms ({len(idle)}); while the agent calls that pair in a loop "
        f"{p95(busy) * 1000:.1f} ms ({len(busy)} round trips, {calls} pairs in {args.seconds:g} s)",
    ]
    print("\n".join(lines))
    if args.label != "-":
        write_section(f"kernel tools ({args.label})", lines)


def _after(seconds: float) -> Callable[[], bool]:
    deadline = time.perf_counter() + seconds
    return lambda: time.perf_counter() >= deadline


if __name__ == "__main__":
    asyncio.run(main())
