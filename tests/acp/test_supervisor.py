"""No process outlives the kernel: real process trees (``tests/agents/tree_agent.py``: the agent, a child
in its group and a grandchild that called ``setsid()``) under the supervisor.

- A stand-in kernel (``tests/agents/agent_owner.py``) is SIGKILLed: the whole tree dies within seconds,
  also when the agent ignores stdin EOF and SIGTERM.
- ``aclose()`` / ``kill_now()`` reach the setsid grandchild; exit code and stderr tail are the agent's.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from silo_nb.acp import SubprocessTransport
from silo_nb.acp import process as acp_process
from tests.conftest import AGENTS
from tests.conftest import pid_alive as _pid_alive

TREE_AGENT = str(AGENTS / "tree_agent.py")
DEATH_DEADLINE = 5.0


def pid_alive(pid: int) -> bool:
    # conftest's helper reads /proc/PID/stat after kill(pid, 0): a process exiting in between raises.
    try:
        return _pid_alive(pid)
    except (ProcessLookupError, FileNotFoundError):
        return False


def _wait_all_dead(pids: list[int], deadline: float = DEATH_DEADLINE) -> tuple[list[int], float]:
    """Poll until every pid is gone; return the survivors (if any) and the time it took."""
    began = time.monotonic()
    while time.monotonic() - began < deadline:
        if not any(pid_alive(pid) for pid in pids):
            break
        time.sleep(0.02)
    return [pid for pid in pids if pid_alive(pid)], time.monotonic() - began


@contextlib.contextmanager
def _no_leftovers(pids: list[int]) -> Iterator[None]:
    """Whatever the test's outcome, kill what it left (a failing test must not leak processes)."""
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _run_owner(*agent_flags: str) -> tuple[subprocess.Popen[str], dict[str, int]]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    owner = subprocess.Popen(
        [sys.executable, str(AGENTS / "agent_owner.py"), *agent_flags],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert owner.stdout is not None
    line = owner.stdout.readline()
    if not line:
        owner.kill()
        pytest.fail(f"the owner reported nothing (exit {owner.wait()})")
    return owner, json.loads(line)


@pytest.mark.parametrize(
    "flags",
    [(), ("--ignore-eof", "--ignore-term")],
    ids=["plain", "ignores-eof-and-sigterm"],
)
def test_sigkill_of_the_kernel_leaves_no_process(flags: tuple[str, ...]) -> None:
    owner, pids = _run_owner(*flags)
    tree = [pids["agent"], pids["child"], pids["grandchild"]]
    with _no_leftovers(tree):
        assert pids["process"] == pids["agent"]  # AgentProcess.pid is still the agent's own pid
        assert all(pid_alive(pid) for pid in tree)
        assert os.getsid(pids["grandchild"]) != os.getsid(pids["agent"])  # it really left the session
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        survivors, took = _wait_all_dead(tree)
        assert survivors == [], f"still running {took:.1f} s after the kernel's SIGKILL: {survivors}"


async def _spawn_tree(*flags: str) -> tuple[SubprocessTransport, dict[str, int]]:
    transport = await SubprocessTransport.spawn(sys.executable, [TREE_AGENT, *flags])
    line = b""
    with anyio.fail_after(10):
        while not line.endswith(b"\n"):
            line += await transport.receive.receive()
    pids: dict[str, int] = json.loads(line)["params"]
    assert pids["agent"] == transport.process.pid
    return transport, pids


async def test_aclose_kills_a_setsid_grandchild() -> None:
    transport, pids = await _spawn_tree()
    tree = [pids["agent"], pids["child"], pids["grandchild"]]
    with _no_leftovers(tree):
        await transport.aclose()
        assert [pid for pid in tree if pid_alive(pid)] == []  # gone when aclose returns, not later
        assert transport.process.returncode == 0  # it exited on EOF: no grace ran out, nothing killed
        assert transport.process not in set(acp_process._LIVE)


async def test_aclose_of_an_agent_ignoring_eof_and_sigterm_kills_its_whole_tree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(acp_process, "STDIN_CLOSE_GRACE_SECONDS", 0.2)
    monkeypatch.setattr(acp_process, "TERM_GRACE_SECONDS", 0.3)
    transport, pids = await _spawn_tree("--ignore-eof", "--ignore-term")
    tree = [pids["agent"], pids["child"], pids["grandchild"]]
    with _no_leftovers(tree):
        await transport.aclose()
        assert [pid for pid in tree if pid_alive(pid)] == []
        assert transport.process.returncode == -9


async def test_kill_now_reaches_a_setsid_grandchild() -> None:
    transport, pids = await _spawn_tree("--ignore-term")
    tree = [pids["agent"], pids["child"], pids["grandchild"]]
    with _no_leftovers(tree):
        transport.kill_now()  # synchronous: the supervisor finishes the job on its own
        assert transport.process not in set(acp_process._LIVE)
        survivors, _took = await anyio.to_thread.run_sync(_wait_all_dead, tree)
        assert survivors == []
        assert await transport.process.wait(10) == -9


async def test_an_agent_that_kills_its_own_parent_leaves_no_descendant() -> None:
    """Issue 28: the agent SIGKILLs the process it was started by (it dies with it); its child and its
    ``setsid`` grandchild are swept all the same, by ``aclose`` at the latest."""
    transport, pids = await _spawn_tree("--kill-parent", "--ignore-term")
    tree = [pids["agent"], pids["child"], pids["grandchild"]]
    with _no_leftovers(tree):
        survivors, _took = await anyio.to_thread.run_sync(_wait_all_dead, [pids["agent"]], 20.0)
        assert survivors == []  # it died with its parent: the kill happened
        with anyio.fail_after(30):  # a hang guard, not a figure
            await transport.aclose()
        survivors, _took = await anyio.to_thread.run_sync(_wait_all_dead, tree)
        assert survivors == [], f"still running after aclose: {survivors}"


async def test_exit_code_and_stderr_tail_are_the_agents() -> None:
    transport, pids = await _spawn_tree("--exit", "5")
    tree = [pids["agent"], pids["child"], pids["grandchild"]]
    with _no_leftovers(tree):
        async with anyio.create_task_group() as tg:
            tg.start_soon(transport.run)  # drains stderr
            await transport.send.aclose()  # the agent exits 5 at EOF, leaving its tree behind
            with anyio.fail_after(10):
                message = await transport.describe_end()
        assert message == "agent exited with code 5:\ntree-agent: stdin closed\ntree-agent: exiting"
        assert transport.process.returncode == 5
        # Its leftovers are swept when the agent exits, before anyone calls aclose.
        assert [pid for pid in tree if pid_alive(pid)] == []
        await transport.aclose()


async def test_sigterm_to_the_supervisor_reaches_the_agent() -> None:
    transport, pids = await _spawn_tree()
    tree = [pids["agent"], pids["child"], pids["grandchild"]]
    with _no_leftovers(tree):
        supervisor_pid: Any = getattr(transport.process, "supervisor_pid", None)
        assert isinstance(supervisor_pid, int) and supervisor_pid != pids["agent"]
        os.kill(supervisor_pid, signal.SIGTERM)
        assert await transport.process.wait(10) == -15
        assert [pid for pid in tree if pid_alive(pid)] == []
        await transport.aclose()


def test_supervisor_runs_as_a_module_and_exits_as_the_agent_did() -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    module = [sys.executable, "-m", "silo_nb.acp.supervisor", "--"]
    code = subprocess.run(
        [*module, sys.executable, "-c", "import sys; sys.exit(7)"], check=False, env=env, timeout=30
    )
    assert code.returncode == 7
    killed = subprocess.run(
        [*module, sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"],
        check=False,
        env=env,
        timeout=30,
    )
    assert killed.returncode == -9
    usage = subprocess.run(module[:-1], check=False, env=env, capture_output=True, text=True, timeout=30)
    assert usage.returncode == 1 and "usage:" in usage.stderr


def test_prctl_failure_is_reported_not_raised() -> None:
    # In a subprocess: becoming a subreaper would change this test process for every later test.
    code = (
        "import os, sys\n"
        "from silo_nb.acp import supervisor as s\n"
        "assert s._prctl(s.PR_SET_CHILD_SUBREAPER, 1) is None or not sys.platform.startswith('linux')\n"
        "assert s._prctl(999_999, 0) == os.strerror(22)  # EINVAL: an unknown option\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.stdout.strip() == "ok", result.stderr


async def test_an_agent_that_cannot_be_executed_is_reported_by_the_supervisor(tmp_path: Path) -> None:
    junk = tmp_path / "not-a-program"
    junk.write_bytes(b"\x00\x01 not an executable format")
    junk.chmod(0o755)
    with (
        anyio.fail_after(30),  # a hang guard, not a figure
        pytest.raises(
            acp_process.AgentSpawnError, match=r'^could not run ".*not-a-program": Exec format error$'
        ),
    ):
        await SubprocessTransport.spawn(str(junk), [])
