"""A benchmark agent streaming one scenario per prompt, as fast as the pipe takes it. Standard library only.

The prompt's text names the scenario: ``chunks N`` (N text chunks), ``mixed N`` (N updates: text chunks,
tool calls, their updates, a diff each), ``tools N`` (N distinct tool calls, each then completed: 2N
updates), ``markdown BYTES`` (that much pathological Markdown — nested ``*`` and brackets — in 1 KB
chunks), ``idle`` (nothing). Then ``end_turn``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")


def chunk(text: str, message_id: str = "m1") -> dict[str, Any]:
    return {
        "sessionUpdate": "agent_message_chunk",
        "messageId": message_id,
        "content": {"type": "text", "text": text},
    }


def scenario(name: str, size: int) -> Iterator[dict[str, Any]]:
    if name == "chunks":
        for index in range(size):
            yield chunk(f"token {index} ")
    elif name == "mixed":
        old = "".join(f"line {i}\n" for i in range(20))
        for index in range(size // 10):
            for k in range(6):
                yield chunk(f"word {index}.{k} ", f"m{index // 20}")
            tool = f"t{index}"
            yield {
                "sessionUpdate": "tool_call",
                "toolCallId": tool,
                "title": f"Edit f{index}.py",
                "kind": "edit",
            }
            yield {"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": "in_progress"}
            diff = {
                "type": "diff",
                "path": f"f{index}.py",
                "oldText": old,
                "newText": old.replace("line 7", f"x {index}"),
            }
            yield {"sessionUpdate": "tool_call_update", "toolCallId": tool, "content": [diff]}
            yield {"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": "completed"}
    elif name == "tools":
        for index in range(size):
            yield {
                "sessionUpdate": "tool_call",
                "toolCallId": f"t{index}",
                "title": f"Read f{index}",
                "kind": "read",
            }
            yield {"sessionUpdate": "tool_call_update", "toolCallId": f"t{index}", "status": "completed"}
    elif name == "markdown":
        unit = "*a [b](c *d _e [f " * 60  # ~1 KB of openers that never close
        for _ in range(max(1, size // len(unit))):
            yield chunk(unit)


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if request_id is None:
            continue
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {"protocolVersion": 1, "agentCapabilities": {}},
                }
            )
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "bench"}})
        elif method == "session/prompt":
            words = str(params["prompt"][0].get("text", "idle")).split()
            name, size = words[0], int(words[1]) if len(words) > 1 else 0
            for update in scenario(name, size):
                send(
                    {
                        "jsonrpc": "2.0",
                        "method": "session/update",
                        "params": {"sessionId": "bench", "update": update},
                    }
                )
            send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})
        else:
            send(
                {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
            )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
