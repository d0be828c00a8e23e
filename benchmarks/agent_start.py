"""How long the demo agent takes to start: from spawning ``python -m silo_nb_agents.demo`` to its answer to
``initialize`` on stdout (every grid cell and every ``%silo connect demo`` pays it), side by side with
another copy of silo_nb (``--before DIR``, e.g. a ``git worktree`` of an older commit), runs alternating.

Run: ``python benchmarks/agent_start.py [--runs 20] [--before DIR] [--label after]``; rewrites the section
"agent start (<label>)" of RESULTS.md (``--label -``: print only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._results import write_section

ROOT = Path(__file__).resolve().parent.parent
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})


def agent_module(silo_path: Path) -> str:
    """The demo agent's module in that copy (``silo_nb.demo_agent`` before it became its own package)."""
    return "silo_nb_agents.demo" if (silo_path / "silo_nb_agents" / "demo").is_dir() else "silo_nb.demo_agent"


def one_start(silo_path: Path) -> float:
    """Seconds from spawn to the ``initialize`` answer's line (the agent is then closed by EOF)."""
    env = {**os.environ, "PYTHONPATH": str(silo_path), "SILO_NB_DEMO_DELAY": "0"}
    started = time.perf_counter()
    agent = subprocess.Popen(
        [sys.executable, "-m", agent_module(silo_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=silo_path,
    )
    assert agent.stdin is not None and agent.stdout is not None
    agent.stdin.write(INITIALIZE.encode() + b"\n")
    agent.stdin.flush()
    answer = json.loads(agent.stdout.readline())
    elapsed = time.perf_counter() - started
    agent.stdin.close()
    agent.wait(timeout=10)
    assert answer.get("id") == 1 and "result" in answer, answer
    return elapsed


def modules_loaded(silo_path: Path) -> int:
    code = f"import sys, {agent_module(silo_path)}; print(sum(m.startswith('silo_nb') for m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(silo_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=silo_path, capture_output=True, text=True, check=True
    )
    return int(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--before", type=Path, default=None, help="another copy of silo_nb to compare with")
    parser.add_argument("--label", default="after")
    args = parser.parse_args()
    copies = {"this tree": ROOT} | ({"before": args.before} if args.before else {})
    times: dict[str, list[float]] = {name: [] for name in copies}
    for _ in range(args.runs):  # alternating, so a busy moment costs both alike
        for name, path in copies.items():
            times[name].append(one_start(path))
    lines = [
        f"{args.label}: spawn of the demo agent (`python -m MODULE`) to its `initialize` answer,"
        f" {args.runs} runs"
        " each, alternating"
    ]
    for name, path in copies.items():
        median = statistics.median(times[name]) * 1000
        lines.append(
            f"{name}: median {median:.0f} ms, min {min(times[name]) * 1000:.0f} ms,"
            f" {modules_loaded(path)} modules of silo_nb or silo_nb_agents imported ({agent_module(path)})"
        )
    if args.before:
        ratio = statistics.median(times["before"]) / statistics.median(times["this tree"])
        lines.append(f"ratio (before / this tree): {ratio:.2f}")
    print("\n".join(lines))
    if args.label != "-":
        write_section(f"agent start ({args.label})", lines)


if __name__ == "__main__":
    main()
