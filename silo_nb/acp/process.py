"""The agent subprocess: spawn, stderr ring, and a shutdown that leaves nothing behind.

- ``transport.SubprocessTransport`` puts an :class:`AgentProcess` behind the connection's transport
  seam; everything about real processes (signals, groups, exit codes) stays in this module.

- No shell: the profile's command is resolved with :func:`shutil.which` (against the child's own
  ``PATH``) and exec'd with an argv list.
- The child gets the kernel's full environment with the profile's ``env`` laid over it (agents need
  their API keys, proxies and XDG dirs; a trimmed environment loses them).
- The agent runs under ``supervisor.py`` (a small stdlib-only process, see its docstring): it leads its
  own process group, so shutdown can reach grandchildren such as the ``node`` an ``npx`` wrapper starts,
  and the supervisor (a child subreaper) kills the whole tree — also ``setsid()`` descendants — when the
  agent exits, when told to stop, or when the kernel dies (the lifeline socket closes; stdin EOF is not
  enough: some agents ignore it). ``pid`` is the agent's, and the supervisor exits as the agent did, so
  callers see the agent's exit code. The supervisor is two processes, so an agent that kills the one
  above it is still swept; every process of the tree carries ``SILO_NB_PROCESS_TREE=<token>`` in its
  environment, and a supervisor found SIGKILLed at :meth:`AgentProcess.terminate` (the tree may have
  killed both) has the processes still carrying it killed.
- stderr is drained continuously into a bounded ring (a full pipe would block the agent); its tail goes
  into error messages.
- Shutdown: close stdin → wait → SIGTERM the group → wait → SIGKILL the group and close the lifeline
  (the supervisor sweeps what is left) → wait for the supervisor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import uuid
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from silo_nb.acp.excerpt import error_excerpt
from silo_nb.acp.sandbox import Sandbox
from silo_nb.acp.supervisor import marked

__all__ = ["AgentProcess", "AgentSpawnError", "kill_all_agent_groups"]

log = logging.getLogger("silo_nb.acp")

STDERR_RING_LINES = 200
STDERR_LINE_CHARS = 2000
TERM_GRACE_SECONDS = 2.0
STDIN_CLOSE_GRACE_SECONDS = 2.0
SWEEP_GRACE_SECONDS = 1.0  # the supervisor's SIGTERM → SIGKILL grace for leftovers of an exited agent
SUPERVISOR_START_TIMEOUT = 10.0
TREE_MARKER = "SILO_NB_PROCESS_TREE"  # in the environment of every process of one agent's tree
MARKED_SWEEP_ROUNDS = 10
COMMAND_SHOWN_CHARS = 200  # of a command named in an error (an agent may send megabytes)
SUPERVISOR = str(Path(__file__).resolve().parent / "supervisor.py")

_LIVE: weakref.WeakSet[AgentProcess] = weakref.WeakSet()


class AgentSpawnError(Exception):
    """The agent's command could not be started at all (not found, not executable)."""


class AgentProcess:
    """A running agent. Create with :meth:`spawn` inside the event loop."""

    def __init__(
        self,
        process: Process,
        argv: Sequence[str],
        pid: int,
        lifeline: socket.socket | None = None,
        marker: str | None = None,
    ) -> None:
        self._process = process
        self.argv = tuple(argv)
        self.pid = pid
        """The agent's own pid (it leads its process group)."""
        self.supervisor_pid = process.pid
        self._lifeline = lifeline  # closing it tells the supervisor to kill the whole tree
        self._marker = marker  # TREE_MARKER's value in the tree's environment
        self._stderr_lines: deque[str] = deque(maxlen=STDERR_RING_LINES)
        self._stderr_partial = ""
        self._closing = False
        _LIVE.add(self)

    @classmethod
    async def spawn(
        cls,
        command: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        stderr_to_stdout: bool = False,
        sandbox: Sandbox | None = None,
    ) -> AgentProcess:
        """Start ``command`` under the supervisor; ``stderr_to_stdout``: one stream of both (a client
        terminal's output), else stderr goes to the ring (:meth:`drain_stderr`). ``sandbox``: the command
        runs inside it (``sandbox.py``), the supervisor outside (it must see and kill the whole tree)."""
        child_env = dict(os.environ)
        for name, value in (env or {}).items():  # None: not inherited (a profile's unset_env)
            if value is None:
                child_env.pop(name, None)
            else:
                child_env[name] = value
        search = sandbox.search_path(child_env) if sandbox is not None else child_env.get("PATH")
        resolved = shutil.which(command, path=search)
        shown = _shown(command)
        if resolved is None:
            raise AgentSpawnError(
                f'command "{shown}" was not found on PATH — install it or fix the profile\'s command'
            )
        argv = [resolved, *args]
        # The supervisor starts what ``wrapped`` says; ``argv`` stays what the agent is (errors, repr).
        wrapped = sandbox.wrap(argv, env=child_env, cwd=cwd) if sandbox is not None else argv
        marker = child_env[TREE_MARKER] = uuid.uuid4().hex
        ours, theirs = socket.socketpair()
        try:
            process = await anyio.open_process(
                [*_supervisor_argv(theirs.fileno()), "--", *wrapped],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if stderr_to_stdout else subprocess.PIPE,
                cwd=cwd,
                env=child_env,
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
            )
        except OSError as exc:
            ours.close()
            raise AgentSpawnError(f'could not run "{shown}": {exc.strerror or exc}') from exc
        except BaseException:  # cancelled while starting: nothing is left to the garbage collector
            ours.close()
            raise
        finally:
            theirs.close()
        try:
            pid = await _read_agent_pid(ours, process)
        except BaseException as exc:
            if not isinstance(exc, AgentSpawnError):
                await _abandon_spawn(ours, process)  # cancelled mid-way
                raise
            ours.close()
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with anyio.move_on_after(TERM_GRACE_SECONDS):
                await process.aclose()
            raise AgentSpawnError(f'could not run "{shown}": {exc}') from None
        return cls(process, argv, pid, ours, marker)

    # -- streams ----------------------------------------------------------------------------------

    @property
    def stdout(self) -> ByteReceiveStream:
        assert self._process.stdout is not None
        return self._process.stdout

    @property
    def stdin(self) -> ByteSendStream:
        assert self._process.stdin is not None
        return self._process.stdin

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    @property
    def running(self) -> bool:
        """Whether the supervisor (and so possibly some of the tree) is still there."""
        return self._process.returncode is None

    # -- stderr -----------------------------------------------------------------------------------

    async def drain_stderr(self) -> None:
        """Read stderr until it closes, keeping the last lines. Run this as a task for the whole life."""
        stream = self._process.stderr
        if stream is None:
            return
        while True:
            try:
                chunk = await stream.receive(1 << 16)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                break
            self._add_stderr(chunk.decode("utf-8", "replace"))
        if self._stderr_partial:
            self._stderr_lines.append(self._stderr_partial[:STDERR_LINE_CHARS])
            self._stderr_partial = ""

    def _add_stderr(self, text: str) -> None:
        text = self._stderr_partial + text
        *lines, self._stderr_partial = text.split("\n")
        for raw_line in lines:
            line = raw_line.rstrip("\r")
            if line.strip():
                self._stderr_lines.append(line[:STDERR_LINE_CHARS])
        if len(self._stderr_partial) > STDERR_LINE_CHARS * 4:
            self._stderr_lines.append(self._stderr_partial[:STDERR_LINE_CHARS])
            self._stderr_partial = ""

    def stderr_tail(self, lines: int = 5) -> list[str]:
        tail = list(self._stderr_lines)
        if self._stderr_partial.strip():
            tail.append(self._stderr_partial[:STDERR_LINE_CHARS])
        return tail[-lines:] if lines > 0 else []

    # -- exit -------------------------------------------------------------------------------------

    async def wait(self, timeout: float | None = None) -> int | None:
        """The exit code, or ``None`` if the process is still running after ``timeout`` seconds."""
        with anyio.move_on_after(timeout):
            return await self._process.wait()
        return self._process.returncode

    async def describe_exit(self) -> str:
        """Silo's wording for a closed connection: ``agent exited with code N:\\n<stderr lines>``, the lines
        that state the cause (``excerpt.error_excerpt``) rather than the last backtrace frames."""
        code = await self.wait(2.0)
        if code is None:
            return "ACP connection closed"
        message = f"agent exited with code {code}"
        tail = error_excerpt(self.stderr_tail(STDERR_RING_LINES))
        return message + (":\n" + "\n".join(tail) if tail else "")

    async def terminate(self, stdin_grace: float = STDIN_CLOSE_GRACE_SECONDS) -> None:
        """Close stdin, then SIGTERM and finally SIGKILL the whole tree. Idempotent. ``stdin_grace``: how
        long the process may take to exit on its own once stdin is closed (agents often do)."""
        self._closing = True
        with contextlib.suppress(Exception):
            await self.stdin.aclose()
        await self.wait(stdin_grace)
        if self._group_alive():
            self._signal_group(signal.SIGTERM)
            with anyio.move_on_after(TERM_GRACE_SECONDS):
                while self._group_alive():  # noqa: ASYNC110 - grandchildren have no exit event to await
                    await anyio.sleep(0.05)
        if self._group_alive():
            self._signal_group(signal.SIGKILL)
        self._close_lifeline()  # the supervisor sweeps setsid descendants, then exits as the agent did
        if await self.wait(TERM_GRACE_SECONDS + SWEEP_GRACE_SECONDS + 1.0) is None:
            log.warning("supervisor %d of agent %d did not exit; killing it", self.supervisor_pid, self.pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.supervisor_pid, signal.SIGKILL)
            await self.wait(TERM_GRACE_SECONDS)
        with anyio.move_on_after(TERM_GRACE_SECONDS):
            await self._process.aclose()  # its pipes too (one nobody read to its end stays open otherwise)
        if self._process.returncode == -signal.SIGKILL:
            self._sweep_marked()
        _LIVE.discard(self)

    def _sweep_marked(self) -> None:
        """The supervisor was SIGKILLed (or its agent): if the tree killed both supervisor processes,
        nothing swept its orphans (re-parented to init), so every process still carrying this tree's
        marker is killed here. One that cleared its environment escapes this last net."""
        if self._marker is None:
            return
        assignment = f"{TREE_MARKER}={self._marker}".encode()
        for _ in range(MARKED_SWEEP_ROUNDS):  # one may fork while we kill: again until none is left
            left = marked(assignment)
            if not left:
                return
            log.warning("killing %d process(es) of agent %d's tree that outlived it", len(left), self.pid)
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def kill_now(self) -> None:
        """SIGKILL the group and tell the supervisor to kill the rest, without awaiting (no loop needed)."""
        self._closing = True
        self._signal_group(signal.SIGKILL)
        self._close_lifeline()
        _LIVE.discard(self)

    def _close_lifeline(self) -> None:
        if self._lifeline is not None:
            self._lifeline.close()
            self._lifeline = None

    def _group_alive(self) -> bool:
        """Whether the supervisor, or any running member of the agent's group, is left."""
        # Once the supervisor has exited it has swept the agent's tree, and the agent's pid (reaped by the
        # supervisor) may already belong to an unrelated process: never signal or count it after that.
        return self._process.returncode is None

    def _signal_group(self, sig: signal.Signals) -> None:
        if self._process.returncode is not None:
            return  # the supervisor is gone: the group is gone with it, and the pid may be reused
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        log.debug("sent %s to agent group %d", sig.name, self.pid)


async def _abandon_spawn(lifeline: socket.socket, process: Process) -> None:
    """A spawn cancelled before the agent's pid came back: the closed lifeline makes the supervisor kill
    whatever it started and exit; it is waited for (shielded: the caller is being cancelled) and its
    pipes closed, so no process, socket or transport is left to the garbage collector."""
    lifeline.close()
    with anyio.CancelScope(shield=True):
        with anyio.move_on_after(SWEEP_GRACE_SECONDS + 1.0):
            await process.wait()
        if process.returncode is None:
            log.warning("supervisor %d of a cancelled spawn did not exit; killing it", process.pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        with anyio.move_on_after(TERM_GRACE_SECONDS):
            await process.aclose()


def _shown(command: str) -> str:
    """``command`` as an error names it: one line, its start when it is long."""
    line = command.replace("\n", " ").replace("\r", " ")
    return line if len(line) <= COMMAND_SHOWN_CHARS else line[:COMMAND_SHOWN_CHARS] + "…"


def _supervisor_argv(lifeline_fd: int) -> list[str]:
    # -I -S: no site, no user paths, no PYTHON* variables: a fast, predictable start (stdlib only).
    grace = str(SWEEP_GRACE_SECONDS)
    return [sys.executable, "-I", "-S", SUPERVISOR, "--lifeline", str(lifeline_fd), "--grace", grace]


async def _read_agent_pid(lifeline: socket.socket, process: Process) -> int:
    """The supervisor's report on the lifeline: the agent's pid, or why it could not start it."""
    lifeline.setblocking(False)
    loop = asyncio.get_running_loop()
    buffer = b""
    with anyio.move_on_after(SUPERVISOR_START_TIMEOUT):
        while True:
            line, newline, rest = buffer.partition(b"\n")
            if not newline:
                chunk = await loop.sock_recv(lifeline, 4096)
                if not chunk:
                    code = await process.wait()
                    raise AgentSpawnError(
                        f"the agent's supervisor exited with code {code} before starting it"
                    )
                buffer += chunk
                continue
            buffer = rest
            kind, _, text = line.decode("utf-8", "replace").partition(" ")
            if kind == "pid":
                return int(text)
            if kind == "error":
                raise AgentSpawnError(text.partition(" ")[2])  # "error ERRNO STRERROR"
            log.warning("agent supervisor: %s", text)
    raise AgentSpawnError(f"the agent's supervisor did not start it within {SUPERVISOR_START_TIMEOUT:g} s")


def kill_all_agent_groups() -> None:
    """Last resort at interpreter exit: no agent outlives the kernel."""
    for process in list(_LIVE):
        process.kill_now()
