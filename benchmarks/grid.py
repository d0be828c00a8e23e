"""1,000 demo-agent cells through ``run_grid`` at concurrency 16, here and on a Dask LocalCluster.

Measured, each on a fresh private demo state folder (the marker that finds this run's processes):

1. bare: the same agent driven without silo_nb — spawn ``python -m silo_nb_agents.demo``, ``initialize``,
   ``session/new``, one ``session/prompt``, terminate — N/5 times at the same concurrency (a raw JSON-RPC
   client over the pipes, nothing else), before and after the grids (the mean is the floor a grid cell
   is compared with).
2. local: ``run_grid`` of N cells of the same prompt on this loop (each cell: a working copy, its
   supervisor and agent, the journal, the diff, the record), concurrency 16.
2b. sandboxed: the same N cells with ``sandbox="bwrap"`` (each agent in bubblewrap, seeing only its copy
   read-write), compared with the bare agent run in bubblewrap the same way (its spawn wrapped by
   :class:`silo_nb.Sandbox`), N/5 sessions before and after — so the sandbox's own cost and silo_nb's
   overhead on top of it are told apart.
3. dask: the same N cells on ``LocalCluster(n_workers=2, threads_per_worker=8, processes=True)``.
4. scored: the stats task (``notebooks/data/stats-task``: a template, an edit asking permission, the
   task's check as a ``command_scorer`` and a plain-function scorer), M cells; the scorers' and the
   diff's own seconds are in each cell's record (``timings``).

For each: wall time, cells per second, the per-cell overhead over the bare agent (slot-seconds: wall ×
concurrency ÷ cells, minus the bare run's), peak RSS of the whole process tree (this process, supervisors,
agents, Dask workers; sampled from /proc every 50 ms), and the processes left afterwards (descendants,
and any process with the marker in its environment) — which must be none.

Run: ``.venv/bin/python benchmarks/grid.py [cells] [concurrency] [scored_cells]`` (default 1000 16 200).
With the defaults it rewrites the "grid" section of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from _results import write_section

import silo_nb
from silo_nb.acp.supervisor import process_table

PROMPT = "hello there"
TASK = Path(__file__).resolve().parents[1] / "notebooks" / "data" / "stats-task"
TASKS = ["mean", "median", "mode", "variance"]


def tree(root: int) -> list[int]:
    """``root`` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for pid, _state, ppid, _pgrp in process_table() or []:
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def marked(marker: str) -> list[int]:
    left = []
    for pid, state, _ppid, _pgrp in process_table() or []:
        try:
            if state != b"Z" and marker.encode() in Path(f"/proc/{pid}/environ").read_bytes():
                left.append(pid)
        except OSError:
            continue
    return [pid for pid in left if pid != os.getpid()]


def cpu_seconds() -> float:
    """User + system CPU of this process and of every child (and theirs) it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def measured(work: Callable[[], Awaitable[Any]]) -> tuple[Any, float, dict[str, float]]:
    """Run ``work`` while sampling the process tree; (its result, wall seconds, peaks and CPU seconds)."""
    me = os.getpid()
    peak: dict[str, float] = {"kib": 0, "processes": 0, "cpu": -cpu_seconds()}

    async def sample() -> None:
        while True:
            pids = tree(me)
            peak["kib"] = max(peak["kib"], sum(rss_kib(pid) for pid in pids))
            peak["processes"] = max(peak["processes"], len(pids) - 1)
            await anyio.sleep(0.05)

    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        group.start_soon(sample)
        result = await work()
        wall = time.perf_counter() - start
        group.cancel_scope.cancel()
    peak["cpu"] += cpu_seconds()
    return result, wall, peak


async def bare_session(env: dict[str, str], cwd: str, sandboxed: bool = False) -> float:
    """spawn + initialize + session/new + one prompt + close, with no silo_nb in between (in bubblewrap
    when ``sandboxed``: the argv ``run_grid(sandbox="bwrap")`` would run, nothing else)."""
    start = time.perf_counter()
    argv = [sys.executable, "-m", "silo_nb_agents.demo"]
    if sandboxed:
        argv = silo_nb.Sandbox("bwrap").bound([cwd]).wrap(argv, env=env, cwd=cwd)
    process = await anyio.open_process(argv, env=env, cwd=cwd)
    assert process.stdin is not None and process.stdout is not None
    buffer = b""

    async def call(number: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        nonlocal buffer
        line = {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
        await process.stdin.send(json.dumps(line).encode() + b"\n")  # type: ignore[union-attr]
        while True:
            while b"\n" not in buffer:
                buffer += await process.stdout.receive()  # type: ignore[union-attr]
            raw, buffer = buffer.split(b"\n", 1)
            message = json.loads(raw)
            if message.get("id") == number and "method" not in message:
                return dict(message)

    await call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session = (await call(2, "session/new", {"cwd": cwd, "mcpServers": []}))["result"]["sessionId"]
    await call(3, "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": PROMPT}]})
    process.terminate()  # the answer is in: a bare client has nothing more to ask
    await process.wait()
    return time.perf_counter() - start


async def bare(cells: int, concurrency: int, folder: str, sandboxed: bool = False) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    limiter = anyio.CapacityLimiter(concurrency)
    seconds: list[float] = []

    async def one() -> None:
        async with limiter:
            seconds.append(await bare_session(env, folder, sandboxed))

    async with anyio.create_task_group() as group:
        for _ in range(cells):
            group.start_soon(one)
    return seconds


def per_cell(wall: float, cells: int, concurrency: int) -> float:
    """Slot-seconds per cell: what one cell costs of one of the ``concurrency`` slots."""
    return wall * concurrency / cells


def check_nothing_left(marker: str) -> str:
    """What is left of the run's processes (waiting up to 15 s: Dask's workers take a moment to go)."""
    deadline = time.monotonic() + 15
    while True:
        left = {pid for pid in tree(os.getpid()) if pid != os.getpid()} | set(marked(marker))
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if not left:
        return "none"
    names = []
    for pid in sorted(left):
        try:
            names.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:80])
        except OSError:
            names.append(str(pid))
    return f"{len(left)}: " + "; ".join(names)


def records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((folder / "cells").glob("*.json"))]


def report(label: str, counts: tuple[int, int], wall: float, peak: dict[str, float], left: str) -> str:
    cells, concurrency = counts
    return (
        f"{label}: {wall:.1f} s wall, {cells / wall:.2f} cells/s, {per_cell(wall, cells, concurrency):.3f} "
        f"slot-s and {peak['cpu'] / cells:.3f} CPU-s per cell; peak RSS {peak['kib'] / 1024:.0f} MiB with "
        f"up to {peak['processes']:.0f} processes; left afterwards: {left}"
    )


async def main(cells: int, concurrency: int, scored_cells: int) -> list[str]:
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        marker = str(Path(folder) / "demo-state")
        os.environ.update(SILO_NB_DEMO_STATE_DIR=marker, SILO_NB_DEMO_DELAY="0")
        os.environ.pop("SILO_NB_PROFILES", None)
        (Path(folder) / "bare").mkdir()
        bare_cells = max(concurrency, cells // 5)

        async def bare_run(sandboxed: bool = False) -> tuple[float, float, list[float]]:
            seconds, wall, peak = await measured(
                lambda: bare(bare_cells, concurrency, f"{folder}/bare", sandboxed)
            )
            label = f"bare agent{' in bwrap' if sandboxed else ''}, {bare_cells} sessions"
            lines.append(
                report(label, (bare_cells, concurrency), wall, peak, "n/a")
                + f"; median session {statistics.median(seconds):.3f} s"
            )
            return per_cell(wall, bare_cells, concurrency), peak["cpu"] / bare_cells, seconds

        def grid(name: str, executor: Any = None, **options: Any) -> Any:
            return silo_nb.run_grid(
                options.pop("prompts", [PROMPT]),
                repeats=options.pop("repeats", cells),
                concurrency=concurrency,
                timeout=300,
                folder=folder,
                name=name,
                config_dirs=[],
                progress=False,
                executor=executor,
                **options,
            )

        slot_before, cpu_before, _ = await bare_run()
        df, wall, peak = await measured(lambda: grid("local"))
        local = (wall, peak, check_nothing_left(marker), int((df["cell_status"] != "finished").sum()))
        boxed_before, boxed_cpu_before, _ = await bare_run(sandboxed=True)
        df, wall, peak = await measured(lambda: grid("sandboxed", sandbox="bwrap"))
        boxed = (wall, peak, check_nothing_left(marker), int((df["cell_status"] != "finished").sum()))
        boxed_after, boxed_cpu_after, _ = await bare_run(sandboxed=True)
        boxed_slot, boxed_cpu = (boxed_before + boxed_after) / 2, (boxed_cpu_before + boxed_cpu_after) / 2

        import distributed

        async def on_dask() -> Any:
            async with (
                distributed.LocalCluster(
                    n_workers=2,
                    threads_per_worker=concurrency // 2,
                    processes=True,
                    dashboard_address=None,
                    worker_dashboard_address=None,
                    asynchronous=True,
                ) as cluster,
                distributed.Client(cluster, asynchronous=True) as client,
            ):
                return await grid("dask", executor=client)

        df, wall, peak = await measured(on_dask)
        dask = (wall, peak, check_nothing_left(marker), int((df["cell_status"] != "finished").sum()))
        slot_after, cpu_after, _ = await bare_run()
        bare_slot, bare_cpu = (slot_before + slot_after) / 2, (cpu_before + cpu_after) / 2
        for label, (wall, peak, left, failed), (floor_slot, floor_cpu, floor) in (
            (f"run_grid on this loop, {cells} cells", local, (bare_slot, bare_cpu, "the bare agent")),
            (
                f"run_grid on this loop, {cells} cells, sandbox='bwrap'",
                boxed,
                (boxed_slot, boxed_cpu, "the bare agent in bwrap"),
            ),
            (
                f"run_grid on a Dask LocalCluster (2 processes × {concurrency // 2} threads, start counted)",
                dask,
                (bare_slot, bare_cpu, "the bare agent"),
            ),
        ):
            lines.append(report(label, (cells, concurrency), wall, peak, left) + f"; failed {failed}")
            extra = per_cell(wall, cells, concurrency) - floor_slot
            lines.append(
                f"  overhead per cell over {floor}: {extra:+.3f} slot-s, "
                f"{peak['cpu'] / cells - floor_cpu:+.3f} CPU-s ({floor}: {floor_slot:.3f} slot-s, "
                f"{floor_cpu:.3f} CPU-s, the mean of the runs before and after)"
            )
        lines.append(
            f"  the sandbox itself (bare agent in bwrap − bare agent): {boxed_slot - bare_slot:+.3f} slot-s, "
            f"{boxed_cpu - bare_cpu:+.3f} CPU-s per session (the bare agent's CPU-s in bwrap leave out the "
            "agent itself: it is terminated, and bwrap's init in the namespace reports no child's usage; "
            "compare the slot-s)"
        )

        check = silo_nb.command_scorer(lambda run: [sys.executable, "check.py", TASKS[run.prompt_index]])
        repeats = max(1, scored_cells // (len(TASKS) * 2))
        df, wall, peak = await measured(
            lambda: grid(
                "scored",
                prompts=[f"fix {name} in stats.py" for name in TASKS],
                configs=[{"model": "demo-fast"}, {"model": "demo-smart"}],
                repeats=repeats,
                template=TASK,
                policy=silo_nb.PermissionPolicy("allow read", "allow edit inside"),
                scorers={"tests": check, "done": lambda run: "done" in run.final_text},
            )
        )
        done = records(Path(folder) / "scored")
        score_s = [r["timings"]["score_s"] for r in done]
        diff_s = [r["timings"]["diff_s"] for r in done]
        rates = df.groupby("model")["score.tests"].mean().to_dict()
        lines.append(
            report(
                f"stats task, {len(df)} cells (a template, an allowed edit, the diff, the task's check + a "
                "function as scorers)",
                (len(df), concurrency),
                wall,
                peak,
                check_nothing_left(marker),
            )
        )
        lines.append(
            f"  per cell: scorers median {statistics.median(score_s):.3f} s "
            f"(mean {statistics.mean(score_s):.3f}), "
            f"diff median {statistics.median(diff_s) * 1000:.1f} ms; pass rate "
            + ", ".join(f"{k} {v:.0%}" for k, v in rates.items())
        )
        started = time.perf_counter()
        await silo_nb.rescore(Path(folder) / "scored", {"tests": check}, concurrency=concurrency)
        again = time.perf_counter() - started
        lines.append(
            f"rescore of those {len(df)} cells (rebuild each copy + the check, no agent): {again:.1f} s, "
            f"{per_cell(again, len(df), concurrency):.3f} slot-s per cell"
        )
    lines.append(
        f"{os.cpu_count()} CPUs, shared with another engineer's work while it ran (wall figures swing; CPU-s "
        "less). 'left' counts descendants and processes with the run's marker, after up to 15 s; the "
        "multiprocessing resource tracker that LocalCluster starts lives as long as this process (named)."
    )
    return lines


if __name__ == "__main__":
    cells = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    concurrency = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    scored_cells = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    lines = anyio.run(main, cells, concurrency, scored_cells)
    print("\n".join(lines))
    if (cells, concurrency, scored_cells) == (1000, 16, 200):
        write_section("grid", lines)
