"""A client process for the kill test: connects to the demo agent, starts a slow turn and reports each
update on stdout (``<monotonic time> <kind> <text>``) as its listener sees it (which is right after the
update was appended to the journal), until it is SIGKILLed."""

from __future__ import annotations

import sys
import time

import anyio

import silo_nb


async def main() -> None:
    svc = silo_nb.AgentsService()  # workspace and data dir come from $SILO_NB_WORKSPACE / $SILO_NB_DATA_DIR
    handle = await svc.sessions.connect("demo")
    print(f"session {handle.session_id}", flush=True)

    def report(update: silo_nb.AgentSessionUpdate) -> None:
        print(f"{time.monotonic():.4f} {update.kind} {update.text!r}", flush=True)

    handle.on_update(report)
    await handle.prompt([{"type": "text", "text": "go slow please"}])


if __name__ == "__main__":
    anyio.run(main)
    sys.exit(0)
