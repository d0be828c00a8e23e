"""A stand-in kernel for the orphan tests: spawns ``tree_agent.py`` (extra argv passed through) through
``SubprocessTransport``, prints one JSON line with the agent's pids (as the agent reported them, plus
``AgentProcess.pid``), then waits forever to be SIGKILLed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from silo_nb.acp import SubprocessTransport

TREE_AGENT = str(Path(__file__).resolve().parent / "tree_agent.py")


async def main() -> None:
    transport = await SubprocessTransport.spawn(sys.executable, [TREE_AGENT, *sys.argv[1:]])
    line = b""
    while not line.endswith(b"\n"):
        line += await transport.receive.receive()
    pids = json.loads(line)["params"]
    pids["process"] = transport.process.pid
    print(json.dumps(pids), flush=True)
    await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main)
