"""The agent's supervisor: a tiny process between the kernel and the agent so nothing outlives the kernel.

Run as ``python -I -S path/to/supervisor.py --lifeline FD [--grace S] -- <agent argv>`` (what
``process.AgentProcess.spawn`` does: the file by path, since ``-m silo_nb.acp.supervisor`` works too but
imports the whole ``silo_nb`` package first). Standard library only, for a fast start.

- Two processes, both child subreapers (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux): the outer one (what
  the kernel starts) forks the inner one, which starts the agent. Every orphaned descendant of the agent
  — also one that called ``setsid()`` and left the agent's process group — is re-parented to the nearest
  of them still alive, which finds it (``/proc``) and kills it. So an agent (or a terminal's command)
  that SIGKILLs the process above it does not escape: if it kills the inner one, the outer one adopts
  the tree and sweeps it at once; if it kills the outer one, the inner one sees its pipe from the outer
  one close and sweeps. (Killing both at once leaves orphans to init: ``process.AgentProcess`` then
  finds them by the marker in their environment.) Without prctl it degrades to the agent's process
  group and says so.
- The agent inherits stdin/stdout/stderr (the kernel's pipes and stderr ring work as before) and leads
  its own session and group. Both supervisor processes then point their own fds 0-2 at ``/dev/null``,
  so EOF on the agent's stdout still means "the agent (and whoever shares its stdout) is gone".
- The lifeline is one end of a socket pair whose other end only the kernel holds (close-on-exec, so no
  other child inherits it). The supervisor reports ``pid N`` (or ``error ERRNO STRERROR`` when the
  agent cannot be exec'd, and ``log TEXT`` lines before either) on it; the kernel never writes. EOF —
  the kernel died, or closed it to say "stop" — kills the whole tree: SIGTERM, a short grace, SIGKILL.
- When the agent exits, leftover descendants get the same treatment, then the supervisor exits with
  the agent's status (killed by signal N → it kills itself with N), so the kernel sees the agent's code.
  The outer one exits as the inner one did, after sweeping again.
- SIGTERM / SIGINT / SIGHUP sent to the supervisor are forwarded (through the inner one) to the agent's
  process group.
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
Stream = socket.socket | int  # what the loops wait on: the lifeline, a pipe's fd


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


def marked(assignment: bytes) -> list[int]:
    """Running processes (but this one) whose environment holds ``assignment`` (``NAME=VALUE``)."""
    found: list[int] = []
    for pid, state, _ppid, _pgrp in process_table() or []:
        if pid == os.getpid() or state in (b"Z", b"X"):
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ_file:
                environ = environ_file.read()
        except OSError:
            continue  # exited, or not ours to read (so not ours to kill)
        if assignment in environ.split(b"\0"):
            found.append(pid)
    return found


class Tree:
    """The descendants of this process: a child subreaper, so every one of them is re-parented to it."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.child_pid = 0  # the one child whose exit ends ``run``
        self.child_status: int | None = None  # as os.waitstatus_to_exitcode: -N for signal N
        self.group = 0  # a process group to signal with the descendants (0: none)
        self.pending: list[int] = []  # signals received, to pass on
        self.wake_read = -1  # the signal wakeup pipe: readable when a child exits (SIGCHLD)

    def watch_signals(self) -> None:
        wake_read, wake_write = os.pipe()
        self.wake_read = wake_read
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda _sig, _frame: None)  # only to wake the select
        for sig in FORWARDED:
            signal.signal(sig, lambda sig, _frame: self.pending.append(sig))

    def wait_for(self, watched: list[Stream], seconds: float) -> list[Stream]:
        """Wait up to ``seconds`` for one of ``watched`` (or a signal); the ready ones."""
        ready, _, _ = select.select([self.wake_read, *watched], [], [], seconds)
        with contextlib.suppress(OSError):
            os.read(self.wake_read, 4096)
        return ready

    def reap(self) -> None:
        """Collect every exited child (ours, and orphans adopted as subreaper)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child_pid:
                self.child_status = os.waitstatus_to_exitcode(status)

    def signal_tree(self, sig: int) -> None:
        if self.group > 0:
            with contextlib.suppress(OSError):
                os.killpg(self.group, sig)
        for pid in descendants():
            with contextlib.suppress(OSError):
                os.kill(pid, sig)

    def kill_tree(self) -> None:
        """SIGTERM the group and every descendant, wait out the grace, then SIGKILL the rest."""
        self.signal_tree(signal.SIGTERM)
        self.signal_tree(signal.SIGCONT)  # a stopped process acts on SIGTERM only once continued
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            self.reap()
            if not descendants():
                return
            self.wait_for([], 0.02)
        for _ in range(50):  # a process may fork while we kill: repeat until none is left
            self.signal_tree(signal.SIGKILL)
            self.wait_for([], 0.005)
            self.reap()
            if not descendants():
                return


def report(lifeline: socket.socket | None, line: str) -> None:
    if lifeline is not None:
        with contextlib.suppress(OSError):
            lifeline.sendall(line.encode("utf-8", "replace") + b"\n")


def closed(stream: Stream) -> bool:
    """Whether ``stream`` (ready to read) is at EOF: the other end is gone. Nobody writes to it."""
    try:
        data = stream.recv(4096) if isinstance(stream, socket.socket) else os.read(stream, 4096)
    except OSError:
        return True
    return not data


class Supervisor(Tree):
    """The inner process: starts the agent and sweeps its tree (see the module docstring)."""

    def __init__(self, argv: list[str], lifeline: socket.socket | None, grace: float, parent: int) -> None:
        super().__init__(grace)
        self.argv = argv
        self.lifeline = lifeline
        self.parent = parent  # the outer process's pipe: EOF when it is gone

    def run(self) -> int:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)  # the outer process has said so if it cannot
        self.watch_signals()
        try:
            agent = subprocess.Popen(self.argv, start_new_session=True, preexec_fn=_die_with_parent)  # noqa: PLW1509 - one thread
        except OSError as exc:
            report(self.lifeline, f"error {exc.errno or 0} {exc.strerror or exc}")
            return 127
        self.child_pid = self.group = agent.pid
        report(self.lifeline, f"pid {agent.pid}")
        _drop_stdio()
        watched: list[Stream] = [self.parent] + ([self.lifeline] if self.lifeline is not None else [])
        while self.child_status is None:
            ready = self.wait_for(watched, 1.0)
            while self.pending:
                with contextlib.suppress(OSError):
                    os.killpg(self.group, self.pending.pop(0))
            self.reap()
            # The kernel closed the lifeline (it is gone, or says "stop"), or the outer process was
            # killed (by the agent, say): stop everything.
            stops = [stream for stream in ready if stream in watched and closed(stream)]
            if stops:
                watched = [stream for stream in watched if stream not in stops]
                self.kill_tree()
                self.reap()
        agent.returncode = self.child_status  # reaped by us, not by Popen
        self.kill_tree()  # leftovers of an agent that exited on its own
        return self.child_status


class Sweeper(Tree):
    """The outer process: waits for the inner one and sweeps whatever is left when it ends, however
    it ends — killed by the agent too, whose orphans are then re-parented here."""

    def __init__(self, inner: int, lifeline: socket.socket | None, grace: float) -> None:
        super().__init__(grace)
        self.child_pid = inner
        self.lifeline = lifeline

    def run(self) -> int:
        self.watch_signals()
        _drop_stdio()
        watched: list[Stream] = [self.lifeline] if self.lifeline is not None else []
        deadline: float | None = None
        while self.child_status is None:
            wait = 1.0 if deadline is None else max(0.0, deadline - time.monotonic())
            ready = self.wait_for(watched, wait)
            while self.pending:
                sig = self.pending.pop(0)
                if self.child_status is None:  # once reaped, its pid may be another process's
                    with contextlib.suppress(OSError):
                        os.kill(self.child_pid, sig)  # it passes them on to the agent's group
            self.reap()
            if self.lifeline is not None and self.lifeline in ready and closed(self.lifeline):
                watched = []
                deadline = time.monotonic() + self.grace + 1.0  # the inner one sweeps first
            if deadline is not None and time.monotonic() >= deadline and self.child_status is None:
                self.kill_tree()  # the inner process did not finish (stopped, say): all of it, it too
                self.reap()
        self.kill_tree()  # what the inner process left: all of the agent's tree if it was killed
        return self.child_status


def _drop_stdio() -> None:
    """Point fds 0-2 at /dev/null: EOF on the agent's stdout must mean the agent's tree is gone."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def supervise(argv: list[str], lifeline: socket.socket | None, grace: float) -> int:
    """Become a subreaper, fork the inner process that starts the agent, and sweep after it."""
    problem = _prctl(PR_SET_CHILD_SUBREAPER, 1)
    if problem is not None:
        report(
            lifeline,
            f"log PR_SET_CHILD_SUBREAPER unavailable ({problem}): descendants of the agent "
            "that leave its process group may outlive it",
        )
    parent_read, parent_write = os.pipe()  # not inherited by the agent (close-on-exec)
    try:
        inner = os.fork()
    except OSError as exc:
        report(lifeline, f"error {exc.errno or 0} {exc.strerror or exc}")
        return 127
    if inner == 0:
        os.close(parent_write)
        return Supervisor(argv, lifeline, grace, parent_read).run()
    os.close(parent_read)  # parent_write stays open until this process exits, however it exits
    return Sweeper(inner, lifeline, grace).run()


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
    exit_like(supervise(argv, lifeline, grace))


if __name__ == "__main__":
    main(sys.argv[1:])
