"""Issue 28: a terminal's command that kills the process above it still leaves nothing behind. Real
processes: the command starts a ``setsid`` grandchild (ignoring SIGTERM), then SIGKILLs one of the
processes between it and the kernel; after ``terminal/release`` and ``close_all`` the grandchild is gone."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

from silo_nb.sessions.session.terminals import TerminalHost
from tests.conftest import pid_alive

PY = sys.executable

# argv: the pid file, which ancestor to kill ("parent", "topmost" below the kernel, or "all" of them),
# the kernel's pid.
COMMAND = """
import os, signal, sys, time
pid_file, which, kernel = sys.argv[1], sys.argv[2], int(sys.argv[3])
if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open(pid_file + ".part", "w") as f:
        f.write(str(os.getpid()))
    os.rename(pid_file + ".part", pid_file)
    time.sleep(600)
    os._exit(0)
while not os.path.exists(pid_file):
    time.sleep(0.01)

def parent_of(pid):
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    return int(stat[stat.rfind(b")") + 2 :].split()[1])

above = [os.getppid()]  # the processes between this command and the kernel, nearest first
while parent_of(above[-1]) not in (kernel, 0, 1):
    above.append(parent_of(above[-1]))
# "all": the topmost first, then at once the next (one that saw its parent go has no time to sweep).
targets = {"parent": above[:1], "topmost": above[-1:], "all": above[::-1]}[which]
for pid in targets:
    os.kill(pid, signal.SIGKILL)
time.sleep(600)
"""


async def _dead_within(pid: int, seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        while pid_alive(pid):
            await anyio.sleep(0.05)
        return True
    return False


@pytest.mark.parametrize("which", ["parent", "topmost", "all"])
async def test_a_command_that_kills_what_is_above_it_leaves_no_grandchild(tmp_path: Path, which: str) -> None:
    lines: list[object] = []
    terminals = TerminalHost(
        enabled=True, folders=(tmp_path,), cwd=str(tmp_path), max_terminals=2, record=lines.append
    )
    pid_file = tmp_path / "grandchild.pid"
    made = await terminals.create(
        {"command": PY, "args": ["-c", COMMAND, str(pid_file), which, str(os.getpid())]}
    )
    (command_pid,) = terminals.pids()
    with anyio.fail_after(20):
        while not pid_file.exists():
            await anyio.sleep(0.05)
    grandchild = int(pid_file.read_text())
    try:
        # The command dies with its parent (it is SIGKILLed when its parent goes): the kill has happened.
        assert await _dead_within(command_pid, 20), "the command never killed what was above it"
        with anyio.fail_after(30):  # a hang guard, not a figure
            await terminals.release(made)
            await terminals.close_all()
        assert await _dead_within(grandchild, 10), f"grandchild {grandchild} outlived release and close"
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(grandchild, signal.SIGKILL)
