"""``fork_grid`` vs ``run_grid``: N demo-agent cells of the same prompt, each a fork of a live session (a new
agent process that forks the parent by id, the parent's journal copied) or a new session, at the same
concurrency. Prints wall time and seconds per cell (slot-seconds: wall × concurrency ÷ cells) for each, and
the parent's conversation length, so the fork's own cost (the journal copy grows with the parent) shows.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/fork_grid.py [cells] [concurrency] [parent_turns]``
(default 40 4 5). Nothing is written to RESULTS.md.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

import silo_nb


async def main(cells: int, concurrency: int, parent_turns: int) -> None:
    with tempfile.TemporaryDirectory(prefix="silo-fork-bench-") as tmp:
        root = Path(tmp)
        os.environ.update(SILO_NB_DEMO_STATE_DIR=str(root / "demo-state"), SILO_NB_DEMO_DELAY="0")
        (root / "work").mkdir()
        service = silo_nb.AgentsService(workspace_dir=root / "work", data_dir=root / "data", config_dirs=[])
        options = {"repeats": cells, "concurrency": concurrency, "folder": root / "runs", "progress": False}
        start = time.monotonic()
        fresh = await silo_nb.run_grid(["hello"], **options)  # type: ignore[arg-type]
        grid_s = time.monotonic() - start
        handle = await service.sessions.connect("demo")
        try:
            for n in range(parent_turns):
                await handle.prompt([{"type": "text", "text": f"parent turn {n}"}])
            start = time.monotonic()
            forks = await silo_nb.fork_grid(handle, prompts=["hello"], **options)  # type: ignore[arg-type]
            fork_s = time.monotonic() - start
        finally:
            await handle.aclose()
        for label, df, wall in (("run_grid", fresh, grid_s), ("fork_grid", forks, fork_s)):
            ok = int((df.drop_duplicates("cell")["cell_status"] == "finished").sum())
            per_cell = wall * concurrency / cells
            print(f"{label:9} {cells} cells ({ok} finished) in {wall:.2f} s: {per_cell:.3f} slot-s per cell")
        print(f"parent: {parent_turns} turns, {len(handle.journal_lines())} journal lines copied per fork")


if __name__ == "__main__":
    argv = [int(a) for a in sys.argv[1:]]
    anyio.run(main, *(argv + [40, 4, 5][len(argv) :]))
