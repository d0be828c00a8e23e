"""The smallest ACP agent, shipped in the tests' hand-built wheel ``pin-probe-agent`` (tests/sessions/
test_agent_pins.py): it answers ``initialize`` with its agentInfo (name and version), opens a session and
ends every turn after one message chunk. Standard library only: it runs in a venv of its own."""

import json
import sys

VERSION = "0.1.0"


def _send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, ident, params = message.get("method"), message.get("id"), message.get("params") or {}
        if ident is None or method is None:
            continue
        if method == "initialize":
            info = {"name": "pin-probe-agent", "title": "Pin probe", "version": VERSION}
            result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": [], "agentInfo": info}
        elif method == "session/new":
            result = {"sessionId": "pinned-1"}
        elif method == "session/prompt":
            chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "pinned"}}
            _send(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": params.get("sessionId"), "update": chunk},
                }
            )
            result = {"stopReason": "end_turn"}
        else:
            _send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no {method}"}})
            continue
        _send({"jsonrpc": "2.0", "id": ident, "result": result})


if __name__ == "__main__":
    main()
