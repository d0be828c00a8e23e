"""The cost of a turn's file checkpoint (issue 32, the files part): a 2,000-file folder checkpointed the first
time (every file read and copied into the store), again unchanged (a walk and its stats: what most turns
cost, twice), again with 20 files changed, and the undo of that turn; beside a bare walk with ``lstat`` of the
same folder (the floor a capture cannot go under) and a ``shutil.copytree`` of it (what a copy of the working
copy costs, as the grids make).

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/file_checkpoints.py [--files 2000] [--rounds 10]
[--section NAME|-]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import anyio
from _results import write_section

from silo_nb.sessions import FileCheckpoints

OLD_NS = 1_000_000_000_000_000_000  # 2001: the files were there long before the turn


def make_folder(root: Path, files: int) -> list[Path]:
    paths = []
    for i in range(files):
        path = root / f"pkg{i // 50:03d}" / f"module_{i:05d}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"# file {i}\n" + "x = 1\n" * (200 + i % 400))  # 1-3 KB, like source files
        os.utime(path, ns=(OLD_NS, OLD_NS))
        paths.append(path)
    return paths


def bare_walk(root: Path) -> int:
    count = 0
    for folder, _, names in os.walk(root):
        for name in names:
            os.lstat(os.path.join(folder, name))
            count += 1
    return count


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f} ms (min {min(values) * 1000:.1f})"


async def rounds(args: argparse.Namespace, root: Path, paths: list[Path]) -> list[str]:
    first, again, changed, undo, walks, copies = [], [], [], [], [], []
    stored = 0
    for n in range(args.rounds):
        store = root.parent / f"store-{n}"
        files = FileCheckpoints(store, [root])
        start = time.perf_counter()
        await files.capture(1, "start")
        first.append(time.perf_counter() - start)
        start = time.perf_counter()
        await files.capture(1, "end")
        again.append(time.perf_counter() - start)
        await files.capture(2, "start")
        for path in paths[n :: len(paths) // 20][:20]:
            path.write_text(path.read_text() + "y = 2\n")
        start = time.perf_counter()
        await files.capture(2, "end")
        changed.append(time.perf_counter() - start)
        start = time.perf_counter()
        items = await files.undo_turn(2)
        undo.append(time.perf_counter() - start)
        assert len(items) == 20 and all(item.restored for item in items), items
        for path in paths:
            os.utime(path, ns=(OLD_NS, OLD_NS))
        stored = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
        shutil.rmtree(store)
        start = time.perf_counter()
        bare_walk(root)
        walks.append(time.perf_counter() - start)
        start = time.perf_counter()
        shutil.copytree(root, root.parent / "copy")
        copies.append(time.perf_counter() - start)
        shutil.rmtree(root.parent / "copy")
    size = sum(p.stat().st_size for p in paths)
    return [
        f"{len(paths):,} files ({size / 1024 / 1024:.1f} MB) in {len(paths) // 50} folders; median of "
        f"{args.rounds} rounds (min)",
        f"first capture (every file read, hashed, kept):   {ms(first)}; store {stored / 1024 / 1024:.1f} MB",
        f"  reference, shutil.copytree of the folder:      {ms(copies)}",
        f"repeat capture, folder unchanged (walk + stats):  {ms(again)}",
        f"capture after a turn changed 20 files:          {ms(changed)}",
        f"undo of that turn (20 files put back):           {ms(undo)}",
        f"  reference, os.walk + lstat of the folder:      {ms(walks)}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--section", default="file checkpoints (issue 32, files)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "work"
        root.mkdir()
        paths = make_folder(root, args.files)
        lines = anyio.run(rounds, args, root, paths)
    print("\n".join(lines))
    if args.section != "-":
        write_section(args.section, lines)


if __name__ == "__main__":
    main()
