"""What ``run_grid(sandbox="bwrap")`` costs a cell: a spawn, and a whole demo-agent cell, with and without it.

Measured one at a time on this loop (no concurrency: the cost of one, not the machine's throughput):

1. spawn: ``AgentProcess.spawn`` of ``python -c pass`` (the supervisor, then the command, in bwrap or not)
   until it exits — the process start-up a sandbox adds to, nothing of ACP.
2. cell: ``run_cell`` of one demo-agent cell (a working copy, connect, one prompt, close, the diff) —
   what a grid pays per cell.

Each is run ``n`` times per mode, alternating the modes (so a busy neighbour slows both alike); the
median and the spread (first and third quartiles) are printed, and the overhead as the difference of
the medians — of the wall time, and of the CPU time (this process's and its reaped descendants', user +
system: far less swayed by the other work on a shared machine than the wall time). :func:`measure`
returns the figures for ``benchmarks/grid.py`` to reuse.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/sandbox_spawn.py [n]`` (default 20).
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import tempfile
import time
from typing import Any

import anyio

from silo_nb.acp import AgentProcess, Sandbox
from silo_nb.experiments import CellSpec, run_cell

MODES: tuple[str | None, ...] = (None, "bwrap")


def cpu_seconds() -> float:
    """User + system seconds of this process and of its descendants reaped so far."""
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


async def spawn_once(sandbox: str | None) -> float:
    """Seconds from spawn to exit of ``python -c pass`` under the supervisor (in ``sandbox`` or not)."""
    box = Sandbox(sandbox).bound([tempfile.gettempdir()]) if sandbox else None
    start = time.perf_counter()
    process = await AgentProcess.spawn(sys.executable, ["-c", "pass"], sandbox=box)
    code = await process.wait(30)
    elapsed = time.perf_counter() - start
    await process.terminate(stdin_grace=0)
    if code != 0:
        raise RuntimeError(f"the spawn in {sandbox} exited {code}: {process.stderr_tail()}")
    return elapsed


async def cell_once(sandbox: str | None, index: int) -> float:
    """Seconds of one demo-agent cell (``run_cell``), in ``sandbox`` or not."""
    spec = CellSpec(
        cell=f"bench-{sandbox or 'none'}-{index}",
        profile="demo",
        config={},
        prompts=("hello",),
        timeout=60,
        config_dirs=(),
        sandbox=sandbox,
    )
    start = time.perf_counter()
    result = await run_cell(spec)
    if result.status != "finished":
        raise RuntimeError(f"the cell in {sandbox} failed: {result.error}")
    return time.perf_counter() - start


def _figures(samples: list[float]) -> dict[str, float]:
    q1, median, q3 = statistics.quantiles(samples, n=4) if len(samples) > 1 else samples * 3
    return {"median_s": round(median, 4), "q1_s": round(q1, 4), "q3_s": round(q3, 4), "n": len(samples)}


async def measure(n: int = 20) -> dict[str, Any]:
    """The spawn's and the cell's seconds per mode (``None``, ``"bwrap"``) and the sandbox's overhead."""
    os.environ.setdefault("SILO_NB_DEMO_DELAY", "0")
    spawns: dict[str, list[float]] = {str(m): [] for m in MODES}
    cells: dict[str, list[float]] = {str(m): [] for m in MODES}
    cpu: dict[str, dict[str, list[float]]] = {kind: {str(m): [] for m in MODES} for kind in ("spawn", "cell")}
    for mode in MODES:  # a warm-up each (page cache, the first probe)
        await spawn_once(mode)
        await cell_once(mode, -1)
    for index in range(n):
        for mode in MODES:
            mark = cpu_seconds()
            spawns[str(mode)].append(await spawn_once(mode))
            cpu["spawn"][str(mode)].append(cpu_seconds() - mark)
            mark = cpu_seconds()
            cells[str(mode)].append(await cell_once(mode, index))
            cpu["cell"][str(mode)].append(cpu_seconds() - mark)
    out: dict[str, Any] = {
        "spawn": {mode: _figures(samples) for mode, samples in spawns.items()},
        "cell": {mode: _figures(samples) for mode, samples in cells.items()},
    }
    for kind in ("spawn", "cell"):
        bare, boxed = out[kind]["None"]["median_s"], out[kind]["bwrap"]["median_s"]
        out[kind]["bwrap_overhead_s"] = round(boxed - bare, 4)
        medians = {mode: statistics.median(samples) for mode, samples in cpu[kind].items()}
        out[kind]["cpu_median_s"] = {mode: round(value, 4) for mode, value in medians.items()}
        out[kind]["bwrap_cpu_overhead_s"] = round(medians["bwrap"] - medians["None"], 4)
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    figures = anyio.run(measure, n)
    for kind in ("spawn", "cell"):
        for mode in ("None", "bwrap"):
            f = figures[kind][mode]
            print(
                f"{kind:5} sandbox={mode:5}  median {f['median_s'] * 1000:7.1f} ms"
                f"  (q1 {f['q1_s'] * 1000:.1f}, q3 {f['q3_s'] * 1000:.1f}, n={f['n']})"
            )
        overhead = figures[kind]["bwrap_overhead_s"] * 1000
        cpu = figures[kind]["cpu_median_s"]
        extra = figures[kind]["bwrap_cpu_overhead_s"] * 1000
        print(f"{kind:5} bwrap overhead: {overhead:+.1f} ms wall (difference of medians)")
        print(
            f"{kind:5} CPU median: none {cpu['None'] * 1000:.1f} ms, bwrap {cpu['bwrap'] * 1000:.1f} ms"
            f" ({extra:+.1f} ms)"
        )


if __name__ == "__main__":
    main()
