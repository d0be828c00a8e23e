"""Streamed updates per second into a client, side by side with the official ACP Python SDK and a bare reader.

Every client talks to the same subprocess agent (``flood_agent.py``), which answers a prompt with N updates
as fast as it can: ``chunks`` (``agent_message_chunk`` only) and ``mix`` (chunks, thoughts, tool calls,
tool-call updates with text and 30-line diffs). Clients, run in alternation, each round all of them:

- ``silo_nb``: everything a real session does per update — connect, prompt, lenient parsing, message ids,
  the journal (flushed at the turn end and read back to check every line is there), status bookkeeping and
  one ``on_update`` listener.
- ``silo_nb, null journal``: the same with ``JournalWriter.append`` a no-op (no encoding, no write): the
  journal's cost while streaming is the ratio of the two.
- ``ACP SDK``: agent-client-protocol 0.12.1's ``ClientSideConnection`` with a counting ``session_update``.
- ``bare reader``: a hand-written handshake, then 64 KiB reads, ``split`` into lines and ``json.loads`` of
  each: the floor of what any Python client can do.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/throughput.py [N] [rounds] [section]``. Prints each figure,
its reference and the ratio (medians over the rounds), and rewrites ``section`` of ``benchmarks/RESULTS.md``
(default ``throughput``; ``-`` writes nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from _results import write_section

import silo_nb
from silo_nb.sessions.journal import JournalWriter

HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, str(HERE / "flood_agent.py")]

Client = Callable[[str, int, Path], Awaitable[float]]


@contextlib.contextmanager
def null_journal() -> Iterator[None]:
    original = JournalWriter.append
    JournalWriter.append = lambda self, update, value=None: None  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        JournalWriter.append = original  # type: ignore[method-assign]


async def silo_rate(prompt: str, count: int, folder: Path, *, journal: bool = True) -> float:
    (folder / "silo").mkdir(exist_ok=True)
    profile = {"id": "flood", "command": AGENT[0], "args": AGENT[1:]}
    (folder / "silo" / "profiles.json").write_text(json.dumps({"profiles": [profile]}))
    service = silo_nb.AgentsService(workspace_dir=folder, config_dirs=[folder], data_dir=folder / "data")
    with contextlib.nullcontext() if journal else null_journal():
        async with await service.sessions.connect("flood") as handle:
            seen = 0

            def count_update(_update: silo_nb.AgentSessionUpdate) -> None:
                nonlocal seen
                seen += 1

            handle.on_update(count_update)
            started = time.perf_counter()
            await handle.prompt([{"type": "text", "text": prompt}])
            elapsed = time.perf_counter() - started
            assert seen == count, (seen, count)
            if journal:
                lines = await service.sessions.read_journal(handle.session_id)
                assert len(lines) == count + 2  # the synthesized prompt, every update, the turn_end line
    return count / elapsed


async def silo_null_rate(prompt: str, count: int, folder: Path) -> float:
    return await silo_rate(prompt, count, folder, journal=False)


async def sdk_rate(prompt: str, count: int, folder: Path) -> float:
    import acp

    class Counter:
        seen = 0

        async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
            Counter.seen += 1

        async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
            raise acp.RequestError.method_not_found("session/request_permission")

        def on_connect(self, conn: Any) -> None:
            pass

    Counter.seen = 0
    async with acp.spawn_agent_process(
        Counter(), AGENT[0], *AGENT[1:], cwd=folder, transport_kwargs={"limit": 64 * 1024 * 1024}
    ) as (conn, _process):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(folder), mcp_servers=[])
        started = time.perf_counter()
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(prompt)])
        elapsed = time.perf_counter() - started
        assert Counter.seen == count, (Counter.seen, count)
    return count / elapsed


async def bare_rate(prompt: str, count: int, folder: Path) -> float:
    """A hand-written client: the handshake as literal lines, then read, split, ``json.loads``."""
    proc = await asyncio.create_subprocess_exec(
        *AGENT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=folder
    )
    assert proc.stdin is not None and proc.stdout is not None
    requests = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": str(folder), "mcpServers": []},
        },
    ]
    for request in requests:
        proc.stdin.write((json.dumps(request) + "\n").encode())
        await proc.stdin.drain()
        await proc.stdout.readline()
    prompt_request = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "session/prompt",
        "params": {"sessionId": "flood", "prompt": [{"type": "text", "text": prompt}]},
    }
    seen = 0
    started = time.perf_counter()
    proc.stdin.write((json.dumps(prompt_request) + "\n").encode())
    await proc.stdin.drain()
    rest = b""
    done = False
    while not done:
        data = await proc.stdout.read(1 << 16)
        if not data:
            break
        *lines, rest = (rest + data).split(b"\n")
        for line in lines:
            message = json.loads(line)
            if "method" in message:
                seen += 1
            elif message.get("id") == 2:
                done = True
    elapsed = time.perf_counter() - started
    proc.stdin.close()
    await proc.wait()
    assert seen == count, (seen, count)
    return count / elapsed


CLIENTS: dict[str, Client] = {
    "silo_nb": silo_rate,
    "silo_nb, null journal": silo_null_rate,
    "ACP SDK 0.12.1": sdk_rate,
    "bare reader": bare_rate,
}
TARGETS = {"chunks": 3.0, "mix": 2.5}


async def measure(prompt: str, count: int, rounds: int) -> dict[str, float]:
    rates: dict[str, list[float]] = {name: [] for name in CLIENTS}
    for _ in range(rounds):  # alternating, so every client sees the same machine load
        for name, client in CLIENTS.items():
            with tempfile.TemporaryDirectory() as tmp:
                gc.collect()
                rates[name].append(await client(prompt, count, Path(tmp)))
    return {name: statistics.median(values) for name, values in rates.items()}


async def main(count: int, rounds: int, section: str) -> None:
    lines = [
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average before: {os.getloadavg()[0]:.2f}",
        f"updates per turn: {count:,}; rounds: {rounds}, clients alternating (medians shown)",
        f"rerun: PYTHONPATH=. .venv/bin/python benchmarks/throughput.py {count} {rounds}",
    ]
    for workload, prompt in (("chunks", str(count)), ("mix", f"mix {count}")):
        rate = await measure(prompt, count, rounds)
        silo, null, sdk, bare = (rate[name] for name in CLIENTS)
        lines += [
            "",
            f"[{workload}]",
            *(f"  {name:<24} {value:>10,.0f} updates/s" for name, value in rate.items()),
            f"  silo_nb / SDK:            {silo / sdk:.2f}  (target >= {TARGETS[workload]})",
        ]
        if workload == "chunks":
            lines.append(f"  silo_nb / bare reader:    {silo / bare:.2f}  (target >= 0.5)")
        lines.append(f"  journal on / null writer: {silo / null:.2f}  (target >= 0.9)")
        print("\n".join(lines[-8:]), flush=True)
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
            args[2] if len(args) > 2 else "throughput",
        )
    )
