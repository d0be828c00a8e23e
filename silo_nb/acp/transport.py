"""The transport seam: how an ACP connection reaches its agent, as two byte streams and a lifecycle.

- :class:`Transport` is the one place the wire layer touches I/O. ``JsonRpcConnection`` reads
  ``receive`` and writes ``send`` and asks ``describe_end`` why the peer went away; it never learns
  whether the peer is a process. ``AgentConnection.open`` runs ``transport.run()`` beside the reader for
  the connection's whole life and calls ``aclose`` / ``kill_now`` to end it.
- :class:`SubprocessTransport` is a real agent process (``process.AgentProcess`` keeps the spawning,
  stderr ring and process-group shutdown); ``run`` drains stderr.
- :class:`InProcessTransport` runs an async *agent function* ``agent(stdin, stdout)`` as a task on the
  same loop, joined by two in-memory byte pipes (``pipe.BytePipe``). It behaves like a process from the
  connection's side: the function returning closes its stdout (EOF), an exception becomes its "stderr"
  and exit message, ``aclose`` closes its stdin, waits a short grace, then cancels it. It exists so tests
  (and embedded agents) exercise the real connection code without spawning anything.
- Nothing here knows JSON-RPC or ACP; transports move bytes and report how the peer ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from anyio.abc import ByteReceiveStream, ByteSendStream

from silo_nb.acp.pipe import DEFAULT_PIPE_BUFFER_BYTES, BytePipe, PipeReceiveStream, PipeSendStream
from silo_nb.acp.process import STDERR_LINE_CHARS, STDERR_RING_LINES, AgentProcess
from silo_nb.acp.sandbox import Sandbox

__all__ = ["IN_PROCESS_GRACE_SECONDS", "AgentFn", "InProcessTransport", "SubprocessTransport", "Transport"]

log = logging.getLogger("silo_nb.acp")

# How long an in-process agent gets to return after its stdin closes (and, once cancelled, to unwind)
# before it is abandoned. A subprocess gets process.STDIN_CLOSE_GRACE_SECONDS; a coroutine needs far less.
IN_PROCESS_GRACE_SECONDS = 0.5

AgentFn = Callable[[ByteReceiveStream, ByteSendStream], Awaitable[None]]
"""An in-process agent: ``await agent(stdin, stdout)``; returning is exiting."""


@runtime_checkable
class Transport(Protocol):
    """What a connection needs from its peer: bytes both ways, a lifetime, and how it ended."""

    receive: ByteReceiveStream
    """Peer → us (an agent's stdout)."""
    send: ByteSendStream
    """Us → peer (an agent's stdin)."""
    name: str
    """For logs and task names: ``pid 1234`` / ``in-process <fn name>``."""

    def stderr_tail(self, lines: int = 5) -> list[str]:
        """The last non-blank lines the peer wrote to stderr (for error messages)."""
        ...

    async def run(self) -> None:
        """Background work for the connection's life; returns when there is none left."""
        ...

    async def describe_end(self) -> str:
        """Silo's wording once the peer ended: ``agent exited with code N:\\n<stderr tail>``."""
        ...

    async def aclose(self) -> None:
        """Close our send side, give the peer a grace period, then end it for good. Idempotent."""
        ...

    def kill_now(self) -> None:
        """End the peer at once without awaiting (no running loop needed)."""
        ...


class SubprocessTransport:
    """An agent subprocess behind the :class:`Transport` protocol."""

    def __init__(self, process: AgentProcess) -> None:
        self.process = process
        self.receive: ByteReceiveStream = process.stdout
        self.send: ByteSendStream = process.stdin
        self.name = f"pid {process.pid}"

    @classmethod
    async def spawn(
        cls,
        command: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        sandbox: Sandbox | None = None,
    ) -> SubprocessTransport:
        """Start ``command args`` (see :meth:`AgentProcess.spawn`); raises ``AgentSpawnError``."""
        return cls(await AgentProcess.spawn(command, args, env=env, cwd=cwd, sandbox=sandbox))

    def stderr_tail(self, lines: int = 5) -> list[str]:
        return self.process.stderr_tail(lines)

    async def run(self) -> None:
        await self.process.drain_stderr()

    async def describe_end(self) -> str:
        return await self.process.describe_exit()

    async def aclose(self) -> None:
        await self.process.terminate()

    def kill_now(self) -> None:
        self.process.kill_now()


class InProcessTransport:
    """Run ``agent(stdin, stdout)`` as a task on the current loop, joined to us by byte pipes.

    The task starts with :meth:`run` (``AgentConnection.open`` calls it) and is a separate task, so
    cancelling ``run`` does not cancel the agent; only :meth:`aclose` and :meth:`kill_now` do.
    """

    def __init__(
        self,
        agent: AgentFn,
        *,
        name: str | None = None,
        grace: float = IN_PROCESS_GRACE_SECONDS,
        max_buffer_bytes: int = DEFAULT_PIPE_BUFFER_BYTES,
    ) -> None:
        self._agent = agent
        label = name or getattr(agent, "__name__", None) or type(agent).__name__
        self.name = f"in-process {label}"
        self.grace = grace
        to_agent = BytePipe(max_buffer_bytes)
        from_agent = BytePipe(max_buffer_bytes)
        self._agent_stdin: PipeReceiveStream = to_agent.receive_stream
        self._agent_stdout: PipeSendStream = from_agent.send_stream
        self._our_send: PipeSendStream = to_agent.send_stream
        self._our_receive: PipeReceiveStream = from_agent.receive_stream
        # Typed as the protocol's (mutable, hence invariant) attributes so this class is a Transport.
        self.send: ByteSendStream = self._our_send
        self.receive: ByteReceiveStream = self._our_receive
        self._stderr: deque[str] = deque(maxlen=STDERR_RING_LINES)
        self._error: str | None = None  # the exception's one-line summary, if the agent raised
        self._exit_code: int | None = None  # set when the agent function returned (0) or exited
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The agent's task, once :meth:`run` has started it."""
        return self._task

    @property
    def finished(self) -> bool:
        """True once the agent function has returned, raised or been cancelled."""
        return self._task is not None and self._task.done()

    def stderr_tail(self, lines: int = 5) -> list[str]:
        tail = list(self._stderr)
        return tail[-lines:] if lines > 0 else []

    def _start(self) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run_agent(), name=f"silo_nb {self.name}"
            )
        return self._task

    async def _run_agent(self) -> None:
        try:
            await self._agent(self._agent_stdin, self._agent_stdout)
        except SystemExit as exc:
            # sys.exit() / argparse in an agent function: a process exit, not the end of the caller's loop.
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                self._stderr.append(exc.code[:STDERR_LINE_CHARS])
            self._exit_code = code
        except Exception as exc:
            # A broken agent is reported like a crashed process; it must never take the caller down.
            self._error = _summary(exc)
            self._stderr.append(self._error[:STDERR_LINE_CHARS])
            log.warning("%s failed", self.name, exc_info=True)
        else:
            self._exit_code = 0
        finally:
            # Like a process exiting: its stdout ends (our reader sees EOF), its stdin stops reading.
            self._agent_stdout.close()
            self._agent_stdin.close()

    async def run(self) -> None:
        """Start the agent (once) and return when it has finished."""
        if self._closing:
            return
        task = self._start()
        # asyncio.wait does not cancel the task when this waiter is cancelled.
        await asyncio.wait({task})

    async def describe_end(self) -> str:
        task = self._task
        if task is not None and not task.done():
            # The agent closed its stdout but is still running: give it the grace to finish.
            await asyncio.wait({task}, timeout=self.grace)
        if self._error is not None:
            return f"agent exited with an error:\n{self._error}"
        if self._exit_code is not None:
            tail = self.stderr_tail()
            return f"agent exited with code {self._exit_code}" + (":\n" + "\n".join(tail) if tail else "")
        return "ACP connection closed"

    async def aclose(self) -> None:
        """Close the agent's stdin, wait up to ``grace`` for it to return, then cancel it."""
        self._closing = True
        self._our_send.close()
        task = self._task
        try:
            if task is not None and not task.done():
                await asyncio.wait({task}, timeout=self.grace)
        finally:
            # Nested so that an aclose cancelled mid-way still cancels the agent and closes our end.
            try:
                if task is not None and not task.done():
                    task.cancel()
                    await _wait_quietly(task, self.grace)
            finally:
                self._our_receive.close()

    def kill_now(self) -> None:
        self._closing = True
        self._our_send.close()
        self._our_receive.close()
        if self._task is not None and not self._task.done():
            with contextlib.suppress(RuntimeError):  # the loop is already closed: nothing left to cancel
                self._task.cancel()


async def _wait_quietly(task: asyncio.Task[None], timeout: float) -> None:
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        log.warning("in-process agent %s did not stop after being cancelled", task.get_name())
        return
    with contextlib.suppress(asyncio.CancelledError):
        task.result()  # retrieve it, so asyncio does not log "exception was never retrieved"


def _summary(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
