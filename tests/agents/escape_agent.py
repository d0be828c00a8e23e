"""An ACP agent (stdio JSON lines, stdlib only) that tries to get out of its working copy; mode by argv[1].

- ``escape``: the prompt's text is JSON ``{"neighbour": path, "home": path, "outside": path, "runtime":
  path}``. At prompt time it writes ``mine.txt`` in its cwd, reads the neighbour's file (another cell's),
  the home's file, lists its cell folder (the journals sit beside the copy), writes ``outside`` and
  appends to ``runtime`` (its own script), then asks the client for the neighbour's and the home's file
  (``fs/read_text_file``) and runs ``cat`` on the neighbour's file in a client terminal. It answers with
  one chunk: JSON of what each attempt gave (``ok:…`` or ``error:…``).
- ``needs-home``: before anything else it reads ``~/.escape-agent-token``; missing, it says so on stderr
  and exits 3 (a sandbox hiding the home kills it). Otherwise a plain agent answering "token ok".
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "escape"
_ids = iter(range(1000, 10**9))


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request to the client, waiting for its answer (nothing else is expected meanwhile)."""
    request_id = next(_ids)
    send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            return message
    raise SystemExit(0)


def attempt(action: Any) -> str:
    try:
        return f"ok:{action()}"
    except Exception as exc:
        return f"error:{type(exc).__name__}"


def client_answer(message: dict[str, Any]) -> str:
    if "error" in message:
        return f"error:{message['error'].get('message', '')}"
    return f"ok:{json.dumps(message.get('result'))[:200]}"


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


def write(path: str, text: str, mode: str = "w") -> int:
    with open(path, mode, encoding="utf-8") as handle:
        return handle.write(text)


def escape(session_id: str, paths: dict[str, str]) -> dict[str, str]:
    report = {
        "own_write": attempt(lambda: write(os.path.join(os.getcwd(), "mine.txt"), "mine")),
        "neighbour_read": attempt(lambda: read(paths["neighbour"])),
        "home_read": attempt(lambda: read(paths["home"])),
        "cell_folder": attempt(lambda: ",".join(sorted(os.listdir(os.path.dirname(os.getcwd()))))),
        "outside_write": attempt(lambda: write(paths["outside"], "escaped")),
        "runtime_write": attempt(lambda: write(paths["runtime"], "\n# escaped\n", "a")),
        "capabilities": attempt(lambda: read("/proc/self/status").split("CapEff:")[1].split()[0]),
    }
    for name in ("neighbour", "home"):
        answer = ask("fs/read_text_file", {"sessionId": session_id, "path": paths[name]})
        report[f"fs_{name}"] = client_answer(answer)
    made = ask("terminal/create", {"sessionId": session_id, "command": "cat", "args": [paths["neighbour"]]})
    if "error" in made:
        report["terminal"] = client_answer(made)
    else:
        terminal = {"sessionId": session_id, "terminalId": made["result"]["terminalId"]}
        ask("terminal/wait_for_exit", terminal)
        output = ask("terminal/output", terminal).get("result", {})
        code = (output.get("exitStatus") or {}).get("exitCode")
        report["terminal"] = f"{'ok' if code == 0 else 'error'}:{code}:{output.get('output', '').strip()}"
        ask("terminal/release", terminal)
    return report


def main() -> None:
    if MODE == "needs-home":
        token = os.path.expanduser("~/.escape-agent-token")
        if not os.path.isfile(token):
            sys.stderr.write(f"escape_agent: no token at {token} — cannot sign in\n")
            sys.stderr.flush()
            raise SystemExit(3)
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
        if method == "initialize":
            info = {"name": "escape-agent", "version": "1.0.0"}
            send({"jsonrpc": "2.0", "id": request_id, "result": {"protocolVersion": 1, "agentInfo": info}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "escape-1"}})
        elif method == "session/prompt":
            session_id = params["sessionId"]
            text = params["prompt"][0]["text"]
            body = json.dumps(escape(session_id, json.loads(text))) if MODE == "escape" else "token ok"
            chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": body}}
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": session_id, "update": chunk},
                }
            )
            send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
