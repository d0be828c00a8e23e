"""What the stale-answer check costs a user's cell (issue 32, step 3), end to end: a real ``InteractiveShell``
with silo_nb loaded, the demo agent connected (``%silo connect demo``, a subprocess), one ``%%prompt`` that
references 100 variables (``@v0 … @v99``: 10 distinct 1e6-row DataFrames, 90 lists, as
``checkpoints.py``'s stale check), so the turn's end watches 100 values. Then, per user cell, what
ipykernel runs after it: ``post_run_cell`` (the cell noted, the check), p50 / p95 over the rounds, beside
the same event with no connection watching (the reference); the check right after a cell that changed one
DataFrame; and a turn's end (the baseline of 100 values).

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/stale_answers.py [--rounds 300] [--section NAME|-]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _results import write_section
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import silo_nb
from silo_nb.kernel_tools import KernelNamespace, StaleAnswers
from silo_nb.notebook.magics import NotebookSession, session_of, use_session

NAMES = 100


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(len(values) * 0.95) - 1)]


def ms(values: list[float]) -> str:
    return f"p50 {statistics.median(values) * 1000:.2f} ms, p95 {p95(values) * 1000:.2f} ms"


async def cell(shell: InteractiveShell, source: str) -> Any:
    return await shell.run_cell_async(
        source, store_history=True, transformed_cell=shell.transform_cell(source)
    )


def after_cell(
    shell: InteractiveShell, result: Any, rounds: int, stale: StaleAnswers | None = None
) -> tuple[list[float], list[int]]:
    """The time of ``post_run_cell`` (what ipykernel runs after each cell), and how many names each check
    fingerprinted."""
    took, checked = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        shell.events.trigger("post_run_cell", result)
        took.append(time.perf_counter() - start)
        checked.append(stale.checked if stale is not None else 0)
    return took, checked


async def measure(rounds: int, folder: Path) -> list[str]:
    df = pd.DataFrame({"a": np.arange(1_000_000), "b": np.random.default_rng(0).random(1_000_000)})
    df["c"] = df.a.astype(str)
    # Ten distinct frames (the same object under ten names would fingerprint the same work ten times over).
    values = {f"v{i}": (df.copy() if i % 10 == 0 else list(range(i))) for i in range(NAMES)}
    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("silo_nb")
    service = silo_nb.AgentsService(workspace_dir=folder, config_dirs=[], data_dir=folder / "data")
    use_session(shell, NotebookSession(shell, service))
    shell.user_ns.update(values)
    plain = await cell(shell, "x = 1")
    reference, _ = after_cell(shell, plain, rounds)
    await cell(shell, "%silo connect demo --no-kernel-tools")
    result = await cell(shell, "%%prompt\nsummarize " + " ".join(f"@{name}" for name in values))
    assert result.success, result.error_in_exec
    watch = session_of(shell).connections["demo"].stale
    stale = getattr(watch, "stale", None)
    assert isinstance(stale, StaleAnswers) and stale.read_by(shell.user_ns["demo"].current_turn)
    result = await cell(shell, "x = 2")
    checks, checked = after_cell(shell, result, rounds, stale)
    changed = []
    for i in range(0, 50, 10):
        shell.user_ns[f"v{i}"] = df.head(10)  # a cell that rebinds one of them
        result = await cell(shell, f"v{i} = v{i}")
        start = time.perf_counter()
        shell.events.trigger("post_run_cell", result)
        changed.append(time.perf_counter() - start)
    stale_now = shell.user_ns["demo"].stale_turns()
    seals = []
    for _ in range(max(5, rounds // 30)):
        fresh = StaleAnswers(KernelNamespace(dict(values)))
        start = time.perf_counter()
        fresh.note_values(1, list(values))
        seals.append(time.perf_counter() - start)
    await shell.user_ns["demo"].aclose()
    return [
        f"{rounds} rounds; {NAMES} watched values: 10 DataFrames of 1e6 rows (int, float, str), 90 lists; "
        "a real InteractiveShell, the demo agent connected",
        f"post_run_cell after a user's cell, nothing changed: {ms(checks)} (target p95 <= 5 ms)",
        f"  names fingerprinted per check (of {NAMES}; the rest go first next time): "
        f"median {statistics.median(checked):.0f}, min {min(checked)}",
        f"  reference, post_run_cell with no connection watching: {ms(reference)}",
        f"post_run_cell after a cell that rebound one DataFrame (5 cells): {ms(changed)} "
        f"-> {stale_now[0].text() if stale_now else 'not stale?'}",
        f"a turn's end, the baseline of {NAMES} values: {ms(seals)}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--section", default="stale answers (issue 32, step 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, capture_output():  # the turn's own output
        lines = asyncio.run(measure(args.rounds, Path(folder)))
    print("\n".join(lines))
    if args.section != "-":
        write_section(args.section, lines)


if __name__ == "__main__":
    main()
