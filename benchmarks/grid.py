"""100 demo-agent sessions through ``run_grid`` at concurrency 8: wall time, peak memory, nothing left.

The grid is 5 prompts × 2 configs × 10 repeats = 100 cells, each a fresh ``python -m silo_nb.demo_agent``
subprocess (under its supervisor) in its own working copy, with a permission policy (the ``edit`` prompt
asks). While it runs, the process tree (this process and every descendant: supervisors and agents) is
sampled from ``/proc`` every 50 ms for its total RSS and how many agents are alive. Afterwards no
descendant may be left, nor any process carrying this run's private demo state folder in its
environment.

Run: ``.venv/bin/python benchmarks/grid.py [cells_per_config_prompt] [concurrency]``. Rewrites the
"grid" section of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import anyio
from _results import write_section

import silo_nb
from silo_nb.acp.supervisor import process_table

PROMPTS = ["hello there", "please edit notes.md", "plan the release", "explain mode", "refuse this"]
CONFIGS = [{"mode": "ask", "model": "demo-fast"}, {"mode": "code", "model": "demo-smart"}]
POLICY = silo_nb.PermissionPolicy("allow read", "allow edit inside", "reject edit outside")


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


async def main(repeats: int, concurrency: int) -> list[str]:
    me = os.getpid()
    peak = {"tree_kib": 0, "processes": 0}
    with tempfile.TemporaryDirectory() as folder:
        marker = str(Path(folder) / "demo-state")
        os.environ["SILO_NB_DEMO_STATE_DIR"] = marker

        async def sample() -> None:
            while True:
                pids = tree(me)
                peak["tree_kib"] = max(peak["tree_kib"], sum(rss_kib(pid) for pid in pids))
                peak["processes"] = max(peak["processes"], len(pids) - 1)
                await anyio.sleep(0.05)

        start = time.perf_counter()
        async with anyio.create_task_group() as group:
            group.start_soon(sample)
            df = await silo_nb.run_grid(
                PROMPTS,
                configs=CONFIGS,
                repeats=repeats,
                concurrency=concurrency,
                policy=POLICY,
                timeout=120,
                folder=folder,
                name="bench",
                config_dirs=[],
                progress=False,
            )
            wall = time.perf_counter() - start
            group.cancel_scope.cancel()
        left_tree = [pid for pid in tree(me) if pid != me]
        left_marked = marked(marker)
    cells = len(df)
    failed = int((df["cell_status"] != "finished").sum())
    assert not left_tree and not left_marked, (left_tree, left_marked)
    driver_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    agent_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return [
        f"{cells} demo-agent sessions (5 prompts x 2 configs x {repeats} repeats), "
        f"concurrency {concurrency}, {os.cpu_count()} CPUs",
        f"wall time: {wall:.1f} s ({wall / cells * concurrency:.2f} s per session per slot; "
        f"median turn {df['duration_s'].median():.2f} s)",
        f"cells failed: {failed}; turns ended: {df['stop_reason'].value_counts().to_dict()}",
        f"peak RSS, whole process tree (driver + supervisors + agents): {peak['tree_kib'] / 1024:.0f} MiB "
        f"with up to {peak['processes']} child processes",
        f"peak RSS, driver alone: {driver_peak / 1024:.0f} MiB; "
        f"largest single child: {agent_peak / 1024:.0f} MiB",
        f"processes left afterwards: {len(left_tree)} descendants, {len(left_marked)} with the run's marker",
    ]


if __name__ == "__main__":
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    concurrency = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    lines = anyio.run(main, repeats, concurrency)
    print("\n".join(lines))
    if repeats == 10 and concurrency == 8:
        write_section("grid", lines)
