"""Reading and folding a 100,000-update journal: a restore's work (issue 10: read + fold <= 1.0 s).

The journal is written by silo_nb's own per-update path (``parse_update``, message ids, ``encode_line``) from
the realistic mix of ``flood_agent.py`` (chunks, thoughts, tool calls, tool-call updates with diffs). Timed,
alternating, each round in a fresh process (a restore reads once, after a restart), median of the rounds:

- ``read_journal``: ``AgentSessionsService.read_journal`` on the file (read, split, decode, build the
  ``AgentSessionUpdate`` models), what a restore and every ``%%prompt`` cell's look-up do;
- ``+ fold``: the same, then every update folded into one transcript (``fold_all``, the restore reducer);
- ``json.loads only`` (reference): read, split and ``json.loads`` every line, building nothing.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/journal_read.py [N] [rounds] [section]`` (``-``: print only).
``silo_nb.tuning``'s switches are the environment's (the rounds inherit it): ``SILO_NB_GC_TUNING=0``
times the read and fold with the collector left alone; the first line says which.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import write_section
from flood_agent import mix_cycle

import silo_nb
from silo_nb.sessions.journal import encode_line
from silo_nb.tuning import tuning
from silo_nb.updates.parse import MessageIdSynthesizer, parse_update
from silo_nb.updates.transcript import fold_all

TARGET_SECONDS = 1.0  # read + fold
HERE = Path(__file__).resolve().parent


def write_journal(path: Path, count: int) -> None:
    cycles = [[json.loads(line)["params"]["update"] for line in mix_cycle(step)] for step in range(64)]
    synth = MessageIdSynthesizer()
    lines = []
    for index in range(count):
        update = parse_update(cycles[(index // 18) % 64][index % 18])
        assert update is not None
        lines.append(encode_line(synth.apply(update)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def bare(path: Path) -> int:
    return len([json.loads(line) for line in path.read_bytes().split(b"\n") if line])


def _service(root: Path) -> silo_nb.AgentsService:
    return silo_nb.AgentsService(workspace_dir=root, config_dirs=[root], data_dir=root / "data")


async def _timed(root: Path, count: int) -> dict[str, float]:
    """One round, in this (fresh) process: the restore's read, then its fold; and the reference."""
    service = _service(root)
    started = time.perf_counter()
    updates = await service.sessions.read_journal("bench-session")
    read = time.perf_counter() - started
    assert len(updates) == count
    state = fold_all(updates)
    folded = time.perf_counter() - started
    assert len(state.entries) > count // 18
    return {"read": read, "read+fold": folded}


def _bare_timed(path: Path, count: int) -> dict[str, float]:
    started = time.perf_counter()
    assert bare(path) == count
    return {"bare": time.perf_counter() - started}


def _round(root: Path, count: int, which: str) -> dict[str, float]:
    """A round in a fresh interpreter: a restore reads a journal once per kernel, right after a restart,
    not into a heap that earlier rounds' hundreds of MB of objects left fragmented (that cost the fold
    up to 70 % more when rounds shared one process)."""
    out = subprocess.run(
        [sys.executable, __file__, "--round", which, str(root), str(count)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(HERE.parent)},
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


async def main(count: int, rounds: int, section: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        service = _service(root)
        path = service.sessions.journals.path(service.workspace_id, "bench-session")
        write_journal(path, count)
        size = path.stat().st_size
        ours: list[float] = []
        folded: list[float] = []
        reference: list[float] = []
        for _ in range(rounds):  # alternating, each in a fresh process
            timing = _round(root, count, "ours")
            ours.append(timing["read"])
            folded.append(timing["read+fold"])
            reference.append(_round(root, count, "bare")["bare"])
    mine, ref = statistics.median(ours), statistics.median(reference)
    restore = statistics.median(folded)
    lines = [
        f"journal: {count:,} updates (realistic mix), {size / 1e6:.1f} MB; rounds: {rounds}, alternating, "
        f"each in a fresh process (medians); load average: {os.getloadavg()[0]:.2f}; "
        f"gc_tuning {'on' if tuning().gc_tuning else 'off'}",
        f"rerun: PYTHONPATH=. .venv/bin/python benchmarks/journal_read.py {count} {rounds}",
        f"read_journal (models built):  {mine:.3f} s",
        f"read_journal + fold:          {restore:.3f} s  (target <= {TARGET_SECONDS} s)",
        f"json.loads only (reference):  {ref:.3f} s",
        f"ratio read_journal / json.loads only: {mine / ref:.2f}",
    ]
    print("\n".join(lines))
    if section != "-":
        write_section(section, lines)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--round"]:
        which, root, count = args[1], Path(args[2]), int(args[3])
        gc.collect()
        if which == "ours":
            result = asyncio.run(_timed(root, count))
        else:
            service = _service(root)
            result = _bare_timed(service.sessions.journals.path(service.workspace_id, "bench-session"), count)
        print(json.dumps(result))
    else:
        asyncio.run(
            main(
                int(args[0]) if args else 100_000,
                int(args[1]) if len(args) > 1 else 3,
                args[2] if len(args) > 2 else "journal read",
            )
        )
