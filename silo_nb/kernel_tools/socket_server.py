"""``KernelToolServer``: the kernel's side of the "notebook" MCP server — a Unix socket on the kernel's
event loop, whose requests run the tools on the user's namespace for one session.

- :meth:`start` makes a fresh 0700 folder (under ``$XDG_RUNTIME_DIR`` when it is ours alone, else the
  temp folder, when nobody else can swap what is in it) holding one 0600 socket, and a random token;
  :attr:`server_config` is the stdio MCP server to offer the agent
  (``python -I .../kernel_tools/__main__.py``, the socket and the token in its environment). No TCP port
  is opened. The folder goes with :meth:`aclose` (or the kernel's exit); a killed kernel's, left behind,
  with the next start (:func:`sweep_stale_folders`).
- Every request must carry the token (compared in constant time) and come from this user (the socket's
  peer credentials, where the OS gives them); else it is refused, counted in :attr:`refused`, and the
  connection closed.
- A request is served only for the session :meth:`bind` gave, while a turn of it runs (the session's
  ``client_tool_calls``): each call is journaled there. ``run_code`` first asks the user through the
  session's permission flow (``allow code`` for policies); anything but "Run it" runs nothing and says so.
- A tool that fails, a request that is not JSON, a client that goes away: one answer or a closed
  connection, never an exception into the kernel.
- What each reading tool answered is noted in :attr:`~KernelToolServer.stale_answers` (issue 32: which
  turns' answers went stale since; ``stale_answers.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import secrets
import shutil
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from silo_nb.kernel_tools.checkpoint import DEFAULT_MAX_BYTES
from silo_nb.kernel_tools.code_runner import CodeResult, run_code
from silo_nb.kernel_tools.limits import MAX_CODE_CHARS, TOOL_SECONDS
from silo_nb.kernel_tools.namespace import KernelNamespace
from silo_nb.kernel_tools.notebook_tools import NotebookTools
from silo_nb.kernel_tools.stale_answers import StaleAnswers
from silo_nb.kernel_tools.tools import KernelTools, ToolOutcome
from silo_nb.kernel_tools.turn_parts import CellUndo, VariableCheckpoints
from silo_nb.kernel_tools.wire import (
    CELL_TOOL_NAMES,
    MAX_REQUEST_BYTES,
    SERVER_NAME,
    SOCKET_ENV,
    TOKEN_ENV,
    TOOL_NAMES,
    decode,
    encode,
    text_answer,
)
from silo_nb.model import (
    AgentSessionError,
)
from silo_nb.private_sockets import same_user, socket_folder
from silo_nb.sessions import (
    ClientToolCall,
    ClientToolCalls,
    McpServerConfig,
    TurnUndoPart,
)
from silo_nb.util import Disposable

__all__ = ["RUN_CODE_OPTIONS", "KernelToolServer", "ToolSession"]

log = logging.getLogger("silo_nb.kernel_tools")

RUN_CODE_TITLE = "Run code in the kernel"
RUN_CODE_OPTIONS = (
    {"optionId": "run", "name": "Run it", "kind": "allow_once"},
    {"optionId": "skip", "name": "Don't run", "kind": "reject_once"},
)
FOLDER_PREFIX = "silo-kt-"


class ToolSession(Protocol):
    """What the server needs of a session (an ``AgentSessionHandle`` has it)."""

    @property
    def client_tool_calls(self) -> ClientToolCalls: ...

    @property
    def current_turn(self) -> int: ...

    def add_undo_part(self, part: TurnUndoPart) -> Disposable: ...


def _runtime_folder() -> str:
    """A fresh 0700 folder for the socket (``private_sockets.socket_folder``)."""
    return socket_folder(FOLDER_PREFIX)


RELAY = Path(__file__).resolve().with_name("__main__.py")  # run by path: see that module


class KernelToolServer:
    """The kernel tools for one session (see the module docstring)."""

    def __init__(
        self,
        namespace: KernelNamespace,
        *,
        run_code_timeout: float = 60.0,
        tool_seconds: float = TOOL_SECONDS,
        cell_changes_per_turn: int = 200,
        checkpoint_max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.tools = KernelTools(namespace, run_code_timeout=run_code_timeout, tool_seconds=tool_seconds)
        self.cells = NotebookTools(
            run_code=lambda code: run_code(namespace, code, timeout=run_code_timeout),
            execution_count=namespace.execution_count or (lambda: None),
            max_changes=cell_changes_per_turn,
            guard_run=self.guarded_run,
        )
        # The undo's kernel parts (issue 32): variables saved before each allowed run, the turn's cell edits.
        self.variables = VariableCheckpoints(namespace, max_bytes=checkpoint_max_bytes)
        self.cell_undo = CellUndo()
        self._undo_parts: list[Disposable] = []
        self.stale_answers = StaleAnswers(namespace)  # what each turn read (issue 32: stale answers)
        self.token = secrets.token_urlsafe(32)
        self.folder: str | None = None
        self.socket_path: str | None = None
        self.refused = 0  # requests refused for a wrong token or another user
        self.served = 0
        self._session: ToolSession | None = None
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._cleanup: weakref.finalize[Any, Any] | None = None

    async def start(self) -> KernelToolServer:
        """Listen on a fresh socket (see the module docstring); returns self."""
        folder = _runtime_folder()
        path = os.path.join(folder, "s")
        self._cleanup = weakref.finalize(self, shutil.rmtree, folder, True)
        self._server = await asyncio.start_unix_server(self._serve, path=path, limit=MAX_REQUEST_BYTES)
        os.chmod(path, 0o600)
        self.folder, self.socket_path = folder, path
        return self

    @property
    def server_config(self) -> McpServerConfig:
        """The stdio MCP server the agent starts: the relay (``python -I <path>``), with the socket and the
        token in its environment (nothing else: the agent's own environment is laid under it)."""
        if self.socket_path is None:
            raise RuntimeError("start() the kernel tool server first")
        env = {SOCKET_ENV: self.socket_path, TOKEN_ENV: self.token}
        return McpServerConfig(name=SERVER_NAME, command=sys.executable, args=("-I", str(RELAY)), env=env)

    def prompt_at(self, cell_id: str | None) -> None:
        """A turn starts from this notebook cell (None: not known): cells the agent inserts go below it."""
        self.cells.prompt_at(cell_id)

    def bind(self, session: ToolSession | None) -> None:
        """Serve requests for ``session`` from now on (None: for no session); its ``undo()`` then asks
        this server's variables and cells."""
        for registration in self._undo_parts:
            registration.dispose()
        self._session = session
        self._undo_parts = (
            [session.add_undo_part(self.variables), session.add_undo_part(self.cell_undo)] if session else []
        )

    @property
    def is_open(self) -> bool:
        return self._server is not None

    def close(self) -> None:
        """Stop listening, drop the open connections and remove the folder, at once. Idempotent."""
        server, self._server = self._server, None
        for writer in list(self._writers):
            writer.close()
        if server is not None:
            server.close()
        if self._cleanup is not None:
            self._cleanup()

    async def aclose(self) -> None:
        """:meth:`close`, then wait until the listener is gone."""
        server = self._server
        self.close()
        if server is not None:
            with contextlib.suppress(Exception):
                await server.wait_closed()

    # -- serving ------------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            if not same_user(writer):
                self.refused += 1
                log.warning("kernel tools: refused a connection from another user")
                return
            while self._server is not None:
                line = await reader.readline()
                if not line:
                    return
                request = decode(line)
                if request is None or not hmac.compare_digest(
                    str(request.get("token", "")).encode(), self.token.encode()
                ):
                    self.refused += 1
                    log.warning("kernel tools: refused a request without the session's token")
                    writer.write(encode({"id": None, "refused": "a request without this session's token"}))
                    await writer.drain()
                    return
                answer = await self._answer(request)
                writer.write(encode(answer))
                await writer.drain()
        except (ConnectionError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return  # the relay went away, or sent a line over the limit: nothing more to say
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        request_id, tool, arguments = request.get("id"), request.get("tool"), request.get("arguments") or {}
        if tool not in TOOL_NAMES:
            return text_answer(
                request_id, f"Unknown tool {tool!r}: the tools are {', '.join(TOOL_NAMES)}.", error=True
            )
        session = self._session
        if session is None:
            return text_answer(request_id, "The notebook's tools are not connected to a session.", error=True)
        try:
            call = session.client_tool_calls.begin(
                str(tool), arguments if isinstance(arguments, dict) else {}
            )
        except AgentSessionError as exc:
            return text_answer(request_id, str(exc), error=True)
        self.served += 1
        if tool in CELL_TOOL_NAMES:
            return await self._cell_tool(request_id, str(tool), arguments, call)
        if tool == "run_code":
            outcome = await self._run_code(call, arguments)
        else:
            outcome = self.tools.read(str(tool), arguments)
            if not outcome.is_error:
                self.stale_answers.tool_read(str(tool), arguments)
        call.finish(outcome.status, output=outcome.text, images=outcome.previews)
        return {"id": request_id, "isError": outcome.is_error, "content": outcome.content()}

    async def _cell_tool(
        self, request_id: Any, tool: str, arguments: Any, call: ClientToolCall
    ) -> dict[str, Any]:
        answer = await self.cells.call(tool, arguments if isinstance(arguments, dict) else {}, call)
        if answer.read:
            self.stale_answers.tool_read(tool, arguments, cells=answer.read)
        run = answer.run
        cell: dict[str, Any] = {"cellId": answer.cell_id} if answer.cell_id else {}
        if answer.diff is not None:
            cell |= {"oldSource": answer.diff[0], "newSource": answer.diff[1]}
        if answer.undo is not None:
            cell["undo"] = answer.undo
        call.finish(answer.status, output=answer.text, images=run.previews if run else (), cell=cell)
        outcome = ToolOutcome(answer.status, answer.text, run.images if run else [])
        reply = {"id": request_id, "isError": outcome.is_error, "content": outcome.content()}
        if answer.cell_id:
            reply["structuredContent"] = {"cell_id": answer.cell_id}
        return reply

    async def _run_code(self, call: ClientToolCall, arguments: Any) -> ToolOutcome:
        code = arguments.get("code") if isinstance(arguments, dict) else None
        if not isinstance(code, str) or not code.strip():
            return ToolOutcome("failed", "run_code needs the code to run, as a non-empty string.")
        if len(code) > MAX_CODE_CHARS:
            return ToolOutcome(
                "failed", f"The code is {len(code):,} characters; run_code takes at most {MAX_CODE_CHARS:,}."
            )
        call.waiting(RUN_CODE_TITLE)
        choice = await call.ask(
            title=RUN_CODE_TITLE, kind="code", raw_input={"code": code}, options=RUN_CODE_OPTIONS
        )
        if choice != "run":
            said = (
                "rejected it" if choice is not None else "did not allow it (no answer, or the turn stopped)"
            )
            return ToolOutcome("refused", f"The user {said}: the code did not run, and nothing changed.")
        call.running(RUN_CODE_TITLE)
        outcome: list[ToolOutcome] = []

        def run() -> CodeResult:
            outcome.append(self.tools.run(arguments))
            return CodeResult(outcome[0].status)

        notes = (await self.guarded_run(code, run)).notes
        if notes:
            outcome[0].text += "\n\n" + "\n".join(notes)
        return outcome[0]

    async def guarded_run(self, code: str, run: Callable[[], CodeResult]) -> CodeResult:
        """Run allowed code after saving what it may change for this turn's undo (``turn_parts.py``); a
        name that could not be saved is said in the result's notes."""
        session = self._session
        turn = session.current_turn if session is not None else 0
        try:
            notes = await self.variables.before_run(turn, code) if turn else []
        except Exception as exc:  # a bug here must not keep the code from running, nor the agent waiting
            log.exception("kernel tools: the checkpoint before a run failed")
            notes = [f"not checkpointed (an undo cannot restore what this run changes): {type(exc).__name__}"]
        result = run()
        if turn:
            self.variables.after_run(turn, code)
        result.notes += notes
        return result
