"""A stdio MCP server that records who started it: ``python mcp_probe.py LOG``. Standard library only.

It appends ``start <pid>`` to LOG when it starts, then ``<method>`` (and the MCP client's name for
``initialize``) for every message it reads, and answers like a well-behaved server with no tools:
``initialize`` (echoing the client's protocol version), ``tools/list`` / ``prompts/list`` /
``resources/list`` empty, ``ping``; other requests get -32601. An agent that is slow or silent on an MCP
server it was given blocks its own ``session/new``; this one answers at once.
"""

from __future__ import annotations

import json
import os
import sys

EMPTY_LISTS = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources"}


def note(log: str, text: str) -> None:
    with open(log, "a") as f:
        f.write(text + "\n")


def answer(request_id: object, result: object = None, error: object = None) -> None:
    reply = {"jsonrpc": "2.0", "id": request_id}
    reply.update({"error": error} if error is not None else {"result": result})
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()


def main() -> None:
    log = sys.argv[1]
    note(log, f"start {os.getpid()}")
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        client = (params.get("clientInfo") or {}).get("name") if method == "initialize" else None
        note(log, f"{method} {client}" if client else str(method))
        if request_id is None:
            continue
        if method == "initialize":
            version = params.get("protocolVersion") or "2025-06-18"
            answer(
                request_id,
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "silo-nb-mcp-probe", "version": "0.1.0"},
                },
            )
        elif method in EMPTY_LISTS:
            answer(request_id, {EMPTY_LISTS[method]: []})
        elif method == "ping":
            answer(request_id, {})
        else:
            answer(request_id, error={"code": -32601, "message": f"Method not found: {method}"})


if __name__ == "__main__":
    main()
