"""A benchmark agent: each prompt answers with N ``session/update`` notifications written as fast as the pipe
takes them, then ``end_turn``. Standard library only.

The prompt's text is ``N`` (N ``agent_message_chunk``) or ``mix N`` (a realistic mix, N updates in all: per
cycle of 18, ten message chunks, five thought chunks, a ``tool_call`` with its ``rawInput``, a
``tool_call_update`` with text content and one completing it with a 30-line diff). Lines are built from
templates and written in batches, so the agent is never what limits a client's rate.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator

SESSION = "flood"
BATCH = 512


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")


def notification(update: dict[str, object]) -> str:
    params = {"sessionId": SESSION, "update": update}
    return json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}, separators=(",", ":"))


CHUNK = notification(
    {"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "@@"}}
)
THOUGHT = notification(
    {"sessionUpdate": "agent_thought_chunk", "messageId": "t1", "content": {"type": "text", "text": "@@"}}
)


def _diff_text(step: int, new: bool) -> str:
    return "".join(f"line {i} of file {step}{' changed' if new and i % 3 == 0 else ''}\n" for i in range(30))


def mix_cycle(step: int) -> list[str]:
    """One cycle of the mix: 18 lines."""
    call_id = f"call-{step}"
    path = f"/home/user/project/src/module_{step % 50}.py"
    lines = [CHUNK.replace("@@", f"word {step}.{i} ") for i in range(10)]
    lines += [THOUGHT.replace("@@", f"thinking {step}.{i} ") for i in range(5)]
    lines.append(
        notification(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "title": f"Edit {path}",
                "kind": "edit",
                "status": "pending",
                "locations": [{"path": path, "line": 12}],
                "rawInput": {
                    "file_path": path,
                    "old_string": "x = 1",
                    "new_string": "x = 2",
                    "replace_all": False,
                },
            }
        )
    )
    lines.append(
        notification(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "in_progress",
                "content": [{"type": "content", "content": {"type": "text", "text": f"Editing {path}"}}],
            }
        )
    )
    diff = {
        "type": "diff",
        "path": path,
        "oldText": _diff_text(step, False),
        "newText": _diff_text(step, True),
    }
    lines.append(
        notification(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "completed",
                "content": [diff],
            }
        )
    )
    return lines


def updates(text: str) -> Iterator[str]:
    words = text.split()
    if words[0] == "mix":
        count = int(words[1])
        cycles = [mix_cycle(step) for step in range(64)]  # built once: the agent must not be the bottleneck
        for index in range(count):
            yield cycles[(index // 18) % 64][index % 18]
        return
    for index in range(int(words[0])):
        yield CHUNK.replace("@@", f"token {index} ")


def serve(lines_for: Callable[[str], Iterable[str]]) -> None:
    """The ACP loop of the benchmark agents (this one and ``scenario_agent.py``): ``initialize``,
    ``session/new``, and each prompt answered with the notification lines ``lines_for(text)`` yields,
    written in batches, then ``end_turn``."""
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
            send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": SESSION}})
        elif method == "session/prompt":
            batch: list[str] = []
            for update_line in lines_for(str(params["prompt"][0].get("text", ""))):
                batch.append(update_line)
                if len(batch) == BATCH:
                    sys.stdout.write("\n".join(batch) + "\n")
                    batch.clear()
            if batch:
                sys.stdout.write("\n".join(batch) + "\n")
            send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})
        else:
            send(
                {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
            )
        sys.stdout.flush()


if __name__ == "__main__":
    serve(updates)
