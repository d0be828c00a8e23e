"""The replay agent's ACP methods: a recording played back, turn by turn, at its recorded pace.

- ``initialize``: no fs/terminal needs, ``session/resume`` (its progress is kept in ``--state-dir``, so a
  kernel restart continues where it was), text and embedded context in prompts.
- ``session/new``: a fresh session over the recording; what the recording's agent said before the first
  prompt (commands, a banner) follows the answer.
- ``session/prompt`` plays the next recorded turn, whatever the prompt says: its updates are spread over
  the turn's recorded duration (the journal times turns, not updates) divided by ``speed`` (0: no pauses;
  no pause longer than :data:`MAX_GAP_SECONDS`), then it ends with the recorded stop reason (a recorded
  failure is answered with the recorded error). A recorded permission request is asked again; an answer
  other than the recording's ends the replay with a note (the user took another road); later prompts say
  the replay is over, as do prompts after the last recorded turn.
- ``session/cancel`` ends the turn being played: ``cancelled``.
- Nothing recorded is done again: its ``agentInfo`` title says "Replayed from <recording>" (the turns'
  header) and each played tool call carries ``_meta.silo_nb.recorded`` (its edit shows "recorded, not
  applied").
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio

from silo_nb.acp import INTERNAL_ERROR, AcpRpcError, JsonRpcConnection
from silo_nb.replay_agent.recording import CHILD_SESSION_KEY, Permission, RecordedTurn, Recording
from silo_nb.sessions import read_small_file, replace_file

__all__ = ["MAX_GAP_SECONDS", "RECORDED_META", "ReplayAgent", "agent_info", "recorded"]

MAX_GAP_SECONDS = 1.0
STATE_LIMIT = 64 << 20  # a session's progress file: its prompts' text, kept whole
_STATE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")
RESOURCE_NOT_FOUND = -32002
AGENT_INFO = {"name": "silo-replay", "title": "Silo replay", "version": "1"}
# Marks a played tool call as the recording's, not something done now (``_meta`` is ACP's open field): the
# transcript shows its edit as "recorded, not applied" — nothing is written on a replay.
RECORDED_META = {"silo_nb": {"recorded": True}}
_TOOL_KINDS = frozenset({"tool_call", "tool_call_update"})


def agent_info(recording: Path) -> dict[str, str]:
    """The replay's ``agentInfo``: its title (the turn headers' label) says which recording plays."""
    return {**AGENT_INFO, "title": f"Replayed from {recording.name}"}


def recorded(update: Any) -> Any:
    """A tool call's update marked as the recording's (:data:`RECORDED_META`); others as they are."""
    if not isinstance(update, dict) or update.get("sessionUpdate") not in _TOOL_KINDS:
        return update
    meta = update.get("_meta")
    return {**update, "_meta": {**(meta if isinstance(meta, dict) else {}), **RECORDED_META}}


class _Session:
    def __init__(self, session_id: str, next_turn: int = 0, ended: str | None = None) -> None:
        self.session_id = session_id
        self.next_turn = next_turn
        self.ended = ended  # why the replay is over, once it is
        self.prompts: list[str] = []  # what it was sent (kept with its progress: a restore can be checked)
        self.cancel = anyio.Event()


class ReplayAgent:
    """Serves one recording on a JSON-RPC connection (see the module notes)."""

    def __init__(self, recording: Recording, *, speed: float = 1.0, state_dir: Path | None = None) -> None:
        self.recording = recording
        self.speed = max(0.0, speed)
        self.state_dir = state_dir
        self.sessions: dict[str, _Session] = {}
        self.connection: JsonRpcConnection | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._unsaved = False  # the state folder failed its check: progress is not kept

    def handlers(self) -> tuple[dict[str, Any], dict[str, Any]]:
        requests = {
            "initialize": self._initialize,
            "session/new": self._new,
            "session/resume": self._resume,
            "session/prompt": self._prompt,
        }
        return requests, {"session/cancel": self._cancel}

    # -- state --------------------------------------------------------------------------------------

    def _state_file(self, session_id: str) -> Path | None:
        """Where a session's progress is kept; None without a state folder or for an id that is not a
        plain file name (a client's ``session/resume`` names it: ``../x`` is no session of ours)."""
        if self.state_dir is None or not _STATE_NAME.fullmatch(session_id):
            return None
        return self.state_dir / f"{session_id}.json"

    def _save(self, session: _Session) -> None:
        """Keep a session's progress, as silo_nb keeps its own files (``sessions.safe_files``): the folder
        made 0700 and checked (this user's, nobody else may write it: the default one is in the shared
        temporary folder, where another user could have made it first), the file 0600, written whole
        through a temporary file, no link followed. A folder that fails the check keeps nothing (said once
        on stderr); the replay goes on."""
        path = self._state_file(session.session_id)
        if path is None or self.state_dir is None or self._unsaved:
            return
        state = {
            "journal": str(self.recording.path),
            "next": session.next_turn,
            "ended": session.ended,
            "prompts": session.prompts,
        }
        try:
            replace_file(path, json.dumps(state).encode("utf-8"), root=self.state_dir, tighten=True)
        except OSError as exc:
            self._unsaved = True
            print(f"silo-replay: not keeping progress: {exc}", file=sys.stderr, flush=True)

    def _load(self, session_id: str) -> dict[str, Any] | None:
        path = self._state_file(session_id)
        if path is None or self.state_dir is None:
            return None
        try:
            state = json.loads(read_small_file(path, root=self.state_dir, limit=STATE_LIMIT))
        except (OSError, ValueError):
            return None
        return state if isinstance(state, dict) else None

    # -- methods ------------------------------------------------------------------------------------

    async def _initialize(self, params: Any) -> dict[str, Any]:
        version = params.get("protocolVersion", 1) if isinstance(params, dict) else 1
        return {
            "protocolVersion": version if version == 1 else 1,
            "agentCapabilities": {
                "loadSession": False,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "sessionCapabilities": {"resume": {}},
            },
            "agentInfo": agent_info(self.recording.path),
            "authMethods": [],
        }

    def _result(self, session: _Session) -> dict[str, Any]:
        result: dict[str, Any] = {"sessionId": session.session_id}
        if self.recording.config_options is not None:
            result["configOptions"] = self.recording.config_options
        return result

    async def _new(self, params: Any) -> dict[str, Any]:
        session = _Session(f"replay-{secrets.token_hex(6)}")
        self.sessions[session.session_id] = session
        self._save(session)
        opening = list(self.recording.opening)
        if opening and self.connection is not None:
            connection = self.connection

            async def announce() -> None:
                # A task runs after this handler returns and its answer is queued: the client knows the
                # session id by the time these arrive.
                for update in opening:
                    connection.notify("session/update", {"sessionId": session.session_id, "update": update})

            self._spawn(announce)
        return self._result(session)

    def _spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(work())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        """Cancel what is still running (an opening being announced)."""
        for task in list(self._tasks):
            task.cancel()

    async def _resume(self, params: Any) -> dict[str, Any]:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        state = self._load(session_id) if isinstance(session_id, str) else None
        if state is None or state.get("journal") != str(self.recording.path):
            raise AcpRpcError(RESOURCE_NOT_FOUND, f"Session not found: {session_id}")
        session = _Session(str(session_id), int(state.get("next", 0)), state.get("ended"))
        session.prompts = [str(p) for p in state.get("prompts", []) if isinstance(p, str)]
        self.sessions[session.session_id] = session
        return self._result(session)

    def _cancel(self, params: Any) -> None:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is not None:
            session.cancel.set()

    def _say(self, session: _Session, text: str) -> None:
        assert self.connection is not None
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        self.connection.notify("session/update", {"sessionId": session.session_id, "update": update})

    async def _prompt(self, params: Any) -> dict[str, Any]:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise AcpRpcError(RESOURCE_NOT_FOUND, f"Session not found: {session_id}")
        session.cancel = anyio.Event()
        blocks = params.get("prompt") if isinstance(params, dict) else None
        texts = [b.get("text", "") for b in blocks or [] if isinstance(b, dict) and b.get("type") == "text"]
        session.prompts.append("".join(str(t) for t in texts))
        self._save(session)
        if session.ended is None and session.next_turn >= len(self.recording.turns):
            session.ended = f"the recording has no more turns ({len(self.recording.turns)} played)"
        if session.ended is not None:
            self._say(session, f"_This replay is over: {session.ended}._")
            return {"stopReason": "end_turn"}
        turn = self.recording.turns[session.next_turn]
        session.next_turn += 1
        self._save(session)
        return await self._play(session, turn)

    async def _play(self, session: _Session, turn: RecordedTurn) -> dict[str, Any]:
        assert self.connection is not None
        connection = self.connection
        count = max(1, len(turn.steps))
        gap = 0.0 if self.speed == 0 else min(MAX_GAP_SECONDS, turn.duration_ms / 1000 / count / self.speed)
        for step in turn.steps:
            with anyio.move_on_after(gap):
                await session.cancel.wait()
            if session.cancel.is_set():
                return {"stopReason": "cancelled"}
            if isinstance(step, Permission):
                if not await self._ask(session, step):
                    return {"stopReason": "end_turn"}
                continue
            update = recorded(step)
            sent_for = session.session_id
            if CHILD_SESSION_KEY in update:  # a subagent's update, under the child's own id
                update = dict(update)
                sent_for = str(update.pop(CHILD_SESSION_KEY))
            connection.notify("session/update", {"sessionId": sent_for, "update": update})
        if turn.error is not None:
            raise AcpRpcError(INTERNAL_ERROR, turn.error)
        return {"stopReason": turn.stop_reason, **({"usage": turn.usage} if turn.usage else {})}

    async def _ask(self, session: _Session, permission: Permission) -> bool:
        """Ask the recorded permission again; False (the replay ends, with a note) for another answer."""
        assert self.connection is not None
        params = {
            "sessionId": permission.child_session_id or session.session_id,
            "toolCall": permission.tool_call,
            "options": permission.options,
        }
        answer = await self.connection.request("session/request_permission", params)
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        chosen = outcome.get("optionId") if isinstance(outcome, dict) else None
        if chosen == permission.chosen:
            return True
        session.ended = (
            f"you chose **{permission.option_name(chosen)}** where the recording chose "
            f"**{permission.option_name(permission.chosen)}**"
        )
        self._save(session)
        tool_call_id = permission.tool_call.get("toolCallId")
        if isinstance(tool_call_id, str):  # the recorded call will not run now
            update = {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, "status": "failed"}
            self.connection.notify("session/update", {"sessionId": session.session_id, "update": update})
        self._say(
            session, f"\n\n_The replay ends here: {session.ended}. From here the recording cannot follow._"
        )
        return False
