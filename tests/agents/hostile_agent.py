"""A real ACP agent (a subprocess) that attacks the client in the way argv[1] says (the adversarial round
of issue 8). It speaks plain JSON lines on its stdio; every mode otherwise answers like a minimal agent.

Modes:
- ``flood-before-init``: never answers ``initialize``; writes ``session/update`` notifications (1 KB of
  text each) as fast as it can, forever.
- ``burst-before-init``: writes 12,000 such notifications, then answers ``initialize`` with an error
  (the client has read every one of them by then: the answer comes after them on the pipe).
- ``foreign-ids``: on a prompt, 20,000 responses to ids never sent (ints, strings, ``true``, floats,
  nulls), then a chunk and the real answer.
- ``permission-storm``: on a prompt, 2,000 ``session/request_permission`` requests at once, then waits
  for every answer and reports in a chunk how many of each outcome it got, then answers the prompt.
- ``deaf``: after ``session/new`` closes its stdin (it reads nothing more) but keeps running and writes
  a chunk every 50 ms, forever (it ignores SIGTERM too: only SIGKILL ends it).
- ``mute``: after ``session/new`` closes its stdout and keeps running (reads and ignores its stdin).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any

MODE = sys.argv[1]
SESSION = "hostile-1"
_lock = threading.Lock()
_answers: dict[int, Any] = {}
_all_answered = threading.Event()


def send(message: dict[str, Any]) -> None:
    data = (json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")) + "\n").encode()
    with _lock:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def chunk(text: str) -> None:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    send({"method": "session/update", "params": {"sessionId": SESSION, "update": update}})


def flood_forever() -> None:
    text = "flood " * 170
    while True:
        chunk(text)


def burst_then_refuse() -> None:
    text = "flood " * 170
    for _ in range(12_000):
        chunk(text)
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "initialize":
            send({"id": message["id"], "error": {"code": -32603, "message": "done flooding"}})


def foreign_ids() -> None:
    ids: list[Any] = [10**6, -5, "0", "1", True, False, 0.0, 1.0, None, [0], {"id": 0}]
    for n in range(20_000):
        send({"id": ids[n % len(ids)] if n % 2 else 10**6 + n, "result": {"stopReason": "end_turn"}})


def permission_storm(count: int) -> str:
    for n in range(count):
        params = {
            "sessionId": SESSION,
            "toolCallId": f"t{n}",
            "toolCall": {"toolCallId": f"t{n}", "title": f"step {n}"},
            "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}],
        }
        send({"id": 5000 + n, "method": "session/request_permission", "params": params})
    _all_answered.wait(60)
    outcomes: dict[str, int] = {}
    for answer in _answers.values():
        outcome = answer.get("result", {}).get("outcome", {}) if isinstance(answer, dict) else {}
        key = outcome.get("optionId") or outcome.get("outcome") or "error"
        outcomes[key] = outcomes.get(key, 0) + 1
    return json.dumps(dict(sorted(outcomes.items())))


def on_prompt(request_id: Any) -> None:
    if MODE == "foreign-ids":
        foreign_ids()
        chunk("still answering")
    elif MODE == "permission-storm":
        chunk(permission_storm(2000))
    else:
        chunk("hello")
    send({"id": request_id, "result": {"stopReason": "end_turn"}})


def deaf() -> None:
    """Close stdin for good (nothing reads it any more: writes to it fail) and keep talking."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.close(0)
    n = 0
    while True:
        time.sleep(0.05)
        n += 1
        chunk(f"tick {n} ")


def main() -> None:
    if MODE == "flood-before-init":
        flood_forever()
    if MODE == "burst-before-init":
        burst_then_refuse()
        return
    serve()
    if MODE == "deaf":
        deaf()
    while MODE == "mute":
        time.sleep(1)


def serve() -> None:
    for line in sys.stdin:
        message = json.loads(line) if line.strip() else {}
        method, request_id = message.get("method"), message.get("id")
        if method is None and isinstance(request_id, int) and request_id >= 5000:
            _answers[request_id] = message
            if len(_answers) == 2000:
                _all_answered.set()
        elif method == "initialize":
            info = {"name": "hostile"}
            send(
                {
                    "id": request_id,
                    "result": {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": info},
                }
            )
        elif method == "session/new":
            send({"id": request_id, "result": {"sessionId": SESSION}})
            if MODE == "deaf":
                return  # reads nothing more
            if MODE == "mute":
                os.close(1)
        elif method == "session/prompt":
            threading.Thread(target=on_prompt, args=(request_id,), daemon=True).start()
        elif request_id is not None and method is not None:
            send({"id": request_id, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
