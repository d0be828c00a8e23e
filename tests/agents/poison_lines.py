"""A real ACP agent (a subprocess) that, on every prompt, writes lines that used to end the client's
reader, then keeps working as if nothing happened.

Per prompt, in order: a chunk "before the poison"; a notification whose params hold a 5,000-digit
integer; one nested 100,000 arrays deep; a response with id ``true`` (the client's first request had id 0
and its prompt requests are integers, so ``true`` must match none of them); a response to an id never
sent; a request with a lone-surrogate id (the client's -32601 reply must not break its writer); a
``tool_call`` whose ``rawInput`` is nested 300 deep (kept, with the deep part cut behind a marker); a chunk
"after the poison"; then the prompt's ``end_turn`` answer.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data + b"\n")
    sys.stdout.buffer.flush()


def send(message: dict[str, Any]) -> None:
    write(json.dumps(message, separators=(",", ":")).encode())


def update(session_id: str, body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": body}})


def chunk(session_id: str, text: str) -> None:
    update(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def poison(session_id: str) -> None:
    chunk(session_id, "before the poison")
    write(b'{"jsonrpc":"2.0","method":"session/update","params":' + b"9" * 5000 + b"}")
    write(b'{"jsonrpc":"2.0","method":"session/update","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    write(b'{"jsonrpc":"2.0","id":true,"result":{"stopReason":"end_turn"}}')
    write(b'{"jsonrpc":"2.0","id":123456,"result":{}}')
    write(b'{"jsonrpc":"2.0","id":"\\ud800","method":"_vendor/poke"}')
    deep: Any = {"leaf": True}
    for _ in range(300):
        deep = [deep]
    update(
        session_id,
        {"sessionUpdate": "tool_call", "toolCallId": "deep-300", "title": "Deep input", "rawInput": deep},
    )
    chunk(session_id, "after the poison")


def main() -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method is None or request_id is None:
            continue  # responses (our -32601 for _vendor/poke) and notifications
        if method == "initialize":
            result: Any = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
        elif method == "session/new":
            result = {"sessionId": "poison-1"}
        elif method == "session/prompt":
            poison(params.get("sessionId", "poison-1"))
            result = {"stopReason": "end_turn"}
        else:
            send(
                {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
            )
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
