"""A deterministic, scripted ACP v1 agent: ``python -m silo_nb.demo_agent [flags]``.

It exists so that every part of a client can be exercised with no keys and no network:
streamed thoughts and Markdown, tool calls with diffs, permission requests, plans, titles,
usage, slash commands, config options, load/resume/list across processes, and errors.

Design:

- Transport: newline-delimited JSON-RPC 2.0 on stdin/stdout, one compact JSON object per line;
  optional debug logs (``SILO_NB_DEMO_DEBUG=1``) go to stderr only. Standard library only, and
  nothing else from ``silo_nb`` is imported, so start-up stays fast.
- Concurrency: one reader loop. Every incoming request runs in its own task (a ``session/prompt``
  stays open for the whole turn while ``session/cancel`` and the answer to the agent's own
  ``session/request_permission`` arrive); responses to the agent's requests are matched by id;
  notifications are handled inline, in arrival order. Writes go through one lock-protected writer.
- Turns are scripts driven by keywords in the prompt text (matched case-insensitively at the start of
  a word): ``edit``/``tool``, ``plan``, ``slow``, ``fail``, ``refuse``, ``mode``, plus the slash
  commands ``/title``, ``/explain``, ``/plan`` and ``/clear``. Each step first pauses (``--delay``)
  and checks for cancellation, so ``session/cancel`` stops a turn at its next step and the prompt
  answers ``{"stopReason": "cancelled"}``. A turn's updates are always written before its response.
- Persistence: one JSON file per session in ``--state-dir``, rewritten atomically (temp file +
  ``os.replace``) after every turn and setting change. It keeps every ``update`` the turns sent, plus a
  ``user_message_chunk`` per prompt, so another process can replay it (``session/load``), continue it
  (``session/resume``) or list it (``session/list``).
- Flags switch capabilities off (``--no-load``, ``--no-resume``, ``--no-list``,
  ``--no-embedded-context``) or change the shape of the session (``--legacy-modes``,
  ``--auth-required``) so that each branch of a client can be tested.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import sys
import tempfile
import threading
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO, Final

JsonObject = dict[str, Any]

PROTOCOL_VERSION: Final = 1
STREAM_LIMIT: Final = 64 * 1024 * 1024
CONTEXT_WINDOW: Final = 200_000
DEFAULT_DELAY: Final = 0.03
SLOW_CHUNKS: Final = 40
SLOW_PAUSE: Final = 0.1
COMMANDS_DELAY: Final = 0.05
CLOSE_TIMEOUT: Final = 5.0

METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
AUTH_REQUIRED: Final = -32000
RESOURCE_NOT_FOUND: Final = -32002

AUTH_METHOD_ID: Final = "demo-login"

# (value, name, description)
MODES: Final = (
    ("ask", "Ask", "Answer questions without touching files"),
    ("code", "Code", "Write and edit code"),
    ("plan", "Plan", "Draft a plan before acting"),
)
MODELS: Final = (
    ("demo-fast", "Demo Fast", "Quick scripted replies"),
    ("demo-smart", "Demo Smart", "The same scripted replies, considered at length"),
)
DEFAULT_CONFIG: Final[JsonObject] = {"mode": "ask", "model": "demo-fast", "verbose": False}

AVAILABLE_COMMANDS: Final[list[JsonObject]] = [
    {"name": "explain", "description": "Explain a piece of code", "input": {"hint": "what to explain"}},
    {"name": "plan", "description": "Draft a plan"},
    {"name": "title", "description": "Rename this session", "input": {"hint": "new title"}},
    {"name": "clear", "description": "Forget the conversation", "input": None},
]

PERMISSION_OPTIONS: Final[list[JsonObject]] = [
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
]

PLAN_STEPS: Final = (
    ("Read notes.md", "high"),
    ("Draft the change", "medium"),
    ("Summarise the result", "low"),
)

KEYWORDS: Final = ("edit", "tool", "plan", "slow", "fail", "refuse", "mode")
SAFE_SESSION_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def _log(message: str) -> None:
    if os.environ.get("SILO_NB_DEMO_DEBUG"):
        print(f"[silo-demo] {message}", file=sys.stderr, flush=True)


class RpcError(Exception):
    """An error answered to the client as a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> JsonObject:
        error: JsonObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class TurnCancelled(Exception):
    """Raised inside a turn script once the client cancelled the turn."""


class Options:
    """The parsed command-line flags."""

    def __init__(self, ns: argparse.Namespace) -> None:
        self.load: bool = not ns.no_load
        self.resume: bool = not ns.no_resume
        self.list: bool = not ns.no_list
        self.legacy_modes: bool = ns.legacy_modes
        self.auth_required: bool = ns.auth_required
        self.embedded_context: bool = not ns.no_embedded_context
        self.delay: float = max(0.0, float(ns.delay))
        self.state_dir = Path(ns.state_dir)


class Reply:
    """A handler's result plus work to do once the response line has been written."""

    def __init__(self, result: JsonObject, after: Callable[[], Awaitable[None]] | None = None) -> None:
        self.result = result
        self.after = after


class Turn:
    """One ``session/prompt`` in flight (or queued behind another one), listed in its session's turns."""

    def __init__(self, siblings: list[Turn]) -> None:
        self.cancelled = asyncio.Event()
        self.finished = asyncio.Event()
        self._siblings = siblings
        siblings.append(self)

    def done(self) -> None:
        self.finished.set()
        if self in self._siblings:
            self._siblings.remove(self)


class _Clock:
    """ISO 8601 UTC timestamps that strictly increase within this process (so listing order is stable)."""

    def __init__(self) -> None:
        self._last: datetime | None = None

    def now_iso(self) -> str:
        now = datetime.now(UTC)
        if self._last is not None and now <= self._last:
            now = self._last + timedelta(microseconds=1)
        self._last = now
        return now.isoformat(timespec="microseconds").replace("+00:00", "Z")


_now_iso = _Clock().now_iso


class Session:
    """A conversation: its settings, its history of updates and its counters."""

    def __init__(self, session_id: str, cwd: str) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.title: str | None = None
        self.updated_at = _now_iso()
        self.config: JsonObject = dict(DEFAULT_CONFIG)
        self.history: list[JsonObject] = []
        self.seq = 0
        self.used = 0
        self.cost = 0.0
        self.turns: list[Turn] = []
        self.lock = asyncio.Lock()

    def next_id(self, prefix: str) -> str:
        self.seq += 1
        return f"{prefix}-{self.seq}"

    def to_json(self) -> JsonObject:
        return {
            "sessionId": self.session_id,
            "cwd": self.cwd,
            "title": self.title,
            "updatedAt": self.updated_at,
            "config": dict(self.config),
            "history": list(self.history),
            "seq": self.seq,
            "usage": {"used": self.used, "cost": self.cost},
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> Session:
        session = cls(str(data["sessionId"]), str(data.get("cwd") or ""))
        title = data.get("title")
        session.title = title if isinstance(title, str) else None
        updated_at = data.get("updatedAt")
        if isinstance(updated_at, str):
            session.updated_at = updated_at
        config = data.get("config")
        if isinstance(config, dict):
            session.config.update({k: v for k, v in config.items() if k in DEFAULT_CONFIG})
        history = data.get("history")
        if isinstance(history, list):
            session.history = [u for u in history if isinstance(u, dict)]
        seq = data.get("seq")
        session.seq = seq if isinstance(seq, int) else len(session.history)
        usage = data.get("usage")
        if isinstance(usage, dict):
            used, cost = usage.get("used"), usage.get("cost")
            session.used = used if isinstance(used, int) else 0
            session.cost = float(cost) if isinstance(cost, (int, float)) else 0.0
        return session


class Store:
    """Sessions on disk: ``<state dir>/<sessionId>.json``, written atomically."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, session_id: str) -> Path | None:
        if not SAFE_SESSION_ID.match(session_id):
            return None
        return self.directory / f"{session_id}.json"

    def save(self, session: Session) -> None:
        path = self._path(session.session_id)
        if path is None:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            payload = json.dumps(session.to_json(), ensure_ascii=False, separators=(",", ":"))
            temp.write_text(payload, encoding="utf-8")
            os.replace(temp, path)
        except OSError as exc:
            _log(f"could not save {session.session_id}: {exc}")

    def load(self, session_id: str) -> Session | None:
        path = self._path(session_id)
        if path is None:
            return None
        return self._read(path)

    def _read(self, path: Path) -> Session | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("sessionId"), str):
            return None
        return Session.from_json(data)

    def list(self, cwd: str | None) -> list[Session]:
        try:
            paths = sorted(self.directory.glob("*.json"))
        except OSError:
            return []
        sessions = [s for s in (self._read(p) for p in paths) if s is not None]
        if cwd is not None:
            sessions = [s for s in sessions if s.cwd == cwd]
        sessions.sort(key=lambda s: s.updated_at, reverse=True)
        return sessions


class LineWriter:
    """Writes one JSON object per line to a binary stream; one writer at a time."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = asyncio.Lock()
        self.closed = False

    async def send(self, message: JsonObject) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = line.encode("utf-8")
        async with self._lock:
            if self.closed:
                return
            try:
                self._stream.write(data)
                self._stream.flush()
            except (OSError, ValueError):
                self.closed = True


def _split(text: str, parts: int) -> list[str]:
    """Split text into about ``parts`` streaming chunks, cutting after whitespace when possible."""
    size = max(1, -(-len(text) // parts))
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        while end < len(text) and not text[end - 1].isspace() and end - start < size * 2:
            end += 1
        chunks.append(text[start:end])
        start = end
    return chunks


def _has_keyword(text: str, keyword: str) -> bool:
    return re.search(r"\b" + re.escape(keyword), text) is not None


def _label(choices: tuple[tuple[str, str, str], ...], value: Any) -> str:
    return next((name for v, name, _ in choices if v == value), str(value))


def _select_option(
    option_id: str, name: str, category: str, value: Any, choices: tuple[tuple[str, str, str], ...]
) -> JsonObject:
    return {
        "id": option_id,
        "name": name,
        "category": category,
        "type": "select",
        "currentValue": value,
        "options": [{"value": v, "name": n, "description": d} for v, n, d in choices],
    }


class DemoAgent:
    """The JSON-RPC endpoint and the scripted turns."""

    def __init__(self, options: Options, writer: LineWriter) -> None:
        self.options = options
        self.writer = writer
        self.store = Store(options.state_dir)
        self.sessions: dict[str, Session] = {}
        self.boolean_options = False
        self.authenticated = False
        self._next_request_id = 0
        self._pending: dict[Any, asyncio.Future[JsonObject]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        handlers: dict[str, Callable[[JsonObject], Awaitable[JsonObject | Reply]]] = {
            "initialize": self._initialize,
            "authenticate": self._authenticate,
            "session/new": self._new_session,
            "session/close": self._close_session,
            "session/set_mode": self._set_mode,
            "session/set_model": self._set_model,
        }
        if options.load:
            handlers["session/load"] = self._load_session
        if options.resume:
            handlers["session/resume"] = self._resume_session
        if options.list:
            handlers["session/list"] = self._list_sessions
        if not options.legacy_modes:
            handlers["session/set_config_option"] = self._set_config_option
        self._handlers = handlers

    # ----------------------------------------------------------------- transport

    async def serve(self, reader: asyncio.StreamReader) -> int:
        """Read messages until stdin reaches EOF, then cancel what is still running."""
        while True:
            try:
                line = await reader.readline()
            except ValueError as exc:  # a line longer than the reader's limit
                _log(f"dropped an oversized line: {exc}")
                continue
            if not line:
                break
            self._handle_line(line)
        await self._shutdown()
        return 0

    async def _shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()

    def _handle_line(self, line: bytes) -> None:
        text = line.strip()
        if not text:
            return
        try:
            message = json.loads(text)
        except ValueError:
            self._spawn(self._send_error(None, RpcError(-32700, "Parse error")))
            return
        for item in message if isinstance(message, list) else [message]:
            self._handle_message(item)

    def _handle_message(self, message: Any) -> None:
        if not isinstance(message, dict):
            self._spawn(self._send_error(None, RpcError(-32600, "Invalid request")))
            return
        method = message.get("method")
        if isinstance(method, str):
            params = message.get("params")
            if "id" in message:
                # A prompt's turn is registered synchronously, before its task first runs, so that a
                # session/cancel already buffered behind it on the wire still finds it.
                turn = self._register_turn(params) if method == "session/prompt" else None
                self._spawn(self._run_request(message["id"], method, params, turn))
            else:
                self._handle_notification(method, params)
        elif "id" in message and ("result" in message or "error" in message):
            request_id = message["id"]
            hashable = isinstance(request_id, (int, str)) or request_id is None
            future = self._pending.pop(request_id, None) if hashable else None
            if future is not None and not future.done():
                future.set_result(message)
        else:
            self._spawn(self._send_error(message.get("id"), RpcError(-32600, "Invalid request")))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_error(self, request_id: Any, error: RpcError) -> None:
        await self.writer.send({"jsonrpc": "2.0", "id": request_id, "error": error.to_json()})

    async def notify(self, method: str, params: JsonObject) -> None:
        await self.writer.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: JsonObject) -> asyncio.Future[JsonObject]:
        """Send a request to the client; the returned future resolves to its response message."""
        request_id = self._next_request_id
        self._next_request_id += 1
        future: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        await self.writer.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return future

    async def _run_request(self, request_id: Any, method: str, params: Any, turn: Turn | None) -> None:
        if method == "session/prompt":
            call: Awaitable[JsonObject | Reply] = self._prompt(params, turn)
        else:
            handler = self._handlers.get(method)
            if handler is None:
                await self._send_error(
                    request_id, RpcError(METHOD_NOT_FOUND, "Method not found", {"method": method})
                )
                return
            if params is None:
                params = {}
            if not isinstance(params, dict):
                await self._send_error(
                    request_id, RpcError(INVALID_PARAMS, "Invalid params: expected an object")
                )
                return
            call = handler(params)
        try:
            outcome = await call
        except RpcError as exc:
            await self._send_error(request_id, exc)
            return
        except Exception as exc:  # any bug becomes a JSON-RPC internal error, never a crash
            _log(f"{method} failed: {exc!r}")
            await self._send_error(
                request_id, RpcError(INTERNAL_ERROR, "Internal error", {"details": str(exc)})
            )
            return
        reply = outcome if isinstance(outcome, Reply) else Reply(outcome)
        await self.writer.send({"jsonrpc": "2.0", "id": request_id, "result": reply.result})
        if reply.after is not None:
            await reply.after()

    def _handle_notification(self, method: str, params: Any) -> None:
        if method == "session/cancel" and isinstance(params, dict):
            session = self.sessions.get(str(params.get("sessionId")))
            if session is not None:
                for turn in session.turns:
                    turn.cancelled.set()
        # Every other notification (including $/cancel_request and extensions) is ignored.

    # ----------------------------------------------------------------- sessions

    def _session(self, params: JsonObject) -> Session:
        session_id = params.get("sessionId")
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise RpcError(INVALID_PARAMS, f"Session not found: {session_id}")
        return session

    def _config_options(self, session: Session) -> list[JsonObject]:
        config = session.config
        options = [
            _select_option("mode", "Mode", "mode", config["mode"], MODES),
            _select_option("model", "Model", "model", config["model"], MODELS),
        ]
        if self.boolean_options:
            options.append(
                {
                    "id": "verbose",
                    "name": "Verbose",
                    "description": "Think out loud in more detail",
                    "category": "_demo",
                    "type": "boolean",
                    "currentValue": bool(config["verbose"]),
                }
            )
        return options

    def _modes(self, session: Session) -> JsonObject:
        return {
            "currentModeId": session.config["mode"],
            "availableModes": [{"id": v, "name": n, "description": d} for v, n, d in MODES],
        }

    def _models(self, session: Session) -> JsonObject:
        return {
            "currentModelId": session.config["model"],
            "availableModels": [{"modelId": v, "name": n, "description": d} for v, n, d in MODELS],
        }

    def _session_state(self, session: Session, *, with_modes: bool) -> JsonObject:
        if self.options.legacy_modes:
            return {"modes": self._modes(session), "models": self._models(session)}
        state: JsonObject = {"configOptions": self._config_options(session)}
        if with_modes:
            state["modes"] = self._modes(session)
        return state

    def _announce_commands(self, session: Session) -> Callable[[], Awaitable[None]]:
        async def announce() -> None:
            await asyncio.sleep(COMMANDS_DELAY)
            update = {"sessionUpdate": "available_commands_update", "availableCommands": AVAILABLE_COMMANDS}
            await self.notify("session/update", {"sessionId": session.session_id, "update": update})

        return announce

    def _touch(self, session: Session) -> None:
        session.updated_at = _now_iso()
        self.store.save(session)

    def _open_stored(self, params: JsonObject) -> Session:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: sessionId must be a string")
        session = self.sessions.get(session_id) or self.store.load(session_id)
        if session is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"Session not found: {session_id}")
        cwd = params.get("cwd")
        if isinstance(cwd, str) and os.path.isabs(cwd):
            session.cwd = cwd
        self.sessions[session_id] = session
        return session

    async def _initialize(self, params: JsonObject) -> JsonObject:
        capabilities = params.get("clientCapabilities")
        session_caps = capabilities.get("session") if isinstance(capabilities, dict) else None
        config_caps = session_caps.get("configOptions") if isinstance(session_caps, dict) else None
        boolean = config_caps.get("boolean") if isinstance(config_caps, dict) else None
        self.boolean_options = isinstance(boolean, dict)
        session_capabilities: JsonObject = {}
        if self.options.list:
            session_capabilities["list"] = {}
        if self.options.resume:
            session_capabilities["resume"] = {}
        session_capabilities["close"] = {}
        auth_methods: list[JsonObject] = []
        if self.options.auth_required:
            auth_methods.append(
                {"id": AUTH_METHOD_ID, "name": "Demo login", "description": "Run `demo login` first"}
            )
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentInfo": {"name": "silo-demo", "title": "Silo demo agent", "version": "1.0"},
            "agentCapabilities": {
                "loadSession": self.options.load,
                "promptCapabilities": {
                    "image": False,
                    "audio": False,
                    "embeddedContext": self.options.embedded_context,
                },
                "sessionCapabilities": session_capabilities,
            },
            "authMethods": auth_methods,
        }

    async def _authenticate(self, params: JsonObject) -> JsonObject:
        method_id = params.get("methodId")
        if self.options.auth_required and method_id != AUTH_METHOD_ID:
            raise RpcError(INVALID_PARAMS, f"Unknown auth method: {method_id}; expected {AUTH_METHOD_ID!r}")
        self.authenticated = True
        return {}

    async def _new_session(self, params: JsonObject) -> Reply:
        if self.options.auth_required and not self.authenticated:
            raise RpcError(AUTH_REQUIRED, "Authentication required: run `demo login` first")
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise RpcError(INVALID_PARAMS, f"Invalid params: cwd must be an absolute path, got {cwd!r}")
        session = Session(f"demo-{uuid.uuid4().hex[:12]}", cwd)
        self.sessions[session.session_id] = session
        self.store.save(session)
        result: JsonObject = {"sessionId": session.session_id}
        result.update(self._session_state(session, with_modes=True))
        return Reply(result, self._announce_commands(session))

    async def _load_session(self, params: JsonObject) -> Reply:
        session = self._open_stored(params)
        for update in list(session.history):
            await self.notify("session/update", {"sessionId": session.session_id, "update": update})
        self.store.save(session)
        return Reply(self._session_state(session, with_modes=False), self._announce_commands(session))

    async def _resume_session(self, params: JsonObject) -> Reply:
        session = self._open_stored(params)
        self.store.save(session)
        return Reply(self._session_state(session, with_modes=False), self._announce_commands(session))

    async def _list_sessions(self, params: JsonObject) -> JsonObject:
        cwd = params.get("cwd")
        sessions = self.store.list(cwd if isinstance(cwd, str) else None)
        entries: list[JsonObject] = []
        for session in sessions:
            entry: JsonObject = {"sessionId": session.session_id, "cwd": session.cwd}
            if session.title is not None:
                entry["title"] = session.title
            entry["updatedAt"] = session.updated_at
            entries.append(entry)
        return {"sessions": entries}

    async def _close_session(self, params: JsonObject) -> JsonObject:
        session_id = params.get("sessionId")
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            return {}
        turns = list(session.turns)
        for turn in turns:
            turn.cancelled.set()
        if turns:
            waits = [asyncio.ensure_future(turn.finished.wait()) for turn in turns]
            _, still_running = await asyncio.wait(waits, timeout=CLOSE_TIMEOUT)
            for wait in still_running:
                wait.cancel()
        self.sessions.pop(session.session_id, None)
        return {}

    async def _set_config_option(self, params: JsonObject) -> JsonObject:
        session = self._session(params)
        config_id = params.get("configId")
        value = params.get("value")
        known = ["mode", "model"] + (["verbose"] if self.boolean_options else [])
        if config_id not in known:
            raise RpcError(
                INVALID_PARAMS, f"Unknown config option: {config_id!r}; expected one of {', '.join(known)}"
            )
        if config_id == "verbose":
            if not isinstance(value, bool):
                raise RpcError(INVALID_PARAMS, f"Invalid value {value!r} for verbose: expected true or false")
        else:
            choices = MODES if config_id == "mode" else MODELS
            values = [v for v, _, _ in choices]
            if value not in values:
                raise RpcError(
                    INVALID_PARAMS,
                    f"Invalid value {value!r} for {config_id}: expected one of {', '.join(values)}",
                )
        session.config[str(config_id)] = value
        self._touch(session)
        return {"configOptions": self._config_options(session)}

    def _set_legacy(
        self, params: JsonObject, key: str, param: str, choices: tuple[tuple[str, str, str], ...]
    ) -> Session:
        """``session/set_mode`` / ``session/set_model``: the legacy setters of one config value."""
        session = self._session(params)
        value = params.get(param)
        values = [v for v, _, _ in choices]
        if value not in values:
            raise RpcError(INVALID_PARAMS, f"Unknown {key} {value!r}: expected one of {', '.join(values)}")
        session.config[key] = value
        self._touch(session)
        return session

    async def _set_mode(self, params: JsonObject) -> JsonObject:
        session = self._set_legacy(params, "mode", "modeId", MODES)
        update = {"sessionUpdate": "current_mode_update", "currentModeId": session.config["mode"]}
        await self.notify("session/update", {"sessionId": session.session_id, "update": update})
        return {}

    async def _set_model(self, params: JsonObject) -> JsonObject:
        self._set_legacy(params, "model", "modelId", MODELS)
        return {}

    # ----------------------------------------------------------------- prompt turns

    def _register_turn(self, params: Any) -> Turn | None:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        return None if session is None else Turn(session.turns)

    async def _prompt(self, params: Any, turn: Turn | None) -> JsonObject:
        try:
            if not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "Invalid params: expected an object")
            session = self._session(params)
            if turn is None or turn not in session.turns:  # the session was reopened meanwhile
                if turn is not None:
                    turn.done()
                turn = Turn(session.turns)
            prompt = params.get("prompt")
            if not isinstance(prompt, list):
                raise RpcError(INVALID_PARAMS, "Invalid params: prompt must be an array of content blocks")
            async with session.lock:  # one turn at a time per session
                if turn.cancelled.is_set():
                    return {"stopReason": "cancelled"}
                script = TurnScript(self, session, turn, prompt)
                try:
                    stop_reason = await script.play()
                except TurnCancelled:
                    stop_reason = "cancelled"
                finally:
                    self._touch(session)
                return {"stopReason": stop_reason}
        finally:
            if turn is not None:
                turn.done()


class TurnScript:
    """The scripted steps of one prompt turn."""

    def __init__(self, agent: DemoAgent, session: Session, turn: Turn, prompt: list[Any]) -> None:
        self.agent = agent
        self.session = session
        self.turn = turn
        self.delay = agent.options.delay
        blocks = [b for b in prompt if isinstance(b, dict)]
        self.text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        self.attachments: list[str] = []
        for block in blocks:
            if block.get("type") == "resource_link" and isinstance(block.get("uri"), str):
                self.attachments.append(block["uri"])
            elif block.get("type") == "resource" and isinstance(block.get("resource"), dict):
                self.attachments.append(str(block["resource"].get("uri", "")))
        self.lowered = self.text.lower()
        self.first_prompt = session.title is None

    # -- steps

    async def pause(self, seconds: float) -> None:
        """Wait between steps; raise TurnCancelled as soon as the client cancels."""
        if self.turn.cancelled.is_set():
            raise TurnCancelled
        if seconds <= 0:
            await asyncio.sleep(0)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.turn.cancelled.wait(), seconds)
        if self.turn.cancelled.is_set():
            raise TurnCancelled

    async def emit(self, update: JsonObject, pause: float | None = None) -> None:
        await self.pause(self.delay if pause is None else pause)
        self.session.history.append(update)
        await self.agent.notify("session/update", {"sessionId": self.session.session_id, "update": update})

    async def stream(
        self, kind: str, message_id: str, text: str, parts: int, pause: float | None = None
    ) -> None:
        for chunk in _split(text, parts):
            update = {
                "sessionUpdate": kind,
                "messageId": message_id,
                "content": {"type": "text", "text": chunk},
            }
            await self.emit(update, pause)

    async def say(self, text: str, parts: int = 1) -> None:
        await self.stream("agent_message_chunk", self.session.next_id("msg"), text, parts)

    async def think(self) -> None:
        thoughts = ["Reading the prompt", " and picking what to show off."]
        if self.session.config.get("verbose"):
            thoughts.append(" Verbose is on, so here is one more thought about the demo script.")
        message_id = self.session.next_id("think")
        for thought in thoughts:
            content = {"type": "text", "text": thought}
            await self.emit(
                {"sessionUpdate": "agent_thought_chunk", "messageId": message_id, "content": content}
            )

    async def finish(self, title: bool = True) -> str:
        if title and self.first_prompt:
            one_line = " ".join(self.text.split()) or "Attachments"
            self.session.title = one_line[:40]
            await self.emit({"sessionUpdate": "session_info_update", "title": self.session.title})
        self.session.used = min(CONTEXT_WINDOW, self.session.used + 1200 + 4 * len(self.text))
        self.session.cost = round(self.session.cost + (1200 + 4 * len(self.text)) * 15e-6, 6)
        await self.emit(
            {
                "sessionUpdate": "usage_update",
                "used": self.session.used,
                "size": CONTEXT_WINDOW,
                "cost": {"amount": self.session.cost, "currency": "USD"},
            }
        )
        return "end_turn"

    # -- the script

    async def play(self) -> str:
        user_chunk = {
            "sessionUpdate": "user_message_chunk",
            "messageId": self.session.next_id("user"),
            "content": {"type": "text", "text": self.text},
        }
        self.session.history.append(user_chunk)
        stripped = self.text.strip()
        if stripped.startswith("/"):
            name, _, argument = stripped[1:].partition(" ")
            command = getattr(self, f"command_{name.lower()}", None) if name.isalpha() else None
            if command is not None:
                result: str = await command(argument.strip())
                return result
        return await self.conversation()

    async def conversation(self) -> str:
        await self.think()
        if _has_keyword(self.lowered, "fail"):
            await self.say("Let me try that…")
            raise RpcError(INTERNAL_ERROR, "Internal error", {"details": "the demo agent was asked to fail"})
        if _has_keyword(self.lowered, "refuse"):
            await self.say("I won't do that one: the prompt asked me to refuse.")
            return "refusal"
        if _has_keyword(self.lowered, "plan"):
            await self.plan()
        await self.say(self.reply_markdown(), parts=8)
        if _has_keyword(self.lowered, "slow"):
            message_id = self.session.next_id("msg")
            for i in range(1, SLOW_CHUNKS + 1):
                text = "Counting slowly: 1" if i == 1 else f" {i}"
                content = {"type": "text", "text": text + ("." if i == SLOW_CHUNKS else "")}
                update = {"sessionUpdate": "agent_message_chunk", "messageId": message_id, "content": content}
                await self.emit(update, SLOW_PAUSE)
        if _has_keyword(self.lowered, "edit") or _has_keyword(self.lowered, "tool"):
            await self.edit_notes()
        return await self.finish()

    def reply_markdown(self) -> str:
        quoted = " ".join(self.text.split())
        quoted = quoted if len(quoted) <= 80 else quoted[:79] + "…"
        lines = ["## Silo demo agent", "", f"You said: **{quoted or '(no text)'}**", ""]
        lines.append("- This reply is scripted: the same prompt always gets the same answer.")
        lines.append("- Keywords to try: `edit`, `plan`, `slow`, `fail`, `refuse`, `mode`.")
        if self.attachments:
            count = len(self.attachments)
            noun = "attachment" if count == 1 else "attachments"
            lines.append(f"- I see {count} {noun}: {', '.join(self.attachments)}")
        if _has_keyword(self.lowered, "mode"):
            mode, model = self.session.config["mode"], self.session.config["model"]
            lines.append(
                f"- Current mode: `{mode}` ({_label(MODES, mode)}); current model: `{model}` "
                f"({_label(MODELS, model)})."
            )
        lines += ["", "```python", "def greet(name: str) -> str:", '    return f"Hello, {name}!"', "```", ""]
        return "\n".join(lines)

    async def plan(self) -> None:
        statuses = [["pending"] * 3]
        for done in range(3):
            statuses.append(["completed"] * done + ["in_progress"] + ["pending"] * (2 - done))
        statuses.append(["completed"] * 3)
        for row in statuses:
            entries = [
                {"content": content, "priority": priority, "status": status}
                for (content, priority), status in zip(PLAN_STEPS, row, strict=True)
            ]
            await self.emit({"sessionUpdate": "plan", "entries": entries})

    async def edit_notes(self) -> None:
        path = os.path.join(self.session.cwd, "notes.md")
        read_id = self.session.next_id("call")
        await self.emit(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": read_id,
                "title": "Read notes.md",
                "kind": "read",
                "status": "pending",
                "locations": [{"path": path, "line": 1}],
            }
        )
        await self.emit({"sessionUpdate": "tool_call_update", "toolCallId": read_id, "status": "in_progress"})
        notes = {"type": "text", "text": "# Notes\n\nold line\n"}
        await self.emit(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": read_id,
                "status": "completed",
                "content": [{"type": "content", "content": notes}],
            }
        )
        edit_id = self.session.next_id("call")
        diff = {"type": "diff", "path": path, "oldText": "old line\n", "newText": "new line\n"}
        tool_call: JsonObject = {
            "toolCallId": edit_id,
            "title": "Edit notes.md",
            "kind": "edit",
            "status": "pending",
            "content": [diff],
        }
        await self.emit({"sessionUpdate": "tool_call", **tool_call})
        await self.pause(self.delay)
        permission = {
            "sessionId": self.session.session_id,
            "toolCall": tool_call,
            "options": PERMISSION_OPTIONS,
        }
        answer = await self.agent.request("session/request_permission", permission)
        waiter = asyncio.ensure_future(self.turn.cancelled.wait())
        either: list[asyncio.Future[Any]] = [answer, waiter]
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        # On cancellation stop waiting; the client still answers the request, which is then dropped.
        if self.turn.cancelled.is_set():
            raise TurnCancelled
        response = answer.result()
        result = response.get("result")
        outcome = result.get("outcome") if isinstance(result, dict) else None
        kind = outcome.get("outcome") if isinstance(outcome, dict) else None
        option_id = outcome.get("optionId") if isinstance(outcome, dict) else None
        if kind == "cancelled":
            raise TurnCancelled
        if kind == "selected" and isinstance(option_id, str) and option_id.startswith("allow"):
            await self.emit(
                {"sessionUpdate": "tool_call_update", "toolCallId": edit_id, "status": "completed"}
            )
            await self.say("Edited notes.md.")
        else:
            await self.emit({"sessionUpdate": "tool_call_update", "toolCallId": edit_id, "status": "failed"})
            await self.say("Left notes.md unchanged.")

    # -- slash commands (looked up as command_<name>)

    async def command_title(self, argument: str) -> str:
        if not argument:
            await self.say("Usage: `/title NEW TITLE`")
            return await self.finish()
        self.session.title = argument
        await self.emit({"sessionUpdate": "session_info_update", "title": argument})
        await self.say("Renamed.")
        return await self.finish(title=False)

    async def command_explain(self, argument: str) -> str:
        await self.think()
        subject = argument or "the code"
        text = (
            f"### Explaining {subject}\n\n"
            "- **What it does:** greets someone by name.\n"
            "- **How:** an f-string builds the message.\n\n"
            '```python\ndef greet(name: str) -> str:\n    return f"Hello, {name}!"\n```\n'
        )
        await self.say(text, parts=6)
        return await self.finish()

    async def command_plan(self, argument: str) -> str:
        await self.think()
        await self.plan()
        await self.say(
            f"**Plan drafted**{': ' + argument if argument else '.'}\n\n- Three steps, all done.\n", 3
        )
        return await self.finish()

    async def command_clear(self, argument: str) -> str:
        await self.say("Cleared.")
        self.session.used = 0
        await self.emit(
            {
                "sessionUpdate": "usage_update",
                "used": 0,
                "size": CONTEXT_WINDOW,
                "cost": {"amount": self.session.cost, "currency": "USD"},
            }
        )
        self.session.history.clear()
        return "end_turn"


# --------------------------------------------------------------------- entry point


def _default_state_dir() -> str:
    configured = os.environ.get("SILO_NB_DEMO_STATE_DIR")
    if configured:
        return configured
    user = str(os.getuid()) if sys.platform != "win32" else os.environ.get("USERNAME", "user")
    return os.path.join(tempfile.gettempdir(), f"silo-nb-demo-{user}")


def _default_delay() -> float:
    try:
        return float(os.environ.get("SILO_NB_DEMO_DELAY", DEFAULT_DELAY))
    except ValueError:
        return DEFAULT_DELAY


def parse_args(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(
        prog="python -m silo_nb.demo_agent", description="A scripted ACP v1 agent speaking JSON-RPC on stdio."
    )
    parser.add_argument("--no-load", action="store_true", help="loadSession false; session/load is -32601")
    parser.add_argument(
        "--no-resume", action="store_true", help="no resume capability; session/resume is -32601"
    )
    parser.add_argument("--no-list", action="store_true", help="no list capability; session/list is -32601")
    parser.add_argument("--legacy-modes", action="store_true", help="legacy modes/models, no configOptions")
    parser.add_argument("--auth-required", action="store_true", help="session/new fails with -32000")
    parser.add_argument(
        "--no-embedded-context", action="store_true", help="promptCapabilities.embeddedContext false"
    )
    parser.add_argument(
        "--delay", type=float, default=_default_delay(), help="seconds between streamed steps (0: no pauses)"
    )
    parser.add_argument("--state-dir", default=_default_state_dir(), help="where sessions are persisted")
    return Options(parser.parse_args(argv))


async def _open_stdin(limit: int) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    if not sys.stdin.isatty():
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
            return reader
        except (OSError, ValueError, NotImplementedError):
            pass  # e.g. a regular file or Windows: fall back to a reader thread
    fd = sys.stdin.fileno()

    def pump() -> None:
        try:
            while True:
                data = os.read(fd, 65536)
                if not data:
                    break
                loop.call_soon_threadsafe(reader.feed_data, data)
        except (OSError, RuntimeError):
            pass
        with contextlib.suppress(RuntimeError):  # the loop may already be closed
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="silo-demo-stdin", daemon=True).start()
    return reader


async def _amain(options: Options) -> int:
    writer = LineWriter(sys.stdout.buffer)
    agent = DemoAgent(options, writer)
    reader = await _open_stdin(STREAM_LIMIT)
    return await agent.serve(reader)


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    try:
        return asyncio.run(_amain(options))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
