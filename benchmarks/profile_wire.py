"""Profile silo_nb's per-update path with pyinstrument (the ``bench`` extra): one turn of N updates from
``flood_agent.py`` through connect + prompt + journal + one listener, as ``throughput.py`` measures it.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/profile_wire.py [chunks|mix] [N]``; prints pyinstrument's
call tree (time per frame, frames under 2% hidden) and, below it, the total.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from pyinstrument import Profiler
from throughput import silo_rate


async def main(workload: str, count: int) -> None:
    prompt = str(count) if workload == "chunks" else f"mix {count}"
    with tempfile.TemporaryDirectory() as tmp:
        await silo_rate(prompt, count, Path(tmp))  # warm: imports, first connect
    with tempfile.TemporaryDirectory() as tmp:
        profiler = Profiler(interval=0.0005, async_mode="disabled")
        profiler.start()
        rate = await silo_rate(prompt, count, Path(tmp))
        profiler.stop()
    print(profiler.output_text(unicode=True, color=False, show_all=False, time="percent_of_total"))
    print(f"{workload}: {count:,} updates, {rate:,.0f} updates/s under the profiler")


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(main(args[0] if args else "chunks", int(args[1]) if len(args) > 1 else 20000))
