"""The subprocess transport with real child processes: spawn, exit wording, stderr, group shutdown.

Everything that does not need a real process (framing, requests, EOF, cancellation) is tested in-process
in ``test_jsonrpc.py`` and ``test_transport.py``; this file keeps the set only a process can show.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from silo_nb.acp import AcpConnectionClosed, AgentConnection, AgentSpawnError, SubprocessTransport, Transport
from silo_nb.acp import process as acp_process
from silo_nb.acp.supervisor import process_table
from tests.conftest import pid_alive

TIMEOUT = 10.0
RAW_AGENT = str(Path(__file__).resolve().parent.parent / "agents" / "raw_agent.py")

# Starts a long-lived grandchild, reports its pid as a notification, and exits at end of stdin,
# leaving the grandchild behind in its process group.
GRANDCHILD_SCRIPT = r"""
import json, subprocess, sys
child = subprocess.Popen(["sleep", "60"])
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "pid", "params": child.pid}) + "\n")
sys.stdout.flush()
sys.stdin.read()
"""

# Reports its cwd and one environment variable, floods stderr, then answers every request with "ok".
ENV_SCRIPT = r"""
import json, os, sys
sys.stderr.write(("e" * 999 + "\n") * 3000 + "tail one\ntail two\n")
sys.stderr.flush()
info = {"cwd": os.getcwd(), "var": os.environ.get("SILO_TEST_VAR"), "has_path": "PATH" in os.environ}
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "info", "params": info}) + "\n")
sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": "ok"}) + "\n")
    sys.stdout.flush()
"""


async def wait_until_dead(pid: int) -> None:
    with anyio.fail_after(TIMEOUT):
        while pid_alive(pid):
            await anyio.sleep(0.02)


@asynccontextmanager
async def started(*args: str, **kwargs: Any) -> AsyncIterator[AgentConnection]:
    connection = await AgentConnection.start(sys.executable, list(args), **kwargs)
    try:
        with anyio.fail_after(TIMEOUT):
            yield connection
    finally:
        await connection.aclose()


async def test_spawn_talks_over_stdio_and_aclose_ends_the_process() -> None:
    async with started(RAW_AGENT, "ok") as connection:
        transport = connection.transport
        assert isinstance(transport, SubprocessTransport)
        assert isinstance(transport, Transport)
        process = connection.process
        assert process is not None and process is transport.process
        assert transport.name == f"pid {process.pid}"
        assert pid_alive(process.pid)
        assert process in set(acp_process._LIVE)
        init = await connection.rpc.request("initialize", {"protocolVersion": 1})
        assert init["agentInfo"]["name"] == "raw-fake"
        assert connection.is_open
    assert not connection.is_open
    assert process.returncode is not None
    assert not pid_alive(process.pid)
    assert process not in set(acp_process._LIVE)


async def test_exit_code_and_stderr_tail_are_the_close_message() -> None:
    expected = (
        "agent exited with code 3:\n"
        "raw-fake: starting\nraw-fake: config file ~/.rawfake missing\nraw-fake: giving up"
    )
    closed: list[str] = []
    async with started(RAW_AGENT, "exit-at-start") as connection:
        connection.on_closed(closed.append)
        with pytest.raises(AcpConnectionClosed) as caught:
            await connection.rpc.request("initialize", {"protocolVersion": 1})
        assert str(caught.value) == expected
        while not closed:
            await anyio.sleep(0.01)
        assert closed == [expected]
        assert connection.stderr_tail(2) == [
            "raw-fake: config file ~/.rawfake missing",
            "raw-fake: giving up",
        ]
        assert not connection.is_open
        process = connection.process
        assert process is not None and process.returncode == 3
        # The connection reaps what is left of the agent on its own, without aclose.
        while process in set(acp_process._LIVE):
            await anyio.sleep(0.01)


async def test_env_is_laid_over_ours_cwd_is_used_and_stderr_flood_is_drained(tmp_path: Path) -> None:
    infos: list[Any] = []
    async with started(
        "-c",
        ENV_SCRIPT,
        env={"SILO_TEST_VAR": "from-profile"},
        cwd=str(tmp_path),
        notification_handlers={"info": infos.append},
    ) as connection:
        # ~3 MB of stderr would fill the pipe and block the agent if nobody drained it.
        assert await connection.rpc.request("ping") == "ok"
        assert infos == [{"cwd": str(tmp_path), "var": "from-profile", "has_path": True}]
        assert connection.stderr_tail(2) == ["tail one", "tail two"]
        assert len(connection.stderr_tail(500)) == acp_process.STDERR_RING_LINES


async def test_aclose_kills_a_grandchild_left_in_the_process_group(monkeypatch: pytest.MonkeyPatch) -> None:
    # A grace far longer than the test's hang guard: waiting it out would fail the test (no timing).
    monkeypatch.setattr(acp_process, "TERM_GRACE_SECONDS", 300.0)
    pids: list[int] = []
    async with started("-c", GRANDCHILD_SCRIPT, notification_handlers={"pid": pids.append}) as connection:
        while not pids:
            await anyio.sleep(0.01)
        process = connection.process
        assert process is not None
        assert pid_alive(pids[0]) and pid_alive(process.pid)
        with anyio.fail_after(60):
            await connection.aclose()
        assert not pid_alive(process.pid)
        await wait_until_dead(pids[0])
        # The agent exits at once on EOF; the SIGTERMed grandchild is then a zombie until init reaps it,
        # which must not count as "still running" (that would wait out the whole SIGTERM grace).
        assert running_group_members(process.pid) in (0, None)


async def test_agent_ignoring_eof_and_sigterm_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acp_process, "STDIN_CLOSE_GRACE_SECONDS", 0.2)
    monkeypatch.setattr(acp_process, "TERM_GRACE_SECONDS", 0.3)
    async with started(RAW_AGENT, "ignores-eof") as connection:
        await connection.rpc.request("initialize", {"protocolVersion": 1})  # its SIGTERM handler is set
        process = connection.process
        assert process is not None
        await connection.aclose()
        assert not pid_alive(process.pid)
        assert process.returncode == -9  # both graces ran out: SIGKILL


async def test_kill_now_kills_the_group_synchronously() -> None:
    pids: list[int] = []
    async with started("-c", GRANDCHILD_SCRIPT, notification_handlers={"pid": pids.append}) as connection:
        while not pids:
            await anyio.sleep(0.01)
        process = connection.process
        assert process is not None
        connection.kill_now()
        assert not connection.is_open
        assert process not in set(acp_process._LIVE)
        await wait_until_dead(pids[0])
        assert await process.wait(TIMEOUT) == -9


async def test_command_not_found_is_a_spawn_error() -> None:
    with pytest.raises(AgentSpawnError, match=r'^command "no-such-agent-binary-xyz" was not found on PATH'):
        await AgentConnection.start("no-such-agent-binary-xyz", [])
    with pytest.raises(AgentSpawnError, match="was not found on PATH"):
        await SubprocessTransport.spawn("no-such-agent-binary-xyz", [], env={"PATH": "/nonexistent"})


async def test_file_that_cannot_be_executed_is_a_spawn_error(tmp_path: Path) -> None:
    junk = tmp_path / "not-a-program"
    junk.write_bytes(b"\x00\x01 not an executable format")
    junk.chmod(junk.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(AgentSpawnError, match=r'^could not run ".*not-a-program": Exec format error'):
        await AgentConnection.start(str(junk), [])


def running_group_members(pgid: int) -> int | None:
    """How many processes of group ``pgid`` are not zombies (``None`` without /proc)."""
    table = process_table()
    if table is None:
        return None
    return sum(1 for _pid, state, _ppid, pgrp in table if pgrp == pgid and state not in (b"Z", b"X"))


def test_running_group_members_counts_our_own_group() -> None:
    counted = running_group_members(os.getpgid(0))
    if counted is None:
        pytest.skip("no /proc here")
    assert counted >= 1  # at least this test process
    assert running_group_members(2**22 + 12345) == 0  # above Linux's pid_max: no such group


async def test_a_none_in_env_keeps_the_kernels_variable_from_the_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profile's ``unset_env`` arrives here as ``None``: the agent does not inherit the variable (an
    inherited ``IS_SANDBOX=yes`` makes claude-agent-acp exit as root)."""
    monkeypatch.setenv("SILO_TEST_VAR", "from-the-kernel")
    infos: list[Any] = []
    async with started(
        "-c",
        ENV_SCRIPT,
        env={"SILO_TEST_VAR": None},
        cwd=str(tmp_path),
        notification_handlers={"info": infos.append},
    ) as connection:
        assert await connection.rpc.request("ping") == "ok"
        assert infos[0]["var"] is None and infos[0]["has_path"]
