"""A real ACP agent (a subprocess) whose permission requests are shaped to mislead or to wedge the client
(issue 21): on each prompt, ``ROUNDS`` times (argv[1], default 1), in order and one at a time:

- ``many``: 10,000 options (``o0`` … ``o9999``, every one an ``allow_once``);
- ``duplicate``: the option id ``x`` twice, once as Allow and once as Reject;
- ``empty``: no options at all;
- ``foreign``: a request naming another session id;
- ``nul``: an edit of a path holding a NUL byte, with plain Allow / Reject options.

Then it answers the prompt with one chunk: the JSON list of ``[label, answer]`` it received, where the
answer is the chosen option id, ``"cancelled"``, or ``"error <code>"`` — what the test compares with what
the transcript shows. Plain JSON lines on stdio; nothing else.
"""

from __future__ import annotations

import json
import sys
from typing import Any

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 1
SESSION = "perm-1"
ALLOW_REJECT = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def requests() -> list[tuple[str, dict[str, Any]]]:
    many = [{"optionId": f"o{i}", "name": f"Option {i}", "kind": "allow_once"} for i in range(10_000)]
    duplicate = [
        {"optionId": "x", "name": "Allow", "kind": "allow_once"},
        {"optionId": "x", "name": "Reject", "kind": "reject_once"},
    ]

    def asking(
        call: str, options: list[dict[str, Any]], path: str = "notes.md", session: str = SESSION
    ) -> Any:
        tool = {
            "toolCallId": call,
            "title": f"{call}: edit {path!r}",
            "kind": "edit",
            "locations": [{"path": path}],
        }
        return {"sessionId": session, "toolCall": tool, "options": options}

    return [
        ("many", asking("many", many)),
        ("duplicate", asking("duplicate", duplicate)),
        ("empty", asking("empty", [])),
        ("foreign", asking("foreign", ALLOW_REJECT, session="someone-else")),
        ("nul", asking("nul", ALLOW_REJECT, path="notes\x00.md")),
    ]


def answer_of(message: dict[str, Any]) -> str:
    if "error" in message:
        return f"error {message['error'].get('code')}"
    outcome = (message.get("result") or {}).get("outcome") or {}
    return str(outcome.get("optionId") if outcome.get("outcome") == "selected" else "cancelled")


def main() -> None:
    ids = iter(range(1000, 10**9))
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            send(
                {
                    "id": request_id,
                    "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []},
                }
            )
        elif method == "session/new":
            send({"id": request_id, "result": {"sessionId": SESSION}})
        elif method == "session/prompt":
            got: list[list[str]] = []
            for _ in range(ROUNDS):
                for label, params in requests():
                    asked = next(ids)
                    send({"id": asked, "method": "session/request_permission", "params": params})
                    for reply in sys.stdin:  # the client's answer (nothing else comes meanwhile)
                        answer = json.loads(reply)
                        if answer.get("id") == asked:
                            got.append([label, answer_of(answer)])
                            break
            update = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": json.dumps(got)},
            }
            send({"method": "session/update", "params": {"sessionId": SESSION, "update": update}})
            send({"id": request_id, "result": {"stopReason": "end_turn"}})
        elif request_id is not None:
            send({"id": request_id, "error": {"code": -32601, "message": f"method not supported: {method}"}})


if __name__ == "__main__":
    main()
