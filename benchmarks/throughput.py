"""How many streamed updates per second a client takes in, side by side with the official ACP Python SDK.

Both clients talk to the same subprocess agent (``flood_agent.py``), which answers a prompt with N
``agent_message_chunk`` notifications as fast as it can. silo_nb's figure includes everything a real
session does per update: lenient parsing into models, message ids, the journal append (flushed at the
turn end), status bookkeeping and an ``on_update`` listener. The SDK figure is its
``ClientSideConnection`` with a counting ``session_update`` handler.

Run: ``.venv/bin/python benchmarks/throughput.py [N] [rounds]``. Prints one line per client and the
ratio, and rewrites the "throughput" section of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from _results import write_section

import silo_nb

HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, str(HERE / "flood_agent.py")]


async def silo_rate(count: int, folder: Path) -> float:
    (folder / "silo").mkdir(exist_ok=True)
    profile = {"id": "flood", "command": AGENT[0], "args": AGENT[1:]}
    (folder / "silo" / "profiles.json").write_text(json.dumps({"profiles": [profile]}))
    service = silo_nb.AgentsService(workspace_dir=folder, config_dirs=[folder], data_dir=folder / "data")
    async with await service.sessions.connect("flood") as handle:
        seen = 0

        def count_update(_update: silo_nb.AgentSessionUpdate) -> None:
            nonlocal seen
            seen += 1

        handle.on_update(count_update)
        started = time.perf_counter()
        await handle.prompt([{"type": "text", "text": str(count)}])
        elapsed = time.perf_counter() - started
        assert seen == count, (seen, count)
        journal = await service.sessions.read_journal(handle.session_id)
        assert len(journal) == count + 1  # the synthesized prompt + every update
    return count / elapsed


async def sdk_rate(count: int, folder: Path) -> float:
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
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(str(count))])
        elapsed = time.perf_counter() - started
        assert Counter.seen == count, (Counter.seen, count)
    return count / elapsed


async def main(count: int, rounds: int) -> None:
    silo: list[float] = []
    sdk: list[float] = []
    for _ in range(rounds):  # interleaved, so both see the same machine load
        with tempfile.TemporaryDirectory() as tmp:
            silo.append(await silo_rate(count, Path(tmp)))
        with tempfile.TemporaryDirectory() as tmp:
            sdk.append(await sdk_rate(count, Path(tmp)))
    silo_median, sdk_median = statistics.median(silo), statistics.median(sdk)
    lines = [
        f"updates per turn: {count:,}; rounds: {rounds} (median shown)",
        f"silo_nb (parse + journal + status + listener): {silo_median:,.0f} updates/s",
        f"ACP Python SDK 0.12.1 ClientSideConnection:    {sdk_median:,.0f} updates/s",
        f"ratio silo_nb / SDK: {silo_median / sdk_median:.2f}",
    ]
    print("\n".join(lines))
    write_section("throughput", lines)


if __name__ == "__main__":
    anyio.run(
        main, int(sys.argv[1]) if len(sys.argv) > 1 else 20000, int(sys.argv[2]) if len(sys.argv) > 2 else 3
    )
