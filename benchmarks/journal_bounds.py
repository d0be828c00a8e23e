"""Peak memory of journal reads, and the ``%silo agents`` scan's time on the kernel loop (issue 21, item 8).

Each figure comes from a fresh child process (``ru_maxrss``: its peak resident memory, and its wall time):

- ``read_journal`` and a resume (``sessions.connect("demo", resume=...)``, the demo agent, which answers
  journal-only) over a 2 GiB sparse journal: a line, a 2 GiB hole of NULs, a line. Before: 30 s and 8.2 GB
  for the read, 42 s and 6.2 GB for the resume (the issue's figures).
- The same over a real journal of ``--real-mb`` MB (default 1,000): the realistic update mix of
  ``flood_agent.py`` written by silo_nb's own per-update path (``journal_read.write_journal``), repeated
  to size. ``read_journal`` returns every update, so its peak grows with the journal (the list it gives
  back); the resume keeps none of it (the journal stays on disk).
- The agents scan (``scan_dormant``, what ``%silo agents`` runs) over ``--journals`` journals (default
  10,000) of a few KB each, first with nothing cached and then again: the total time, and the longest
  the loop went without running a 1 ms heartbeat (the kernel's loop is blocked that long). Before: the
  first scan blocked the kernel 5.8 s (the issue's figure).

Files go to a temporary folder under ``--dir`` (default the system's) and are deleted at the end; the
1 GB journal needs that much free space. Run: ``PYTHONPATH=. .venv/bin/python benchmarks/journal_bounds.py
[--real-mb 1000] [--journals 10000] [--label after]`` (``--label -``: print only); rewrites the section
"journal bounds (<label>)" of RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _results import write_section
from journal_read import write_journal

import silo_nb
from silo_nb.model.kinds import USER_PROMPT_KIND

HERE = Path(__file__).resolve().parent

CHILD = """
import asyncio, json, resource, sys, time
from pathlib import Path
import silo_nb
from silo_nb.sessions.dormant_sessions import JournalSummaries, scan_dormant
mode, folder, data, session = sys.argv[1:5]
svc = silo_nb.AgentsService(workspace_dir=Path(folder), config_dirs=[], data_dir=Path(data))
started = time.perf_counter()
result = {}
if mode == "read":
    result["updates"] = len(asyncio.run(svc.sessions.read_journal(session)))
elif mode == "resume":
    async def resume():
        async with await svc.sessions.connect("demo", resume={"session_id": session}) as handle:
            return handle.resume_outcome
    result["outcome"] = asyncio.run(resume())
else:
    async def scan():
        gaps = [0.0]
        async def beat():
            last = time.perf_counter()
            while True:
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                gaps[-1] = max(gaps[-1], now - last)
                last = now
        summaries = JournalSummaries()
        heart = asyncio.create_task(beat())
        await asyncio.sleep(0.01)
        times = []
        for _ in range(2):
            gaps[-1] = 0.0
            began = time.perf_counter()
            found = await scan_dormant(svc.data_dir, svc.workspace_id, summaries=summaries, limit=100_000)
            times.append(time.perf_counter() - began)
            await asyncio.sleep(0.01)
            gaps.append(0.0)
        heart.cancel()
        return {"found": len(found), "times": times, "gaps": gaps[:2]}
    result = asyncio.run(scan())
result["seconds"] = time.perf_counter() - started
result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(result))
"""


def child(mode: str, root: Path, session: str = "") -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    args = [sys.executable, "-c", CHILD, mode, str(root / "work"), str(root / "data"), session]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=3600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode} {session}: exit {done.returncode}: {done.stderr[-2000:]}")
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def prompt_line(text: str) -> bytes:
    value = {"kind": USER_PROMPT_KIND, "text": text, "raw": {"synthesized": True}}
    return json.dumps(value).encode() + b"\n"


def journal_path(svc: silo_nb.AgentsService, session: str) -> Path:
    path = svc.sessions.journals.path(svc.workspace_id, session)
    svc.sessions.journals.check(path, folder_only=True)  # the data folder, made as silo_nb makes it
    return path


def write_sparse(path: Path) -> None:
    with path.open("wb") as file:
        os.fchmod(file.fileno(), 0o600)
        file.write(prompt_line("first"))
        file.seek(2 << 30, os.SEEK_CUR)
        file.write(b"\n" + prompt_line("last"))


def write_real(path: Path, size: int, scratch: Path) -> int:
    """A journal of about ``size`` bytes: a prompt, then a block of the realistic mix repeated."""
    write_journal(scratch, 20_000)
    block = scratch.read_bytes()
    written = 0
    with path.open("wb") as file:
        os.fchmod(file.fileno(), 0o600)
        file.write(prompt_line("first"))
        while written < size:
            file.write(block)
            written += len(block)
    scratch.unlink()
    return path.stat().st_size


def write_many(svc: silo_nb.AgentsService, count: int) -> None:
    body = prompt_line("a question") + b"".join(
        json.dumps({"kind": "agent_message_chunk", "text": f"part {i} " * 20}).encode() + b"\n"
        for i in range(20)
    )
    for index in range(count):
        path = journal_path(svc, f"many-{index:05d}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, body)
        finally:
            os.close(fd)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--real-mb", type=int, default=1000)
    parser.add_argument("--journals", type=int, default=10_000)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--label", default="after")
    parser.add_argument(
        "--only", choices=["sparse", "real", "scan"], default=None, help="one part (the label defaults to -)"
    )
    args = parser.parse_args()
    if args.only is not None and args.label == "after":
        args.label = "-"  # one part alone never rewrites the section of all three
    parts = {args.only} if args.only else {"sparse", "real", "scan"}
    root = Path(tempfile.mkdtemp(prefix="silo-bench-bounds-", dir=args.dir))
    lines: list[str] = []
    try:
        (root / "work").mkdir()
        svc = silo_nb.AgentsService(workspace_dir=root / "work", config_dirs=[], data_dir=root / "data")
        sparse = journal_path(svc, "sparse")
        write_sparse(sparse)
        for mode in ("read", "resume") if "sparse" in parts else ():
            got = child(mode, root, "sparse")
            what = f"{got['updates']} updates" if "updates" in got else got.get("outcome")
            on_disk = os.stat(sparse).st_blocks * 512 / 1024
            lines.append(
                f"{mode:<7} 2 GiB sparse journal ({on_disk:.0f} KiB on disk): "
                f"peak {got['peak_mb']:,.0f} MB, {got['seconds']:.1f} s ({what})"
            )
            print(lines[-1], flush=True)
        sparse.unlink()
        real = journal_path(svc, "real")
        size = write_real(real, args.real_mb * 1_000_000, root / "block.jsonl") if "real" in parts else 0
        for mode in ("read", "resume") if "real" in parts else ():
            got = child(mode, root, "real")
            what = f"{got['updates']:,} updates" if "updates" in got else got.get("outcome")
            lines.append(
                f"{mode:<7} {size / 1e9:.2f} GB real journal: peak {got['peak_mb']:,.0f} MB, "
                f"{got['seconds']:.1f} s ({what})"
            )
            print(lines[-1], flush=True)
        real.unlink(missing_ok=True)
        if "scan" in parts:
            write_many(svc, args.journals)
            got = child("scan", root)
            times, gaps = got["times"], got["gaps"]
            assert isinstance(times, list) and isinstance(gaps, list)
            lines.append(
                f"agents scan over {args.journals:,} journals ({got['found']:,} listed): "
                f"first {times[0]:.2f} s, "
                f"longest loop block {gaps[0] * 1000:.0f} ms; again {times[1]:.2f} s, longest block "
                f"{gaps[1] * 1000:.0f} ms; peak {got['peak_mb']:,.0f} MB"
            )
            print(lines[-1], flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.label != "-":
        write_section(f"journal bounds ({args.label})", lines)


if __name__ == "__main__":
    main()
