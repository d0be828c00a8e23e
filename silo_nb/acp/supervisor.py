"""The agent's supervisor: a tiny process between the kernel and the agent so nothing outlives the kernel.

Run as ``python -I -S path/to/supervisor.py --lifeline FD [--grace S] -- <agent argv>`` (what
``process.AgentProcess.spawn`` does: the file by path, since ``-m silo_nb.acp.supervisor`` works too but
imports the whole ``silo_nb`` package first). Standard library only, for a fast start.

- It becomes a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux): every descendant of the agent
  that is orphaned — also one that called ``setsid()`` and left the agent's process group — is
  re-parented to it, so it can find (``/proc``) and kill them. Without prctl it degrades to the agent's
  process group and says so.
- The agent inherits stdin/stdout/stderr (the kernel's pipes and stderr ring work as before) and leads
  its own session and group. The supervisor then points its own fds 0-2 at ``/dev/null``, so EOF on
  the agent's stdout still means "the agent (and whoever shares its stdout) is gone".
- The lifeline is one end of a socket pair whose other end only the kernel holds (close-on-exec, so no
  other child inherits it). The supervisor reports ``pid N`` (or ``error ERRNO STRERROR`` when the
  agent cannot be exec'd, and ``log TEXT`` lines before either) on it; the kernel never writes. EOF —
  the kernel died, or closed it to say "stop" — kills the whole tree: SIGTERM, a short grace, SIGKILL.
- When the agent exits, leftover descendants get the same treatment, then the supervisor exits with
  the agent's status (killed by signal N → it kills itself with N), so the kernel sees the agent's code.
- SIGTERM / SIGINT / SIGHUP sent to the supervisor are forwarded to the agent's process group.
- Nothing is written to stderr: that is the agent's, and its tail goes into the kernel's error messages.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import socket
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
DEFAULT_GRACE_SECONDS = 1.0
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _prctl(option: int, value: int) -> str | None:
    """Call ``prctl``; ``None`` on success, else why it failed."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(option, value, 0, 0, 0) != 0:
            return os.strerror(ctypes.get_errno())
    except (OSError, AttributeError) as exc:  # no libc / no prctl (not Linux)
        return str(exc)
    return None


def _die_with_parent() -> None:
    """In the agent, before exec: SIGKILL if the supervisor itself is killed (its last line of defence)."""
    parent = os.getppid()
    if _prctl(PR_SET_PDEATHSIG, signal.SIGKILL) is None and os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)  # the supervisor died before prctl took effect


def process_table() -> list[tuple[int, bytes, int, int]] | None:
    """``(pid, state, ppid, pgrp)`` of every process, from ``/proc``; ``None`` without it."""
    try:
        names = [entry.name for entry in os.scandir("/proc") if entry.name.isdigit()]
    except OSError:
        return None
    table: list[tuple[int, bytes, int, int]] = []
    for name in names:
        try:
            with open(f"/proc/{name}/stat", "rb") as stat_file:
                stat = stat_file.read()
        except OSError:
            continue  # exited while we looked
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after the last ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2:
            table.append((int(name), fields[0], int(fields[1]), int(fields[2])))
    return table


def descendants() -> list[int]:
    """Running (non-zombie) descendants of this process, from ``/proc``."""
    children: dict[int, list[int]] = {}
    for pid, state, ppid, _pgrp in process_table() or []:
        if state not in (b"Z", b"X"):
            children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    stack = [os.getpid()]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


class Supervisor:
    def __init__(self, argv: list[str], lifeline: socket.socket | None, grace: float) -> None:
        self.argv = argv
        self.lifeline = lifeline
        self.grace = grace
        self.agent_pid = 0
        self.agent_status: int | None = None  # as os.waitstatus_to_exitcode: -N for signal N
        self.pending: list[int] = []
        self.wake_read = -1  # the signal wakeup pipe: readable when a child exits (SIGCHLD)

    def pause(self, seconds: float) -> None:
        """Wait up to ``seconds``, returning early when a child exits (not a process, just this one)."""
        if self.wake_read < 0:
            select.select([], [], [], seconds)
            return
        select.select([self.wake_read], [], [], seconds)
        with contextlib.suppress(OSError):
            os.read(self.wake_read, 4096)

    def report(self, line: str) -> None:
        if self.lifeline is not None:
            with contextlib.suppress(OSError):
                self.lifeline.sendall(line.encode("utf-8", "replace") + b"\n")

    def reap(self) -> None:
        """Collect every exited child (the agent, and orphans adopted as subreaper)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.agent_pid:
                self.agent_status = os.waitstatus_to_exitcode(status)

    def signal_tree(self, sig: int) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.agent_pid, sig)
        for pid in descendants():
            with contextlib.suppress(OSError):
                os.kill(pid, sig)

    def kill_tree(self) -> None:
        """SIGTERM the agent's group and every descendant, wait out the grace, then SIGKILL the rest."""
        self.signal_tree(signal.SIGTERM)
        self.signal_tree(signal.SIGCONT)  # a stopped process acts on SIGTERM only once continued
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            self.reap()
            if not descendants():
                return
            self.pause(0.02)
        for _ in range(50):  # a process may fork while we kill: repeat until none is left
            self.signal_tree(signal.SIGKILL)
            self.pause(0.005)
            self.reap()
            if not descendants():
                return

    def run(self) -> int:
        problem = _prctl(PR_SET_CHILD_SUBREAPER, 1)
        if problem is not None:
            self.report(
                f"log PR_SET_CHILD_SUBREAPER unavailable ({problem}): descendants of the agent "
                "that leave its process group may outlive it"
            )
        wake_read, wake_write = os.pipe()
        self.wake_read = wake_read
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda _sig, _frame: None)  # only to wake the select
        for sig in FORWARDED:
            signal.signal(sig, lambda sig, _frame: self.pending.append(sig))
        try:
            agent = subprocess.Popen(self.argv, start_new_session=True, preexec_fn=_die_with_parent)  # noqa: PLW1509 - one thread
        except OSError as exc:
            self.report(f"error {exc.errno or 0} {exc.strerror or exc}")
            return 127
        self.agent_pid = agent.pid
        self.report(f"pid {agent.pid}")
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        watched = [wake_read] + ([self.lifeline] if self.lifeline is not None else [])
        while self.agent_status is None:
            ready, _, _ = select.select(watched, [], [], 1.0)
            with contextlib.suppress(OSError):
                os.read(wake_read, 4096)
            while self.pending:
                with contextlib.suppress(OSError):
                    os.killpg(self.agent_pid, self.pending.pop(0))
            self.reap()
            if self.lifeline is not None and self.lifeline in ready:
                try:
                    data = self.lifeline.recv(4096)
                except OSError:
                    data = b""
                if not data:  # the kernel is gone, or closed its end: stop everything
                    self.kill_tree()
                    self.reap()
                    self.lifeline.close()
                    self.lifeline = None
                    watched = [wake_read]
        agent.returncode = self.agent_status  # reaped by us, not by Popen
        self.kill_tree()  # leftovers of an agent that exited on its own
        return self.agent_status


def exit_like(status: int) -> None:
    """Exit as the agent did: with its code, or killed by the same signal."""
    if status < 0:
        with contextlib.suppress(OSError, ValueError):
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file of the supervisor
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP have no handler to reset
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        status = 128 - status
    sys.exit(status)


def main(args: list[str]) -> None:
    if "--" not in args or args.index("--") == len(args) - 1:
        sys.exit("usage: supervisor.py [--lifeline FD] [--grace SECONDS] -- AGENT [ARG...]")
    split = args.index("--")
    options, argv = args[:split], args[split + 1 :]
    lifeline = None
    grace = DEFAULT_GRACE_SECONDS
    for name, value in zip(options[::2], options[1::2], strict=True):
        if name == "--lifeline":
            lifeline = socket.socket(fileno=int(value))
            lifeline.setblocking(True)
        elif name == "--grace":
            grace = float(value)
        else:
            sys.exit(f"supervisor.py: unknown option {name}")
    exit_like(Supervisor(argv, lifeline, grace).run())


if __name__ == "__main__":
    main(sys.argv[1:])
