"""Pinned agents (issue 33): what the cache costs a cell. Prints, does not rewrite RESULTS.md.

1. The full file-by-file check of a real entry (claude-agent-acp 0.101.0: ~9,000 files), as
   ``ensure_installed`` makes it before every start in a new process (needs ``tests/node/pinned``, which
   ``tests/integration/test_pinned_agents.py`` fills; else it is installed first).
2. ``install_agent`` after that in the same process (what each further cell of the grid pays).
3. 1,000 cells × 3 agents asking at once, with the tests' stand-in npm: how many installs ran.

    PYTHONPATH=. .venv/bin/python benchmarks/pins.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from silo_nb.sessions.agent_pins import ensure_installed, install_agent

ROOT = Path(__file__).resolve().parent.parent
CLAUDE = "npm:@agentclientprotocol/claude-agent-acp@0.101.0"


async def main() -> None:
    os.environ["SILO_NB_DATA_DIR"] = str(ROOT / "tests" / "node" / "pinned")
    start = time.perf_counter()
    agent = ensure_installed(CLAUDE)
    print(f"first ensure_installed (an install, else the full check): {time.perf_counter() - start:.2f} s")
    files = sum(len(names) for _, _, names in os.walk(agent.path))
    full = []
    for _ in range(5):
        mark = time.perf_counter()
        ensure_installed(CLAUDE)
        full.append(time.perf_counter() - mark)
    print(f"full check of {files:,} files: median {statistics.median(full) * 1000:.0f} ms")
    await install_agent(CLAUDE)
    memo = []
    for _ in range(200):
        mark = time.perf_counter()
        await install_agent(CLAUDE)
        memo.append(time.perf_counter() - mark)
    print(
        f"install_agent after the first check in this process: median {statistics.median(memo) * 1e6:.0f} µs"
    )

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SILO_NB_DATA_DIR"] = str(Path(tmp) / "data")
        npm = Path(tmp) / "npm"
        fake = ROOT / "tests" / "agents" / "fake_npm.py"
        npm.write_text(f"#!{sys.executable}\nimport runpy; runpy.run_path({str(fake)!r})\n")
        npm.chmod(0o755)
        os.environ.update(SILO_NB_AGENT_NPM=str(npm), FAKE_NPM_LOG=str(Path(tmp) / "npm.log"))
        specs = ["npm:agent-a@1.0.0", "npm:agent-b@2.0.0", "npm:agent-c@3.0.0"]
        mark = time.perf_counter()
        async with anyio.create_task_group() as group:
            for _ in range(1000):
                for spec in specs:
                    group.start_soon(install_agent, spec)
        runs = len((Path(tmp) / "npm.log").read_text().splitlines())
        print(f"1,000 cells x 3 agents at once: {runs} installs, {time.perf_counter() - mark:.2f} s in all")


if __name__ == "__main__":
    anyio.run(main)
