"""A real ACP agent (a subprocess) that fails the way argv[1] says for its first N starts, then works.

``python flaky_agent.py MODE STATE_DIR [N]``: every start appends a line to ``STATE_DIR/starts`` (so a
test counts spawns); while fewer than N starts (default 1) have happened before this one, it misbehaves:

- ``crash``: exits with status 3 as soon as it is asked a prompt (its process dies mid-turn).
- ``crash-start``: exits before answering ``initialize``.
- ``rate-limit``: answers the prompt with the JSON-RPC error real APIs pass on (``429 rate_limit_error:
  overloaded``).
- ``hang``: reports a usage (100 tokens, 0.01) and never answers the prompt (the cell's timeout ends it).
- ``refuse``: answers the prompt with a plain error (``invalid request``), a class never retried.
- ``ok``: always works.

A working turn says ``done <start number>`` and reports a usage of 100 tokens at a cost of 0.01.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

MODE = sys.argv[1]
STATE = Path(sys.argv[2])
BAD_STARTS = int(sys.argv[3]) if len(sys.argv) > 3 else 1
SESSION = "flaky-1"
USAGE = {
    "sessionUpdate": "usage_update",
    "used": 100,
    "size": 1000,
    "cost": {"amount": 0.01, "currency": "USD"},
}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def update(body: dict[str, Any]) -> None:
    send({"method": "session/update", "params": {"sessionId": SESSION, "update": body}})


def main() -> None:
    STATE.mkdir(parents=True, exist_ok=True)
    starts = STATE / "starts"
    with starts.open("a") as log:  # O_APPEND: concurrent starts each add their own line
        log.write(f"{os.getpid()}\n")
    number = len(starts.read_text().splitlines())
    bad = MODE != "ok" and number <= BAD_STARTS
    if bad and MODE == "crash-start":
        sys.exit(3)
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            info = {"name": "flaky", "version": "1.0"}
            send(
                {
                    "id": request_id,
                    "result": {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": info},
                }
            )
        elif method == "session/new":
            send({"id": request_id, "result": {"sessionId": SESSION}})
        elif method == "session/prompt":
            if bad and MODE == "crash":
                sys.stderr.write("flaky: crashing on purpose\n")
                sys.exit(3)
            if bad and MODE == "hang":  # what it spent before it hung still counts
                update(USAGE)
                continue
            if bad and MODE == "rate-limit":
                error = {"code": -32603, "message": "429 rate_limit_error: Overloaded, retry later"}
                send({"id": request_id, "error": error})
                continue
            if bad and MODE == "refuse":
                send({"id": request_id, "error": {"code": -32600, "message": "invalid request"}})
                continue
            update(
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": f"done {number}"},
                }
            )
            update(USAGE)
            send({"id": request_id, "result": {"stopReason": "end_turn"}})
        elif request_id is not None:
            send({"id": request_id, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
