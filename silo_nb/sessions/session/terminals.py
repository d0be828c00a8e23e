"""Terminals the agent runs through the client (ACP ``terminal/create``, ``output``, ``wait_for_exit``,
``kill``, ``release``).

- Each terminal is a real process, no shell (the command and its args, exec'd), under the same supervisor
  as agents (``acp/process.py``): its own process group, swept with ``setsid`` descendants when it is
  killed or released, when the session is disposed, and when the kernel dies — also when the command
  killed the processes above it (release then still sweeps what they left).
- Its ``cwd`` must be inside the session's folders (default: the session's ``cwd``); its environment is
  the kernel's with the agent's ``env`` laid over it; stdin is closed; stdout and stderr are one stream.
- Output is kept up to ``outputByteLimit`` bytes (at most :data:`MAX_OUTPUT_BYTES`; by default
  :data:`DEFAULT_OUTPUT_BYTES`), cut from the beginning at a character boundary (``truncated``).
- What the terminal prints is journaled as ``terminal_output`` lines, at most every
  :data:`JOURNAL_INTERVAL_SECONDS`, each carrying only what is new since the last (``output``, appended),
  so the journal grows by what was printed, never more. A flood is cut: past the first
  :data:`JOURNAL_APPEND_CHARS`, text that piles up beyond :data:`JOURNAL_TAIL_CHARS` between two lines is
  dropped but for its end, which goes in a ``replace`` line (``truncated``), at most every
  :data:`JOURNAL_FLOOD_INTERVAL_SECONDS` — a terminal printing 1 GB costs the journal little. The exit
  status ends it. The transcript (``updates/entries.TerminalView``) folds the same lines live and after
  a restore, and reads journals whose every late line was a ``replace`` tail alike.
- At most the profile's ``max_terminals`` alive per session (released ones do not count).
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import signal
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from silo_nb.acp import AcpRpcError, AgentProcess, AgentSpawnError, Sandbox
from silo_nb.model import (
    AgentSessionUpdate,
    TerminalOutputLine,
)
from silo_nb.task_set import TaskSet

__all__ = ["DEFAULT_OUTPUT_BYTES", "MAX_OUTPUT_BYTES", "TerminalHost"]

log = logging.getLogger("silo_nb.sessions")

INVALID_PARAMS = -32602
DEFAULT_OUTPUT_BYTES = 1 << 20  # output kept when the agent names no outputByteLimit
MAX_OUTPUT_BYTES = 16 << 20  # output kept at most, whatever it asks
JOURNAL_INTERVAL_SECONDS = 0.25
JOURNAL_FLOOD_INTERVAL_SECONDS = 2.0  # between replacing lines: a flood's journal grows slowly
JOURNAL_APPEND_CHARS = 1_000_000  # journaled whole per terminal, however fast it comes
JOURNAL_TAIL_CHARS = 200_000  # past that, unjournaled text beyond this is dropped but for its end
_READ_BYTES = 1 << 16


def _refuse(message: str) -> AcpRpcError:
    return AcpRpcError(INVALID_PARAMS, message)


def _cut_to_limit(buffer: bytearray, limit: int) -> bool:
    """Keep the last ``limit`` bytes of ``buffer``, starting at a character boundary; True if cut."""
    if len(buffer) <= limit:
        return False
    start = len(buffer) - limit
    while start < len(buffer) and buffer[start] & 0xC0 == 0x80:  # a UTF-8 continuation byte
        start += 1
    del buffer[:start]
    return True


@dataclass
class _Terminal:
    terminal_id: str
    process: AgentProcess
    limit: int
    buffer: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    exit_status: dict[str, Any] | None = None
    exited: anyio.Event = field(default_factory=anyio.Event)
    pending: list[str] = field(default_factory=list)  # text not journaled yet
    pending_chars: int = 0
    cut: bool = False  # the start of ``pending`` was dropped: the next line replaces
    journaled: int = 0  # characters journaled so far
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))

    def output(self) -> str:
        return self.buffer.decode("utf-8", "replace")

    def add_pending(self, text: str) -> None:
        """Keep ``text`` for the next journal line; past the whole-journaled budget, a backlog longer
        than the tail keeps only its end (a flood neither fills memory nor the journal)."""
        self.pending.append(text)
        self.pending_chars += len(text)
        room = max(JOURNAL_APPEND_CHARS - self.journaled, JOURNAL_TAIL_CHARS)
        if self.pending_chars > 2 * room:  # twice: the join below runs once per ``room`` of text
            self.cut_pending()

    @property
    def flooding(self) -> bool:
        """Whether the next line would replace: past the budget, more than the tail is waiting."""
        over = self.journaled + self.pending_chars > JOURNAL_APPEND_CHARS
        return self.cut or (over and self.pending_chars > JOURNAL_TAIL_CHARS)

    def cut_pending(self) -> None:
        tail = "".join(self.pending)[-JOURNAL_TAIL_CHARS:]
        self.pending, self.pending_chars, self.cut = [tail], len(tail), True

    def take_line(self) -> tuple[str, bool]:
        """The text of the next journal line, and whether it replaces what came before."""
        if self.flooding:
            self.cut_pending()
        text, replace = "".join(self.pending), self.cut
        self.pending, self.pending_chars, self.cut = [], 0, False
        self.journaled += len(text)
        return text, replace


class TerminalHost:
    """One session's terminals (see the module docstring)."""

    def __init__(
        self,
        *,
        enabled: bool,
        folders: tuple[Path, ...],
        cwd: str,
        max_terminals: int,
        record: Callable[[AgentSessionUpdate], None],
        sandbox: Sandbox | None = None,
    ) -> None:
        self.enabled = enabled
        self._sandbox = sandbox  # a sandboxed agent's terminals: Sandbox.for_terminals (session/core.py)
        self._folders = tuple(folder.resolve() for folder in folders)
        self._cwd = cwd
        self._max = max_terminals
        self._record = record
        self._terminals: dict[str, _Terminal] = {}
        self._tasks = TaskSet()
        self._closed = False

    def __len__(self) -> int:
        return len(self._terminals)

    def pids(self) -> list[int]:
        """The process (group) ids of the terminals alive now (diagnostics, tests)."""
        return [t.process.pid for t in self._terminals.values() if t.process.running]

    # -- requests ---------------------------------------------------------------------------------

    async def create(self, params: Any) -> dict[str, Any]:
        if self._closed:
            raise _refuse("this session is closed: it runs no more terminals")
        if not self.enabled:
            raise _refuse(
                "this session does not run terminals for the agent (terminal = false in the profile)"
            )
        args = params if isinstance(params, dict) else {}
        command = args.get("command")
        if not isinstance(command, str) or not command or "\0" in command:
            raise _refuse("command must be a non-empty string (no shell: the program, then args)")
        raw_args = args.get("args")
        argv = [a for a in raw_args if isinstance(a, str)] if isinstance(raw_args, list) else []
        if any("\0" in a for a in argv):
            raise _refuse("args must not hold NUL")
        if len(self._terminals) >= self._max:
            raise _refuse(
                f"this session has {len(self._terminals)} terminals already (max_terminals in the profile) "
                "— release one first"
            )
        raw_env = args.get("env")
        env: dict[str, str | None] = {}
        for item in raw_env if isinstance(raw_env, list) else []:
            name = item.get("name") if isinstance(item, dict) else None
            if isinstance(name, str) and name and "\0" not in name and "=" not in name:
                value = item.get("value")
                env[name] = value.replace("\0", "") if isinstance(value, str) else ""
        cwd = self._check_cwd(args.get("cwd"))
        limit = args.get("outputByteLimit")
        limit = min(limit, MAX_OUTPUT_BYTES) if type(limit) is int and limit >= 0 else DEFAULT_OUTPUT_BYTES
        try:
            process = await AgentProcess.spawn(
                command, argv, env=env, cwd=cwd, stderr_to_stdout=True, sandbox=self._sandbox
            )
        except AgentSpawnError as exc:
            raise AcpRpcError(-32603, str(exc)) from None  # it names the command (once, shortened)
        terminal = _Terminal(f"term-{uuid.uuid4().hex[:12]}", process, limit)
        self._terminals[terminal.terminal_id] = terminal
        await process.stdin.aclose()  # no input: a command that reads stdin gets EOF
        name = f"silo_nb terminal {terminal.terminal_id}"
        self._tasks.add(asyncio.get_running_loop().create_task(self._pump(terminal), name=name))
        return {"terminalId": terminal.terminal_id}

    def _check_cwd(self, raw: Any) -> str:
        if raw is None:
            return self._cwd
        if not isinstance(raw, str) or not Path(raw).is_absolute() or "\0" in raw:
            raise _refuse("cwd must be an absolute path")
        resolved = Path(raw).resolve()
        if not any(resolved == f or f in resolved.parents for f in self._folders) or not resolved.is_dir():
            allowed = ", ".join(str(f) for f in self._folders)
            raise _refuse(f"cwd {raw} is not a folder inside the session's folders; allowed: {allowed}")
        return str(resolved)

    def _get(self, params: Any) -> _Terminal:
        terminal_id = params.get("terminalId") if isinstance(params, dict) else None
        terminal = self._terminals.get(terminal_id) if isinstance(terminal_id, str) else None
        if terminal is None:
            raise _refuse(f"no terminal {str(terminal_id)[:80]!r} in this session (released, or never made)")
        return terminal

    async def output(self, params: Any) -> dict[str, Any]:
        terminal = self._get(params)
        answer: dict[str, Any] = {"output": terminal.output(), "truncated": terminal.truncated}
        if terminal.exit_status is not None:
            answer["exitStatus"] = dict(terminal.exit_status)
        return answer

    async def wait_for_exit(self, params: Any) -> dict[str, Any]:
        terminal = self._get(params)
        await terminal.exited.wait()  # a $/cancel_request from the agent cancels this wait
        assert terminal.exit_status is not None
        return dict(terminal.exit_status)

    async def kill(self, params: Any) -> dict[str, Any]:
        terminal = self._get(params)
        await terminal.process.terminate(stdin_grace=0)
        return {}

    async def release(self, params: Any) -> dict[str, Any]:
        terminal = self._get(params)
        del self._terminals[terminal.terminal_id]
        # Also when its supervisor has exited: killed by the command, it left orphans to sweep.
        await terminal.process.terminate(stdin_grace=0)
        return {}

    async def close_all(self) -> None:
        """The session is over: every terminal's tree is killed (their last output is journaled)."""
        self._closed = True
        for terminal in list(self._terminals.values()):
            await terminal.process.terminate(stdin_grace=0)
        self._terminals.clear()
        with anyio.move_on_after(5):
            await self._tasks.wait()

    def kill_now(self) -> None:
        """No loop to await on (an interpreter going away): kill every terminal's tree at once."""
        for terminal in self._terminals.values():
            terminal.process.kill_now()

    # -- output -----------------------------------------------------------------------------------

    async def _pump(self, terminal: _Terminal) -> None:
        stream = terminal.process.stdout
        last = anyio.current_time()
        while True:
            try:
                chunk = await stream.receive(_READ_BYTES)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                break
            terminal.buffer += chunk
            terminal.truncated |= _cut_to_limit(terminal.buffer, terminal.limit)
            terminal.add_pending(terminal.decoder.decode(chunk))
            now = anyio.current_time()
            due = JOURNAL_FLOOD_INTERVAL_SECONDS if terminal.flooding else JOURNAL_INTERVAL_SECONDS
            if now - last >= due:
                self._journal(terminal)
                last = now
        code = await terminal.process.wait()
        terminal.add_pending(terminal.decoder.decode(b"", final=True))
        terminal.exit_status = _exit_status(code)
        self._journal(terminal, final=True)
        terminal.exited.set()

    def _journal(self, terminal: _Terminal, *, final: bool = False) -> None:
        text, replace = terminal.take_line()
        if not text and not final:
            return
        raw: dict[str, Any] = {"terminalId": terminal.terminal_id, "output": text}
        if replace:
            raw.update(replace=True, truncated=True)
        elif terminal.truncated:
            raw["truncated"] = True
        if final and terminal.exit_status is not None:
            raw["exitStatus"] = dict(terminal.exit_status)
        self._record(TerminalOutputLine.written(raw))


def _exit_status(code: int | None) -> dict[str, Any]:
    if code is None:
        return {"exitCode": None, "signal": None}
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return {"exitCode": None, "signal": name}
    return {"exitCode": code, "signal": None}
