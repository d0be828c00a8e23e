"""What making a grid cell attachable costs (issue 33, item 5): the channel each cell opens.

Measured on the demo agent, one cell at a time (so the machine's other work disturbs it least), ``run_cell``
of the same prompt N times with the channel (``live_dir`` set: a private socket, its link file, the
transcript listener, all closed at the end) and N times without, interleaved (with, without, with…) so
drift hits both alike. Printed: the median and mean seconds per cell of each, and their difference.
Also: a viewer attached to every cell of a second series (it receives the journal as it is written),
the cost for the cell it watches.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/live_cells.py [cells]`` (default 40).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from silo_nb.experiments import AttachedCell, CellSpec, locate_cell, run_cell

PROMPT = "hello there"


def spec(cell: str, live: Path | None) -> CellSpec:
    return CellSpec(
        cell=cell,
        profile="demo",
        config={},
        prompts=(PROMPT,),
        timeout=60.0,
        config_dirs=(),
        live_dir=str(live) if live is not None else None,
    )


async def watched(cell_spec: CellSpec, run: Path) -> float:
    """One cell with a viewer attached as soon as its link appears; the cell's seconds."""
    start = time.perf_counter()
    async with anyio.create_task_group() as group:

        async def view() -> None:
            for _ in range(2000):
                live = run / "live" / f"{cell_spec.cell}.json"
                if live.is_file():
                    link = await AttachedCell.connect(locate_cell(run, cell_spec.cell))
                    await link.pump()
                    return
                await anyio.sleep(0.005)

        group.start_soon(view)
        await run_cell(cell_spec)
        seconds = time.perf_counter() - start
        group.cancel_scope.cancel()
    return seconds


async def main(cells: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="silo-live-bench-"))
    os.environ.update(SILO_NB_DEMO_STATE_DIR=str(root / "demo-state"), SILO_NB_DEMO_DELAY="0")
    run = root / "run"
    run.mkdir(mode=0o700)
    (run / "run.json").write_text(
        '{"name": "run", "cells": [' + ", ".join(f'{{"cell": "c{i}"}}' for i in range(cells)) + "]}",
        encoding="utf-8",
    )
    await run_cell(spec("warm", None))  # imports and caches, once
    plain: list[float] = []
    live: list[float] = []
    viewed: list[float] = []
    for i in range(cells):
        for series, target in ((live, run / "live"), (plain, None)):
            start = time.perf_counter()
            result = await run_cell(spec(f"c{i}", target))
            assert result.status == "finished", result.error
            series.append(time.perf_counter() - start)
        viewed.append(await watched(spec(f"c{i}", run / "live"), run))
    for name, series in (("without channel", plain), ("with channel", live), ("with a viewer", viewed)):
        print(
            f"{name:16} median {statistics.median(series) * 1000:7.1f} ms  "
            f"mean {statistics.mean(series) * 1000:7.1f} ms  (n={len(series)})"
        )
    delta = statistics.median(live) - statistics.median(plain)
    print(f"channel overhead per cell (median difference): {delta * 1000:+.1f} ms")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 40)
