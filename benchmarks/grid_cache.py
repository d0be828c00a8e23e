"""The grid cache (``run_grid(cache=True)``): what a look-up costs with many runs, and a hit against a run.

1. look-up: R runs of C finished cells each, indexed as ``run_grid`` indexes them (a file per key under
   ``grid-cache/``). Timed: ``CellCache.find`` of C keys (hits, each checking its source's record) and of
   C unknown keys (misses), against the alternative the index replaces — scanning every run folder's
   records for the key (what a cache without an index must do per cell).
2. hit vs run: N demo-agent cells through ``run_grid`` (concurrency 4), then the same grid under another
   name with ``cache=True`` (every cell a hit: no agent), wall time of each.

Run: ``.venv/bin/python benchmarks/grid_cache.py [runs] [cells_per_run] [grid_cells]`` (default 200 100 40).
Prints the numbers; writes nothing outside a temporary folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

from silo_nb.experiments import run_grid
from silo_nb.experiments.grid_cache import CellCache
from silo_nb.experiments.run_folder import RunFolder


def fake_runs(root: Path, runs: int, cells: int) -> list[str]:
    cache = CellCache(root / "data" / "grid-cache")
    keys = []
    for r in range(runs):
        names = [f"p{c}-demo-c0-r0" for c in range(cells)]
        run = RunFolder.create(root / "runs" / f"run{r}", f"run{r}", [{"cell": n} for n in names])
        for name in names:
            key = hashlib.sha256(f"{r}/{name}".encode()).hexdigest()
            run.save(name, [], {"cell": name, "status": "finished", "cache_key": key})
            cache.remember(key, run, name)
            keys.append(key)
    return keys


def scan(root: Path, key: str) -> bool:
    """The index's alternative: read every record of every run until one has the key."""
    for run_path in sorted((root / "runs").iterdir()):
        for record in sorted((run_path / "cells").iterdir()):
            if json.loads(record.read_text()).get("cache_key") == key:
                return True
    return False


def lookups(root: Path, runs: int, cells: int) -> None:
    mark = time.perf_counter()
    keys = fake_runs(root, runs, cells)
    print(f"made {runs} runs x {cells} cells, indexed: {time.perf_counter() - mark:.1f} s")
    cache = CellCache(root / "data" / "grid-cache")
    sample = keys[:: max(1, len(keys) // cells)][:cells]
    mark = time.perf_counter()
    assert all(cache.find(key) is not None for key in sample)
    hit = (time.perf_counter() - mark) / len(sample)
    mark = time.perf_counter()
    assert all(cache.find("0" * 63 + str(n % 10)) is None for n in range(len(sample)))
    miss = (time.perf_counter() - mark) / len(sample)
    probes = sample[-5:]  # in the last runs: what most look-ups (and every miss) cost a scan
    mark = time.perf_counter()
    assert all(scan(root, key) for key in probes)
    scanned = (time.perf_counter() - mark) / len(probes)
    print(f"index look-up: hit {hit * 1e6:.0f} us, miss {miss * 1e6:.0f} us per cell")
    print(f"scan of every record instead: {scanned * 1e3:.1f} ms per cell (hits in the last runs)")


def hit_vs_run(root: Path, cells: int) -> None:
    os.environ.update(
        SILO_NB_DATA_DIR=str(root / "grid-data"),
        SILO_NB_DEMO_STATE_DIR=str(root / "demo-state"),
        SILO_NB_DEMO_DELAY="0",
    )
    prompts = [f"hello {n}" for n in range(cells)]

    async def grid(name: str) -> float:
        mark = time.perf_counter()
        df = await run_grid(
            prompts,
            name=name,
            folder=root / "grid-runs",
            cache=True,
            progress=False,
            concurrency=4,
            config_dirs=[],
        )
        assert (df["cell_status"] == "finished").all()
        return time.perf_counter() - mark

    ran = anyio.run(grid, "first")
    hits = anyio.run(grid, "second")
    print(f"{cells} demo cells run: {ran:.2f} s ({ran / cells * 1e3:.0f} ms/cell at concurrency 4)")
    print(f"the same {cells} from the cache: {hits:.2f} s ({hits / cells * 1e3:.1f} ms/cell)")


def main() -> None:
    runs, cells, grid_cells = (int(a) for a in (sys.argv[1:] + ["200", "100", "40"][len(sys.argv) - 1 :]))
    with tempfile.TemporaryDirectory(prefix="silo-cache-bench-") as folder:
        lookups(Path(folder), runs, cells)
        hit_vs_run(Path(folder), grid_cells)


if __name__ == "__main__":
    main()
