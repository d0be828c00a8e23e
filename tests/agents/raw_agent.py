"""A raw (hand-written JSON lines) fake ACP agent whose misbehaviour is chosen by argv[1].

Modes:
- ``ok``: a plain agent (one chunk per prompt) used as the base of the others.
- ``exit-at-start``: writes a few stderr lines and exits 3 before reading anything.
- ``silent``: never answers ``initialize``.
- ``bad-version``: answers ``initialize`` with protocolVersion 99.
- ``no-session-id``: ``session/new`` returns ``{}``.
- ``new-fails``: ``session/new`` fails with a vendor message (-32603 with string data).
- ``noisy``: floods stderr (2 MiB), writes non-JSON lines and a 2 MiB JSON line on stdout, then works.
- ``grandchild``: starts a long ``sleep`` grandchild and reports its pid in the first chunk of a prompt.
- ``crash-mid-turn``: on a prompt sends one chunk, writes to stderr and exits 1.
- ``uses-client``: on a prompt writes ``notes.md`` through the client, reads it back, runs a command in a
  client terminal shown in a tool call, and reports what it got in a chunk (JSON).
- ``writes-files``: the prompt's text is JSON ``{"write": [[path, content], ...], "read": [path, ...]}``
  (paths under the cwd); on a prompt it writes and reads them through the client and reports each answer
  (the result, or the error's code and message) in a chunk (JSON).
- ``asks-questions``: on a prompt asks a form question, a url one (then ``elicitation/complete``), and one
  it withdraws with ``$/cancel_request``; reports the answers in a chunk (JSON).
- ``withdraws-wait``: on a prompt runs ``sleep 30`` in a client terminal, withdraws its
  ``terminal/wait_for_exit`` with ``$/cancel_request``, kills and releases it; reports the codes (JSON).
- ``asks-client``: on a prompt calls ``fs/read_text_file``, ``terminal/create`` and ``_vendor/x`` on the
  client and reports the error codes it got back in a chunk.
- ``asks-too-deep``: on a prompt sends two requests nested 100,000 deep (one with its ``id`` first, one
  with it last), each waiting for its answer, then a ``_vendor/x`` one; reports the error codes (JSON).
- ``legacy``: legacy ``modes``/``models`` only; ``session/set_config_option`` is -32601.
- ``mute-setter``: advertises the same config options and never answers ``session/set_config_option``,
  ``session/set_mode``, ``session/list`` nor ``session/delete`` (issue 21: no timeout, no interrupt).
- ``config-rejects``: advertises a ``thought`` option (category ``thought_level``) whose setter fails, and
  a mode option whose ``set_config_option`` is -32601 while ``set_mode`` works.
- ``ignores-eof``: does not exit on stdin EOF and ignores SIGTERM (needs SIGKILL).
- ``load-forks``: ``loadSession`` only; ``session/load`` replays a fixed transcript (the prompt "hello" and
  its echo) and answers with a *new* ``sessionId`` ("forked-2"), as claude-agent-acp does.
- ``self-starts``: 0.2 s after ``session/new`` it works on its own (chunks, a tool call that completes),
  with no prompt in flight, then goes quiet.
- ``marks-turn-end``: like ``self-starts``, then ends that turn with Claude's explicit marker (a
  ``usage_update`` whose ``_meta["_claude/origin"].kind`` is a string).
- ``banner``: right after answering ``session/new`` it sends a banner chunk and a ``usage_update``, as pi
  does ("pi v1.6.0").
- ``terminal-login``: its one sign-in method is ``type: terminal`` with ``args: ["--login-now"]``; run so,
  it writes the file ``RAW_FAKE_LOGIN`` names and exits 0. ``session/new`` is -32000 until that file exists.
- ``stop-ends-turn``: a prompt gets one chunk and no answer until ``session/cancel``, which it answers
  with ``end_turn`` and zero usage, as opencode does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
_write_lock = threading.Lock()
_next_id = [1000]
_waiters: dict[int, dict[str, Any]] = {}
_waiter_events: dict[int, threading.Event] = {}


def send(message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":")) + "\n"
    with _write_lock:
        sys.stdout.write(data)
        sys.stdout.flush()


def reply(request_id: Any, result: Any = None, error: dict[str, Any] | None = None) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if error is not None:
        message["error"] = error
    else:
        message["result"] = result
    send(message)


def update(session_id: str, body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": body}})


def chunk(session_id: str, text: str) -> None:
    update(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def ask_client(method: str, params: dict[str, Any]) -> dict[str, Any]:
    _next_id[0] += 1
    request_id = _next_id[0]
    event = threading.Event()
    _waiter_events[request_id] = event
    send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    event.wait(10)
    return _waiters.pop(request_id, {})


def ask_raw(before: bytes, after: bytes = b"") -> dict[str, Any]:
    """A request written by hand (``before`` + deep params + ``after``), its id put where the caller says
    with ``%d``; waits for the answer."""
    _next_id[0] += 1
    request_id = _next_id[0]
    event = threading.Event()
    _waiter_events[request_id] = event
    params = b"[" * 100_000 + b'{"id":1,"method":"inner"}' + b"]" * 100_000
    line = (
        before.replace(b"%d", b"%d" % request_id) + params + after.replace(b"%d", b"%d" % request_id)
    ).decode()
    with _write_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    event.wait(10)
    return _waiters.pop(request_id, {})


def use_the_client(session_id: str) -> None:
    """Write a file, read it back, and run a command in a client terminal shown in a tool call."""
    notes = os.path.join(STATE["cwd"], "notes.md")
    wrote = ask_client("fs/write_text_file", {"sessionId": session_id, "path": notes, "content": "- one\n"})
    read = ask_client("fs/read_text_file", {"sessionId": session_id, "path": notes})
    made = ask_client(
        "terminal/create",
        {
            "sessionId": session_id,
            "command": sys.executable,
            "args": ["-c", "print('hello from a terminal')"],
        },
    )
    terminal_id = (made.get("result") or {}).get("terminalId")
    update(
        session_id,
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "run-1",
            "title": "Run a command",
            "kind": "execute",
            "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": terminal_id}],
        },
    )
    waited = ask_client("terminal/wait_for_exit", {"sessionId": session_id, "terminalId": terminal_id})
    output = ask_client("terminal/output", {"sessionId": session_id, "terminalId": terminal_id})
    ask_client("terminal/release", {"sessionId": session_id, "terminalId": terminal_id})
    update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": "run-1", "status": "completed"})
    summary = {
        "wrote": wrote.get("result"),
        "read": (read.get("result") or {}).get("content"),
        "exit": waited.get("result"),
        "output": (output.get("result") or {}).get("output"),
    }
    chunk(session_id, json.dumps(summary, sort_keys=True))


def write_and_read(session_id: str, text: str) -> None:
    """Write and read the files the prompt names through the client; report every answer."""
    asked = json.loads(text)
    report: dict[str, Any] = {"wrote": {}, "read": {}}

    def answer(reply_: dict[str, Any]) -> Any:
        return reply_["result"] if "result" in reply_ else reply_.get("error")

    for relative, content in asked.get("write", []):
        path = os.path.join(STATE["cwd"], relative)
        params = {"sessionId": session_id, "path": path, "content": content}
        report["wrote"][relative] = answer(ask_client("fs/write_text_file", params))
    for relative in asked.get("read", []):
        params = {"sessionId": session_id, "path": os.path.join(STATE["cwd"], relative)}
        report["read"][relative] = answer(ask_client("fs/read_text_file", params))
    chunk(session_id, json.dumps(report, sort_keys=True))


def withdraw(method: str, params: dict[str, Any], after: float) -> dict[str, Any]:
    """Send ``method``, withdraw it with ``$/cancel_request`` after ``after`` s, and return the answer."""
    _next_id[0] += 1
    request_id = _next_id[0]
    event = threading.Event()
    _waiter_events[request_id] = event
    send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    time.sleep(after)
    send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}})
    event.wait(10)
    return _waiters.pop(request_id, {})


def withdraw_a_wait(session_id: str) -> None:
    """A terminal running ``sleep 30``, its ``wait_for_exit`` withdrawn; then kill and release."""
    made = ask_client("terminal/create", {"sessionId": session_id, "command": "sleep", "args": ["30"]})
    ids = {"sessionId": session_id, "terminalId": (made.get("result") or {}).get("terminalId")}
    waited = withdraw("terminal/wait_for_exit", ids, 0.3)
    killed = ask_client("terminal/kill", ids)
    status = ask_client("terminal/output", ids)
    ask_client("terminal/release", ids)
    report = {
        "waited": waited.get("error", {}).get("code"),
        "killed": "result" in killed,
        "exit": (status.get("result") or {}).get("exitStatus"),
    }
    chunk(session_id, json.dumps(report, sort_keys=True))


QUESTION_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your <b>name</b>", "minLength": 1},
        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
        "agree": {"type": "boolean", "title": "Go ahead?", "default": False},
        "colour": {"type": "string", "title": "Colour", "enum": ["red", "green"]},
        "tags": {"type": "array", "title": "Tags", "items": {"type": "string", "enum": ["a", "b", "c"]}},
    },
    "required": ["name", "agree"],
}


def ask_questions(session_id: str) -> None:
    """A form question, then a url one (completed), then one it withdraws with $/cancel_request; the
    answers go back in a chunk (JSON)."""
    form = ask_client(
        "elicitation/create",
        {
            "sessionId": session_id,
            "mode": "form",
            "message": "Before I delete files:",
            "requestedSchema": QUESTION_SCHEMA,
        },
    )
    link = ask_client(
        "elicitation/create",
        {
            "sessionId": session_id,
            "mode": "url",
            "message": "Sign in",
            "url": "https://example.com/x",
            "elicitationId": "e1",
        },
    )
    send({"jsonrpc": "2.0", "method": "elicitation/complete", "params": {"elicitationId": "e1"}})
    ask = {
        "sessionId": session_id,
        "mode": "form",
        "message": "Never mind",
        "requestedSchema": QUESTION_SCHEMA,
    }
    withdrawn = withdraw("elicitation/create", ask, float(os.environ.get("RAW_WITHDRAW_AFTER", "0.5")))
    answers = {"form": form.get("result"), "url": link.get("result"), "withdrawn": withdrawn.get("error")}
    chunk(session_id, json.dumps(answers, sort_keys=True))


def config_options(mode: str = "ask") -> list[dict[str, Any]]:
    return [
        {
            "id": "mode",
            "name": "Mode",
            "category": "mode",
            "type": "select",
            "currentValue": mode,
            "options": [{"value": "ask", "name": "Ask"}, {"value": "code", "name": "Code"}],
        },
        {
            "id": "thought",
            "name": "Thinking",
            "category": "thought_level",
            "type": "select",
            "currentValue": "low",
            "options": [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}],
        },
        {
            "id": "speed",
            "name": "Speed",
            "category": "_vendor",
            "type": "select",
            "currentValue": "normal",
            "options": [{"value": "normal", "name": "Normal"}, {"value": "turbo", "name": "Turbo"}],
        },
    ]


STATE: dict[str, Any] = {"mode": "ask"}


def handle(message: dict[str, Any]) -> None:
    method = message.get("method")
    params = message.get("params") or {}
    request_id = message.get("id")
    if method is None:
        if request_id in _waiter_events:
            _waiters[request_id] = message
            _waiter_events.pop(request_id).set()
        return
    if request_id is None:
        if method == "session/cancel" and MODE == "stop-ends-turn" and "prompt" in STATE:
            usage = {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
            reply(STATE.pop("prompt"), {"stopReason": "end_turn", "usage": usage, "_meta": {}})
        return  # other notifications are ignored by these simple modes
    if method == "initialize":
        if MODE == "silent":
            return
        reply(
            request_id,
            {
                "protocolVersion": 99 if MODE == "bad-version" else 1,
                "agentInfo": {"name": "raw-fake", "title": f"Raw fake ({MODE})", "version": "0"},
                "agentCapabilities": {
                    "loadSession": MODE == "load-forks",
                    "promptCapabilities": {"embeddedContext": True},
                    **({"sessionCapabilities": {"list": {}, "delete": {}}} if MODE == "mute-setter" else {}),
                },
                "authMethods": [
                    {"id": "raw-terminal", "name": "Raw login", "type": "terminal", "args": ["--login-now"]}
                ]
                if MODE == "terminal-login"
                else [],
            },
        )
    elif method == "session/new":
        STATE["cwd"] = params.get("cwd")
        if MODE == "no-session-id":
            reply(request_id, {})
        elif MODE == "new-fails":
            reply(
                request_id,
                error={"code": -32603, "message": "Internal error", "data": "model gemini-1 is retired"},
            )
        elif MODE == "legacy":
            reply(
                request_id,
                {
                    "sessionId": "raw-1",
                    "modes": {
                        "currentModeId": "ask",
                        "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}],
                    },
                    "models": {
                        "currentModelId": "small",
                        "availableModels": [
                            {"modelId": "small", "name": "Small"},
                            {"modelId": "big", "name": "Big"},
                        ],
                    },
                },
            )
        elif MODE in ("config-rejects", "mute-setter"):
            reply(request_id, {"sessionId": "raw-1", "configOptions": config_options()})
        elif MODE == "terminal-login" and not os.path.exists(os.environ.get("RAW_FAKE_LOGIN", "")):
            reply(request_id, error={"code": -32000, "message": "Authentication required"})
        else:
            reply(request_id, {"sessionId": "raw-1"})
            if MODE in ("self-starts", "marks-turn-end"):
                threading.Thread(target=work_alone, daemon=True).start()
            elif MODE == "banner":
                chunk("raw-1", "raw-fake v1\n---\n")
                update("raw-1", {"sessionUpdate": "usage_update", "used": 0, "size": 1000})
    elif method == "session/load" and MODE == "load-forks":
        session_id = params.get("sessionId", "raw-1")
        update(
            session_id, {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hello"}}
        )
        chunk(session_id, "echo: hello (replayed)")
        reply(request_id, {"sessionId": "forked-2"})
    elif MODE == "mute-setter" and method in (
        "session/set_config_option",
        "session/set_mode",
        "session/list",
        "session/delete",
    ):
        pass  # never answered
    elif method == "session/set_config_option":
        if MODE == "config-rejects" and params.get("configId") == "thought":
            reply(request_id, error={"code": -32602, "message": "thought level is locked on this plan"})
        else:
            reply(
                request_id, error={"code": -32601, "message": "Method not found", "data": {"method": method}}
            )
    elif method == "session/set_mode":
        STATE["mode"] = params.get("modeId")
        reply(request_id, {})
        update("raw-1", {"sessionUpdate": "current_mode_update", "currentModeId": params.get("modeId")})
    elif method == "session/set_model":
        STATE["model"] = params.get("modelId")
        reply(request_id, {})
    elif method == "session/prompt":
        session_id = params.get("sessionId", "raw-1")
        if MODE == "stop-ends-turn":
            chunk(session_id, "working")
            STATE["prompt"] = request_id
            return
        if MODE == "grandchild":
            child = subprocess.Popen(["sleep", "300"])
            chunk(session_id, f"grandchild {child.pid}")
        elif MODE == "crash-mid-turn":
            chunk(session_id, "starting")
            sys.stderr.write("fatal: the model backend went away\n")
            sys.stderr.flush()
            os._exit(1)
        elif MODE == "uses-client":
            use_the_client(session_id)
        elif MODE == "writes-files":
            write_and_read(session_id, "".join(b.get("text", "") for b in params.get("prompt", [])))
        elif MODE == "withdraws-wait":
            withdraw_a_wait(session_id)
        elif MODE == "asks-questions":
            ask_questions(session_id)
        elif MODE == "asks-too-deep":
            first = ask_raw(b'{"jsonrpc":"2.0","id":%d,"method":"fs/read_text_file","params":', b"}")
            last = ask_raw(b'{"jsonrpc":"2.0","method":"fs/read_text_file","params":', b',"id":%d}')
            after = ask_client("_vendor/x", {"sessionId": session_id})
            report = {
                name: (answer.get("error") or {}).get("code")
                for name, answer in (("deep-first", first), ("deep-last", last), ("after", after))
            }
            chunk(session_id, json.dumps(report))
        elif MODE == "asks-client":
            codes = []
            for asked in ("fs/read_text_file", "terminal/create", "_vendor/x"):
                answer = ask_client(asked, {"sessionId": session_id, "path": "/etc/hostname"})
                codes.append(f"{asked}={(answer.get('error') or {}).get('code')}")
            chunk(session_id, " ".join(codes))
        else:
            text = "".join(b.get("text", "") for b in params.get("prompt", []) if isinstance(b, dict))
            chunk(session_id, f"echo: {text} (mode {STATE.get('mode')}, model {STATE.get('model')})")
        reply(request_id, {"stopReason": "end_turn"})
    else:
        reply(request_id, error={"code": -32601, "message": "Method not found", "data": {"method": method}})


def work_alone() -> None:
    time.sleep(0.2)
    update("raw-1", {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "woken up"}})
    update(
        "raw-1", {"sessionUpdate": "tool_call", "toolCallId": "bg-1", "title": "Check CI", "kind": "execute"}
    )
    time.sleep(0.3)
    update("raw-1", {"sessionUpdate": "tool_call_update", "toolCallId": "bg-1", "status": "completed"})
    chunk("raw-1", "CI is green.")
    if MODE == "marks-turn-end":
        update(
            "raw-1",
            {
                "sessionUpdate": "usage_update",
                "used": 10,
                "size": 100,
                "_meta": {"_claude/origin": {"kind": "agent"}},
            },
        )


def main() -> None:
    if "--login-now" in sys.argv:  # terminal-login's sign-in, run in a terminal
        with open(os.environ["RAW_FAKE_LOGIN"], "w") as marker:
            marker.write("signed in\n")
        return
    if MODE == "exit-at-start":
        sys.stderr.write(
            "raw-fake: starting\nraw-fake: config file ~/.rawfake missing\nraw-fake: giving up\n"
        )
        sys.stderr.flush()
        sys.exit(3)
    if MODE == "ignores-eof":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if MODE == "noisy":
        sys.stderr.write(("x" * 1023 + "\n") * 2048)
        sys.stderr.flush()
        sys.stdout.write("Loading model weights... (not JSON)\n")
        sys.stdout.write(
            json.dumps({"jsonrpc": "2.0", "method": "_noise", "params": {"pad": "y" * (2 << 20)}})
        )
        sys.stdout.write("\n")
        sys.stdout.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        threading.Thread(target=handle, args=(message,), daemon=True).start()
    if MODE == "ignores-eof":
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
