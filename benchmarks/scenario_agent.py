"""A benchmark agent streaming one scenario per prompt, as fast as the pipe takes it. Standard library only.

The prompt's text names the scenario: ``chunks N`` (N text chunks), ``mixed N`` (N updates: text chunks,
tool calls, their updates, a diff each), ``tools N`` (N distinct tool calls, each then completed: 2N
updates), ``markdown BYTES`` (that much pathological Markdown — nested ``*`` and brackets — in 1 KB
chunks), ``terminal BYTES`` (a command in a client terminal printing that much, in 100-byte lines, shown
inside a tool call: ``terminal/create``, ``wait_for_exit``, ``release``), ``idle`` (nothing). Then
``end_turn``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

from flood_agent import SESSION, notification, send, serve  # the same ACP loop (benchmarks/ is on the path)

_asked = [10_000]


def ask(method: str, params: dict[str, Any]) -> Any:
    """A request to the client, answered before anything else is read (the scenario waits for it)."""
    _asked[0] += 1
    send({"jsonrpc": "2.0", "id": _asked[0], "method": method, "params": {"sessionId": SESSION, **params}})
    sys.stdout.flush()
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == _asked[0] and "method" not in message:
            return message.get("result")
    return None


def terminal(size: int) -> Iterator[dict[str, Any]]:
    """``size`` bytes of output from a client terminal, embedded in a tool call."""
    code = (
        f"import sys\nline = 'x' * 99 + '\\n'\nfor _ in range({max(1, size // 100)}): sys.stdout.write(line)"
    )
    made = ask(
        "terminal/create", {"command": sys.executable, "args": ["-c", code], "outputByteLimit": 1 << 20}
    )
    ids = {"terminalId": made["terminalId"]}
    start = {"sessionUpdate": "tool_call", "toolCallId": "run", "title": "Print", "kind": "execute"}
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": {
        **start, "status": "in_progress", "content": [{"type": "terminal", **ids}]}}})  # fmt: skip
    ask("terminal/wait_for_exit", ids)
    ask("terminal/release", ids)
    yield {"sessionUpdate": "tool_call_update", "toolCallId": "run", "status": "completed"}


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
    elif name == "terminal":
        yield from terminal(size)
    elif name == "markdown":
        unit = "*a [b](c *d _e [f " * 60  # ~1 KB of openers that never close
        for _ in range(max(1, size // len(unit))):
            yield chunk(unit)


def lines_for(text: str) -> Iterator[str]:
    """The notification lines of the scenario the prompt names (``"chunks 100000"``; empty: idle)."""
    words = (text or "idle").split()
    name, size = words[0], int(words[1]) if len(words) > 1 else 0
    return map(notification, scenario(name, size))


if __name__ == "__main__":
    serve(lines_for)
