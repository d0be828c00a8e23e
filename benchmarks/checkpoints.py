"""The cost of undo's parts (issue 32): a checkpoint before an agent's ``run_code`` that may change a
1e6-row DataFrame (time and bytes), and the stale check after a user's cell (the fingerprints of 100 tracked
names, p95; target <= 5 ms), each beside its reference: the DataFrame's own ``copy()``, the run without a
checkpoint, and one ``len()`` per name.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/checkpoints.py [--rounds 20] [--section NAME|-]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import anyio
import numpy as np
import pandas as pd
from _results import write_section

from silo_nb.kernel_tools import KernelNamespace
from silo_nb.kernel_tools.checkpoint import names_changed_by, take_checkpoint
from silo_nb.kernel_tools.code_runner import run_code
from silo_nb.kernel_tools.fingerprints import fingerprint
from silo_nb.kernel_tools.turn_parts import VariableCheckpoints


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(len(values) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--section", default="checkpoints (issue 32, step 1)")  # the section's name kept
    args = parser.parse_args()
    df = pd.DataFrame({"a": np.arange(1_000_000), "b": np.random.default_rng(0).random(1_000_000)})
    df["c"] = df.a.astype(str)
    ns: dict[str, Any] = {"df": df}
    code = 'df.loc[0, "a"] = 99\nx = df.a.sum()'
    took, copies = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        checkpoint = anyio.run(take_checkpoint, ns, names_changed_by(code))
        took.append(time.perf_counter() - start)
        start = time.perf_counter()
        df.copy(deep=True)
        copies.append(time.perf_counter() - start)
    size = checkpoint.bytes
    # The whole allowed run as the kernel tools do it (a turn's checkpoint, the run, the after-run marks),
    # beside the run alone; each round a new turn, so each takes its checkpoint.
    ran, bare = [], []
    kernel = KernelNamespace(ns)
    part = VariableCheckpoints(kernel)

    async def guarded(turn: int) -> None:
        await part.before_run(turn, code)
        run_code(kernel, code, timeout=60)
        part.after_run(turn, code)

    for turn in range(1, args.rounds + 1):
        start = time.perf_counter()
        anyio.run(guarded, turn)
        ran.append(time.perf_counter() - start)
        start = time.perf_counter()
        run_code(kernel, code, timeout=60)
        bare.append(time.perf_counter() - start)
    names = {f"v{i}": (df if i % 10 == 0 else list(range(i))) for i in range(100)}
    checks, lens = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        for value in names.values():
            fingerprint(value)
        checks.append(time.perf_counter() - start)
        start = time.perf_counter()
        for value in names.values():
            len(value)
        lens.append(time.perf_counter() - start)
    lines = [
        f"{args.rounds} rounds, median unless said; a 1e6-row DataFrame (int, float, str columns)",
        f"checkpoint before run_code changing df: {statistics.median(took) * 1000:.1f} ms, "
        f"{size / 1024 / 1024:.1f} MB kept",
        f"  reference, df.copy(deep=True) alone: {statistics.median(copies) * 1000:.1f} ms "
        f"(ratio {statistics.median(took) / statistics.median(copies):.2f})",
        f"an allowed run_code with its turn's checkpoint: {statistics.median(ran) * 1000:.1f} ms "
        f"(checkpoints kept {part.bytes / 1024 / 1024:.1f} MB, within checkpoint_max_bytes 512 MB: "
        f"{len(part.turns())} turn(s))",
        f"  reference, the same run_code alone: {statistics.median(bare) * 1000:.1f} ms "
        f"(ratio {statistics.median(ran) / statistics.median(bare):.2f})",
        f"stale check, 100 tracked names (10 of them that DataFrame): p95 {p95(checks) * 1000:.2f} ms "
        f"(target <= 5 ms), median {statistics.median(checks) * 1000:.2f} ms",
        f"  reference, len() of each: p95 {p95(lens) * 1000:.3f} ms",
    ]
    print("\n".join(lines))
    if args.section != "-":
        write_section(args.section, lines)


if __name__ == "__main__":
    main()
