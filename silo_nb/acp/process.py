"""The agent subprocess: spawn, stderr ring, and a shutdown that leaves nothing behind.

- ``transport.SubprocessTransport`` puts an :class:`AgentProcess` behind the connection's transport
  seam; everything about real processes (signals, groups, exit codes) stays in this module.

- No shell: the profile's command is resolved with :func:`shutil.which` (against the child's own
  ``PATH``) and exec'd with an argv list.
- The child gets the kernel's full environment with the profile's ``env`` laid over it (agents need
  their API keys, proxies and XDG dirs; a trimmed environment loses them).
- The child leads its own process group (``start_new_session``), so shutdown can reach grandchildren
  such as the ``node`` an ``npx`` wrapper starts.
- stderr is drained continuously into a bounded ring (a full pipe would block the agent); its tail goes
  into error messages.
- Shutdown: close stdin → wait → SIGTERM the group → wait → SIGKILL the group.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import weakref
from collections import deque
from collections.abc import Mapping, Sequence

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

__all__ = ["AgentProcess", "AgentSpawnError", "kill_all_agent_groups"]

log = logging.getLogger("silo_nb.acp")

STDERR_RING_LINES = 200
STDERR_LINE_CHARS = 2000
TERM_GRACE_SECONDS = 2.0
STDIN_CLOSE_GRACE_SECONDS = 2.0

_LIVE: weakref.WeakSet[AgentProcess] = weakref.WeakSet()


class AgentSpawnError(Exception):
    """The agent's command could not be started at all (not found, not executable)."""


class AgentProcess:
    """A running agent. Create with :meth:`spawn` inside the event loop."""

    def __init__(self, process: Process, argv: Sequence[str]) -> None:
        self._process = process
        self.argv = tuple(argv)
        self.pid = process.pid
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
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> AgentProcess:
        child_env = dict(os.environ)
        child_env.update(env or {})
        resolved = shutil.which(command, path=child_env.get("PATH"))
        if resolved is None:
            raise AgentSpawnError(
                f'command "{command}" was not found on PATH — install it or fix the profile\'s command'
            )
        argv = [resolved, *args]
        try:
            process = await anyio.open_process(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=child_env,
                start_new_session=True,
            )
        except OSError as exc:
            raise AgentSpawnError(f'could not run "{command}": {exc.strerror or exc}') from exc
        return cls(process, argv)

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
        """Silo's wording for a closed connection: ``agent exited with code N:\\n<stderr tail>``."""
        code = await self.wait(2.0)
        if code is None:
            return "ACP connection closed"
        message = f"agent exited with code {code}"
        tail = self.stderr_tail()
        return message + (":\n" + "\n".join(tail) if tail else "")

    async def terminate(self) -> None:
        """Close stdin, then SIGTERM and finally SIGKILL the whole group. Idempotent."""
        self._closing = True
        with contextlib.suppress(Exception):
            await self.stdin.aclose()
        await self.wait(STDIN_CLOSE_GRACE_SECONDS)
        if self._group_alive():
            self._signal_group(signal.SIGTERM)
            with anyio.move_on_after(TERM_GRACE_SECONDS):
                while self._group_alive():  # noqa: ASYNC110 - grandchildren have no exit event to await
                    await anyio.sleep(0.05)
        if self._group_alive():
            self._signal_group(signal.SIGKILL)
        await self.wait(TERM_GRACE_SECONDS)
        _LIVE.discard(self)

    def kill_now(self) -> None:
        """SIGKILL the group at once, without awaiting (interpreter exit, no running loop)."""
        self._closing = True
        self._signal_group(signal.SIGKILL)
        _LIVE.discard(self)

    def _group_alive(self) -> bool:
        if self._process.returncode is None:
            return True
        try:
            os.killpg(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        # killpg also finds zombies: an orphaned grandchild we signalled stays one until init reaps it,
        # which can take seconds. A zombie holds nothing and cannot be killed, so only running members
        # count (where /proc tells us; elsewhere any member does).
        running = _running_group_members(self.pid)
        return running is None or running > 0

    def _signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        log.debug("sent %s to agent group %d", sig.name, self.pid)


def _running_group_members(pgid: int) -> int | None:
    """How many processes of group ``pgid`` are not zombies, from ``/proc``; ``None`` without it."""
    try:
        entries = [entry.name for entry in os.scandir("/proc") if entry.name.isdigit()]
    except OSError:
        return None
    running = 0
    for name in entries:
        try:
            with open(f"/proc/{name}/stat", "rb") as stat_file:
                stat = stat_file.read()
        except OSError:
            continue  # exited while we looked
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after the last ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            running += 1
    return running


def kill_all_agent_groups() -> None:
    """Last resort at interpreter exit: no agent outlives the kernel."""
    for process in list(_LIVE):
        process.kill_now()
