"""The demo agent's ACP methods: one ``DemoAgent`` per connection.

- ``initialize`` advertises what the flags allow; ``authenticate``; ``session/new|load|resume|list|close``;
  ``session/fork`` (a copy of the session's conversation and settings under a new id), ``session/set_title``
  and ``session/status`` (ACP v1.25, unstable); ``_session/rewind_points`` and ``_session/rewind`` (the
  conversation-rewind extension of claude-agent-acp#966; off with ``--no-rewind``);
  a ``systemPrompt`` (append or override, text blocks) is
  checked and kept on the session, a bad one refused with -32602 and no session;
  ``session/set_config_option`` (or, with ``--legacy-modes``, ``session/set_mode``/``session/set_model``);
  ``session/prompt`` runs a ``TurnScript`` (scripted_turns.py), one turn at a time per session.
- A method switched off by a flag is simply not routed, so it answers -32601 like any unknown method.
- ``session/new``, ``load`` and ``resume`` answer first and announce the slash commands just after
  (``Reply.after``), as real agents do.
- All state is per instance (sessions in memory, the clock, the endpoint); agents share only the files of
  ``--state-dir``.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Final

from silo_nb_agents.demo.client_tools import ClientTools
from silo_nb_agents.demo.options import Options
from silo_nb_agents.demo.prompt_blocks_text import read_prompt
from silo_nb_agents.demo.rpc_endpoint import (
    AUTH_REQUIRED,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    ByteReader,
    ByteWriter,
    Call,
    Endpoint,
    JsonObject,
    LineWriter,
    Reply,
    RpcError,
    refuse,
)
from silo_nb_agents.demo.scripted_turns import AVAILABLE_COMMANDS, TurnCancelled, TurnScript
from silo_nb_agents.demo.session_store import MODELS, MODES, Clock, Session, Store, Turn

PROTOCOL_VERSION: Final = 1
COMMANDS_DELAY: Final = 0.05
CLOSE_TIMEOUT: Final = 5.0
AUTH_METHOD_ID: Final = "demo-login"

Handler = Callable[[JsonObject], Awaitable[JsonObject | Reply]]


async def run_agent(options: Options, read: ByteReader, write: ByteWriter) -> None:
    """Serve one connection until ``read`` reaches end of stream (the core of ``main`` and ``serve``)."""
    await DemoAgent(options, LineWriter(write)).endpoint.run(read)


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


def _servers(params: JsonObject) -> list[JsonObject]:
    """The ``mcpServers`` a session setup offers (the well-formed entries)."""
    servers = params.get("mcpServers")
    return [s for s in servers if isinstance(s, dict)] if isinstance(servers, list) else []


class DemoAgent:
    """The ACP methods of one connection, routed by its ``Endpoint``."""

    def __init__(self, options: Options, writer: LineWriter) -> None:
        self.options = options
        self.store = Store(options.state_dir, Clock())
        self.sessions: dict[str, Session] = {}
        self.boolean_options = False
        self.client = ClientTools()  # what the client offers (files, terminal, questions), from initialize
        self.authenticated = False
        self.endpoint = Endpoint(writer, self.route, self._handle_notification)
        handlers: dict[str, Handler] = {
            "initialize": self._initialize,
            "authenticate": self._authenticate,
            "session/new": self._new_session,
            "session/close": self._close_session,
            "session/delete": self._delete_session,
            "logout": self._logout,
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
        if options.fork:
            handlers["session/fork"] = self._fork_session
        handlers["_session/steering"] = self._steer
        if options.rewind:
            handlers["_session/rewind_points"] = self._rewind_points
            handlers["_session/rewind"] = self._rewind
        handlers["session/set_title"] = self._set_title
        handlers["session/status"] = self._session_status
        self._handlers = handlers

    def route(self, method: str, params: Any) -> Call:
        """The call answering one request; runs synchronously, in wire order."""
        if method == "session/prompt":
            # A prompt's turn is registered now, before its task first runs, so that a session/cancel
            # already buffered behind it on the wire still finds it.
            turn = self._register_turn(params)
            return lambda: self._prompt(params, turn)
        handler = self._handlers.get(method)
        if handler is None:
            return refuse(RpcError(METHOD_NOT_FOUND, "Method not found", {"method": method}))
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return refuse(RpcError(INVALID_PARAMS, "Invalid params: expected an object"))
        return lambda: handler(params)

    def _handle_notification(self, method: str, params: Any) -> None:
        if method == "session/cancel" and isinstance(params, dict):
            session_id = str(params.get("sessionId"))
            session = self.sessions.get(session_id)
            if session is not None:
                for turn in session.turns:
                    turn.cancelled.set()
            for parent in self.sessions.values():  # a subagent's id stops the child, not its parent
                child = parent.children.get(session_id)
                if child is not None:
                    child.set()
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
            await self.endpoint.notify("session/update", {"sessionId": session.session_id, "update": update})

        return announce

    def _touch(self, session: Session) -> None:
        session.updated_at = self.store.clock.now_iso()
        self.store.save(session)

    def _system_prompt(self, params: JsonObject) -> JsonObject | None:
        """The request's ``systemPrompt``, checked as ACP asks: -32602 (and no session) for an unknown mode,
        a block that is not text, or an empty array; None when there is none."""
        prompt = params.get("systemPrompt")
        if prompt is None:
            return None
        if not self.options.system_prompt:
            raise RpcError(INVALID_PARAMS, "Invalid params: this agent takes no systemPrompt")
        if not isinstance(prompt, dict) or prompt.get("mode") not in ("append", "override"):
            mode = prompt.get("mode") if isinstance(prompt, dict) else None
            raise RpcError(INVALID_PARAMS, f"Unsupported systemPrompt mode: {mode!r}")
        content = prompt.get("content")
        if not isinstance(content, list) or not content:
            raise RpcError(INVALID_PARAMS, "Invalid params: systemPrompt content must be a non-empty array")
        for block in content:
            if (
                not isinstance(block, dict)
                or block.get("type") != "text"
                or not isinstance(block.get("text"), str)
            ):
                raise RpcError(INVALID_PARAMS, "Invalid params: systemPrompt content must be text blocks")
        return {"mode": prompt["mode"], "text": "\n\n".join(block["text"] for block in content)}

    def _open_stored(self, params: JsonObject) -> Session:
        system_prompt = self._system_prompt(params)
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: sessionId must be a string")
        session = self.sessions.get(session_id) or self.store.load(session_id)
        if session is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"Session not found: {session_id}")
        cwd = params.get("cwd")
        if isinstance(cwd, str) and os.path.isabs(cwd):
            session.cwd = cwd
        session.mcp_servers = _servers(params)
        if system_prompt is not None:
            session.system_prompt = system_prompt
        self.sessions[session_id] = session
        return session

    async def _fork_session(self, params: JsonObject) -> Reply:
        """``session/fork``: a new session with a copy of the parent's conversation and settings."""
        system_prompt = self._system_prompt(params)
        parent_id = params.get("sessionId")
        if not isinstance(parent_id, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: sessionId must be a string")
        parent = self.sessions.get(parent_id) or self.store.load(parent_id)
        if parent is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"Session not found: {parent_id}")
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise RpcError(INVALID_PARAMS, f"Invalid params: cwd must be an absolute path, got {cwd!r}")
        session = Session(f"demo-{uuid.uuid4().hex[:12]}", cwd, self.store.clock.now_iso())
        session.title = parent.title
        session.config = dict(parent.config)
        session.history = list(parent.history)
        session.forked_at = len(session.history)
        session.seq = parent.seq
        session.system_prompt = system_prompt if system_prompt is not None else parent.system_prompt
        session.mcp_servers = _servers(params)
        self.sessions[session.session_id] = session
        self.store.save(session)
        result: JsonObject = {"sessionId": session.session_id}
        result.update(self._session_state(session, with_modes=True))
        return Reply(result, self._announce_commands(session))

    async def _set_title(self, params: JsonObject) -> JsonObject:
        """``session/set_title``: stored, and said back as a ``session_info_update``."""
        session = self._session(params)
        title = params.get("title")
        if not isinstance(title, str) or not title.strip():
            raise RpcError(INVALID_PARAMS, "Invalid params: title must be a non-empty string")
        session.title = " ".join(title.split())[:200]
        self._touch(session)
        update = {"sessionUpdate": "session_info_update", "title": session.title}
        await self.endpoint.notify("session/update", {"sessionId": session.session_id, "update": update})
        return {"title": session.title}  # the title as stored (normalized), which the client shows

    async def _session_status(self, params: JsonObject) -> JsonObject:
        """``session/status``: open (in this agent's memory) or saved (on disk); -32002 otherwise."""
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: sessionId must be a string")
        if session_id in self.sessions:
            return {"status": "open"}
        if self.store.load(session_id) is not None:
            return {"status": "saved"}
        raise RpcError(RESOURCE_NOT_FOUND, f"Session not found: {session_id}", {"sessionId": session_id})

    async def _initialize(self, params: JsonObject) -> JsonObject:
        capabilities = params.get("clientCapabilities")
        self.client = ClientTools.from_capabilities(capabilities)
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
        session_capabilities["delete"] = {}
        if self.options.fork:
            session_capabilities["fork"] = {}
        if self.options.system_prompt:
            session_capabilities["systemPrompt"] = {"mode": {"override": {}}}
        session_capabilities["title"] = {}
        session_capabilities["status"] = {}
        auth_methods: list[JsonObject] = []
        if self.options.auth_required or self.options.auth_on_prompt:
            auth_methods.append(
                {"id": AUTH_METHOD_ID, "name": "Demo login", "description": "Run `demo login` first"}
            )
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentInfo": {"name": "silo-demo", "title": "Silo demo agent", "version": "1.0"},
            "agentCapabilities": {
                "loadSession": self.options.load,
                "promptCapabilities": {
                    "image": self.options.images,
                    "audio": False,
                    "embeddedContext": self.options.embedded_context,
                },
                "sessionCapabilities": session_capabilities,
                **({"auth": {"logout": {}}} if auth_methods else {}),
            },
            "authMethods": auth_methods,
            # The steering extension (as Claude's adapter advertises it): input added to a running turn.
            "_meta": {"steering": {"supported": True}},
        }

    async def _steer(self, params: JsonObject) -> JsonObject:
        """``_session/steering``: the text goes to the session's running turn, which says it noted it at its
        next step; with no turn running, ``promptRequired`` (the client prompts instead)."""
        session = self._session(params)
        prompt = params.get("prompt")
        text, _ = read_prompt(prompt if isinstance(prompt, list) else [])
        if not text.strip():
            raise RpcError(INVALID_PARAMS, "steer params require a non-empty prompt array")
        running = next((turn for turn in session.turns if not turn.finished.is_set()), None)
        if running is None:
            return {"outcome": "promptRequired", "reason": "noRunningTurn"}
        running.steered.append(text)
        return {"outcome": "injected"}

    async def _rewind_points(self, params: JsonObject) -> JsonObject:
        """``_session/rewind_points`` (the extension of claude-agent-acp#966): the user messages this
        session's conversation can go back to, oldest first."""
        session = self._session(params)
        points = [
            {"messageId": u.get("messageId"), "text": _text_of(u), "index": index}
            for index, u in enumerate(
                u for u in session.history if u.get("sessionUpdate") == "user_message_chunk"
            )
        ]
        return {"points": points}

    async def _rewind(self, params: JsonObject) -> JsonObject:
        """``_session/rewind``: the conversation drops that user message and everything after it (mode
        ``conversation`` or ``both``); the demo keeps no file checkpoints (mode ``files`` says so)."""
        session = self._session(params)
        if any(not turn.finished.is_set() for turn in session.turns):
            raise RpcError(INVALID_PARAMS, "Cannot rewind while a turn is running")
        message_id, mode = params.get("messageId"), params.get("mode", "files")
        answer: JsonObject = {}
        if mode in ("files", "both"):
            answer["files"] = {"canRewind": False, "error": "the demo agent keeps no file checkpoints"}
        if mode in ("conversation", "both"):
            at = next(
                (i for i, u in enumerate(session.history)
                 if u.get("sessionUpdate") == "user_message_chunk" and u.get("messageId") == message_id),
                None,
            )  # fmt: skip
            if at is None:
                answer["conversation"] = {"rewound": False, "error": f"no user message {message_id!r}"}
            else:
                dropped = len(session.history) - at
                kept_from = max(at, session.forked_at)  # a fork's copy of its parent's was not received here
                session.rewound += [
                    u for u in session.history[kept_from:] if u.get("sessionUpdate") == "user_message_chunk"
                ]
                session.forked_at = min(session.forked_at, at)
                del session.history[at:]
                self._touch(session)
                answer["conversation"] = {"rewound": True, "messagesDropped": dropped}
        return answer

    async def _authenticate(self, params: JsonObject) -> JsonObject:
        method_id = params.get("methodId")
        if (self.options.auth_required or self.options.auth_on_prompt) and method_id != AUTH_METHOD_ID:
            raise RpcError(INVALID_PARAMS, f"Unknown auth method: {method_id}; expected {AUTH_METHOD_ID!r}")
        self.authenticated = True
        return {}

    async def _new_session(self, params: JsonObject) -> Reply:
        if self.options.auth_required and not self.authenticated:
            raise RpcError(AUTH_REQUIRED, "Authentication required: run `demo login` first")
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise RpcError(INVALID_PARAMS, f"Invalid params: cwd must be an absolute path, got {cwd!r}")
        system_prompt = self._system_prompt(params)
        session = Session(f"demo-{uuid.uuid4().hex[:12]}", cwd, self.store.clock.now_iso())
        session.mcp_servers = _servers(params)
        session.system_prompt = system_prompt
        self.sessions[session.session_id] = session
        self.store.save(session)
        result: JsonObject = {"sessionId": session.session_id}
        result.update(self._session_state(session, with_modes=True))
        return Reply(result, self._announce_commands(session))

    async def _load_session(self, params: JsonObject) -> Reply:
        session = self._open_stored(params)
        for update in list(session.history):
            await self.endpoint.notify("session/update", {"sessionId": session.session_id, "update": update})
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

    async def _delete_session(self, params: JsonObject) -> JsonObject:
        """``session/delete``: closed if open here, and gone from disk (``session/list`` no longer has it)."""
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: sessionId must be a string")
        was_open = session_id in self.sessions
        await self._close_session(params)
        if not self.store.delete(session_id) and not was_open:
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: session {session_id}")
        return {}

    async def _logout(self, params: JsonObject) -> JsonObject:
        """``logout`` (advertised when the demo asks for a sign-in): signed out until ``authenticate``."""
        self.authenticated = False
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
        await self.endpoint.notify("session/update", {"sessionId": session.session_id, "update": update})
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
            if self.options.auth_on_prompt and not self.authenticated:
                raise RpcError(AUTH_REQUIRED, "Authentication required: run `demo login` first")
            prompt = params.get("prompt")
            if not isinstance(prompt, list):
                raise RpcError(INVALID_PARAMS, "Invalid params: prompt must be an array of content blocks")
            async with session.lock:  # one turn at a time per session
                if turn.cancelled.is_set():
                    return {"stopReason": "cancelled"}
                script = TurnScript(
                    self.endpoint, session, turn, prompt, self.options.delay, client=self.client
                )
                try:
                    stop_reason = await script.play()
                except TurnCancelled:
                    stop_reason = "cancelled"
                finally:
                    self._touch(session)
                answer: JsonObject = {"stopReason": stop_reason}
                if script.response_usage is not None and stop_reason != "cancelled":
                    answer["usage"] = script.response_usage  # ACP's (unstable) usage of the session
                return answer
        finally:
            if turn is not None:
                turn.done()


def _text_of(update: JsonObject) -> str:
    content = update.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    return text[:200] if isinstance(text, str) else ""
