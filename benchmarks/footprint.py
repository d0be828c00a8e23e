"""Import time, connect overhead and memory per update: what silo_nb costs besides its throughput.

- ``import silo_nb``: a fresh interpreter each time, bytecode cached, alternating with the reference
  ``import acp`` (the official SDK), medians. Target: at most 200 ms.
- connect overhead: ``sessions.connect`` of the flood agent (``flood_agent.py``) until the handle is ready,
  minus a hand-written handshake (the same spawn under the supervisor, then ``initialize`` and
  ``session/new`` as literal lines) to the same agent; alternating pairs, the median of their
  differences (a spawn alone varies by several ms). Target: about 1 ms.
- memory after N updates (the realistic mix): Python memory still allocated once a session has taken in one
  turn of N updates (``tracemalloc``, after a collection; the handle, its journal lines, everything it
  keeps), against the journal's size on disk. Target: at most 1.5 times the journal. The notebook's fold of
  the same updates is measured by the reducer's own benchmark.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/footprint.py [N] [rounds] [section]`` (``-``: print only).
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from _results import write_section

HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, str(HERE / "flood_agent.py")]
TIMED_IMPORT = "import time; t = time.perf_counter(); import {0}; print(time.perf_counter() - t)"


_PYCACHE = tempfile.mkdtemp(prefix="silo-bench-pycache-")
atexit.register(shutil.rmtree, _PYCACHE, True)


def import_seconds(module: str) -> float:
    """One fresh interpreter's import of ``module``, with bytecode cached (as an installed package has it;
    in a scratch folder, so the work tree stays clean, and even where PYTHONDONTWRITEBYTECODE is set)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = _PYCACHE
    out = subprocess.run(
        [sys.executable, "-c", TIMED_IMPORT.format(module)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return float(out.stdout)


def write_profile(folder: Path) -> None:
    (folder / "silo").mkdir(exist_ok=True)
    profile = {"id": "flood", "command": AGENT[0], "args": AGENT[1:]}
    (folder / "silo" / "profiles.json").write_text(json.dumps({"profiles": [profile]}))


async def silo_connect(folder: Path) -> float:
    import silo_nb

    write_profile(folder)
    service = silo_nb.AgentsService(workspace_dir=folder, config_dirs=[folder], data_dir=folder / "data")
    started = time.perf_counter()
    handle = await service.sessions.connect("flood")
    elapsed = time.perf_counter() - started
    await handle.aclose()
    return elapsed


async def bare_connect(folder: Path) -> float:
    """The same agent spawned the same way (``AgentProcess``: under the supervisor), then the handshake as
    literal lines: the difference to ``silo_connect`` is silo_nb's own connect logic."""
    from silo_nb.acp import AgentProcess

    started = time.perf_counter()
    process = await AgentProcess.spawn(AGENT[0], AGENT[1:], cwd=str(folder))
    for request in (
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}\n',
    ):
        await process.stdin.send(request)
        answer = b""
        while not answer.endswith(b"\n"):
            answer += await process.stdout.receive()
        json.loads(answer)
    elapsed = time.perf_counter() - started
    await process.terminate()
    return elapsed


async def memory_ratio(count: int, *, fold: bool = False) -> tuple[int, int]:
    """Bytes still allocated after a turn of ``count`` updates, and the journal's size; with ``fold``,
    the notebook's transcript of the turn is kept too (what a ``%%prompt`` cell holds)."""
    import silo_nb
    from silo_nb.updates.transcript import TranscriptBuilder

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_profile(folder)
        service = silo_nb.AgentsService(workspace_dir=folder, config_dirs=[folder], data_dir=folder / "data")
        handle = await service.sessions.connect("flood")
        seen = 0

        def listener(_update: silo_nb.AgentSessionUpdate) -> None:
            nonlocal seen
            seen += 1

        handle.on_update(listener)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        builder = TranscriptBuilder()
        if fold:
            handle.on_transcript(builder.apply)
        await handle.prompt([{"type": "text", "text": f"mix {count}"}])
        state = builder.state  # the transcript is held while measuring
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert seen == count and (not fold or state.entries)
        path = service.sessions.journals.path(handle.workspace_id, handle.session_id)
        await handle.aclose()
        return held, path.stat().st_size


async def main(count: int, rounds: int, section: str) -> None:
    import_seconds("silo_nb"), import_seconds("acp")  # fills the bytecode cache
    silo_imports, acp_imports = [], []
    for _ in range(rounds * 2):
        silo_imports.append(import_seconds("silo_nb"))
        acp_imports.append(import_seconds("acp"))
    silo_import, acp_import = statistics.median(silo_imports), statistics.median(acp_imports)
    ours, bare, overheads = [], [], []
    for _ in range(rounds * 3):  # a spawn varies by several ms: many alternating pairs, their median
        with tempfile.TemporaryDirectory() as tmp:
            ours.append(await silo_connect(Path(tmp)))
        with tempfile.TemporaryDirectory() as tmp:
            bare.append(await bare_connect(Path(tmp)))
        overheads.append(ours[-1] - bare[-1])
    connect, handshake, overhead = (
        statistics.median(ours),
        statistics.median(bare),
        statistics.median(overheads),
    )
    held, size = await memory_ratio(count)
    folded, _ = await memory_ratio(count, fold=True)
    lines = [
        f"rounds: {rounds}, alternating (medians); load average: {os.getloadavg()[0]:.2f}",
        f"rerun: PYTHONPATH=. .venv/bin/python benchmarks/footprint.py {count} {rounds}",
        f"import silo_nb:         {silo_import * 1000:.0f} ms  (target <= 200 ms)",
        f"import acp (reference): {acp_import * 1000:.0f} ms;  ratio {silo_import / acp_import:.2f}",
        f"connect:                {connect * 1000:.1f} ms",
        f"hand-written handshake: {handshake * 1000:.1f} ms (reference);  overhead "
        f"{overhead * 1000:.1f} ms (median of {len(overheads)} pairs; target ~1 ms)",
        f"memory after {count:,} updates: {held / 1e6:.1f} MB held; journal {size / 1e6:.1f} MB; "
        f"ratio {held / size:.2f} (target <= 1.5)",
        f"memory after {count:,} updates with the transcript fold (a notebook turn): "
        f"{folded / 1e6:.1f} MB held; ratio {folded / size:.2f} (target <= 1.5)",
    ]
    print("\n".join(lines))
    if section != "-":
        write_section(section, lines)


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(
        main(
            int(args[0]) if args else 100_000,
            int(args[1]) if len(args) > 1 else 5,
            args[2] if len(args) > 2 else "footprint",
        )
    )
