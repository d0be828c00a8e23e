"""Restart + Run All of a notebook whose 50 ``%%prompt`` cells are all in a big journal, vs trivial cells.

Setup (once, not timed): a notebook ``%load_ext silo_nb`` · ``%silo connect demo`` · 50 ``%%prompt``
cells is run with nbclient against the demo agent, so the journal holds 50 real turns with their cell
ids; then filler ``agent_message_chunk`` lines (~400 bytes each) are added to every turn until the
journal holds ``--lines`` lines. Timed: executing that notebook again in a new kernel (every prompt cell
is restored from the journal, no prompt is sent) vs a 52-cell notebook of trivial cells (the
reference, kernel start included in both). Runs alternate; median of ``--rounds``.

``--silo-path DIR`` runs the kernels on another copy of silo_nb (e.g. ``git archive`` of the commit
before, for the "before" figure).

Run: ``python benchmarks/restore_run_all.py [--lines 50000] [--rounds 3]``; rewrites the section
"restore Run All (<lines> lines)" of RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import nbformat
from _results import write_section
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
PROMPTS = 50


def execute(path: Path, folder: Path) -> tuple[float, nbformat.NotebookNode]:
    nb = nbformat.read(path, as_version=4)
    started = time.perf_counter()
    NotebookClient(
        nb, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(folder)}}
    ).execute()
    return time.perf_counter() - started, nb


def write_notebook(path: Path, sources: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nb, path)


def inflate(journal: Path, lines: int) -> tuple[int, int]:
    """Add filler agent chunks after each prompt's turn until the journal holds ``lines`` lines."""
    original = [line for line in journal.read_text(encoding="utf-8").splitlines() if line.strip()]
    per_turn = max(0, (lines - len(original)) // PROMPTS)
    out: list[str] = []
    filler = "lorem ipsum dolor sit amet " * 6
    for line in original:
        out.append(line)
        if json.loads(line).get("kind") == "user_message_chunk":
            for n in range(per_turn):
                chunk = {
                    "kind": "agent_message_chunk",
                    "text": f"{n} {filler}",
                    "content": {"type": "text", "text": f"{n} {filler}"},
                    "messageId": "filler",
                    "raw": {"sessionUpdate": "agent_message_chunk"},
                }
                out.append(json.dumps(chunk, separators=(",", ":")))
    journal.write_text("".join(line + "\n" for line in out), encoding="utf-8")
    return len(out), journal.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--silo-path", default=str(ROOT))
    parser.add_argument("--label", default="after")
    parser.add_argument("--profile", default=None, help="write a pyinstrument profile of one more run here")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="silo-bench-restore-"))
    folder = root / "project"
    folder.mkdir()
    os.environ.update(
        {
            "SILO_NB_DATA_DIR": str(root / "data"),
            "SILO_NB_DEMO_STATE_DIR": str(root / "demo-state"),
            "SILO_NB_DEMO_DELAY": "0",
            "PYTHONPATH": args.silo_path,
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        }
    )
    prompts = folder / "prompts.ipynb"
    write_notebook(
        prompts,
        ["%load_ext silo_nb", "%silo connect demo"]
        + [f"%%prompt\nQuestion number {n}" for n in range(PROMPTS)],
    )
    trivial = folder / "trivial.ipynb"
    write_notebook(trivial, [f"x{n} = {n} + 1" for n in range(PROMPTS + 2)])
    execute(prompts, folder)  # the first run: 50 real turns journaled
    (journal,) = (root / "data").rglob("chat-sessions/*.jsonl")
    count, size = inflate(journal, args.lines)
    figure, reference = [], []
    for _ in range(args.rounds):
        seconds, nb = execute(prompts, folder)
        restored = [
            cell.outputs[-1]["metadata"]["silo"].get("restored")
            for cell in nb.cells
            if cell.source.startswith("%%prompt")
        ]
        assert restored == [True] * PROMPTS, restored  # every cell repainted, none sent again
        figure.append(seconds)
        reference.append(execute(trivial, folder)[0])
    if args.profile:
        profiled = folder / "profiled.ipynb"
        start = "from pyinstrument import Profiler\n_prof = Profiler(async_mode='disabled')\n_prof.start()"
        stop = f"_prof.stop()\nopen({args.profile!r}, 'w').write(_prof.output_text(color=False))"
        nb = nbformat.read(prompts, as_version=4)
        nb.cells = [nbformat.v4.new_code_cell(start), *nb.cells, nbformat.v4.new_code_cell(stop)]
        nbformat.write(nb, profiled)
        execute(profiled, folder)
    fig_s, ref_s = statistics.median(figure), statistics.median(reference)
    lines = [
        f"{args.label}: Restart + Run All, {PROMPTS} %%prompt cells restored from a journal of "
        f"{count:,} lines ({size / 1e6:.1f} MB); {args.rounds} alternating rounds, median",
        f"notebook with {PROMPTS} restored %%prompt cells: {fig_s:.2f} s",
        f"{PROMPTS + 2}-cell trivial notebook (ref):     {ref_s:.2f} s",
        f"ratio: {fig_s / ref_s:.1f}",
    ]
    print("\n".join(lines))
    write_section(f"restore Run All ({args.label}, {args.lines:,} lines)", lines)


if __name__ == "__main__":
    main()
