"""Client terminals (``session/terminals.py``): real processes without a shell, bounded output cut at a
character boundary, journaled into the tool call that shows them, and nothing left behind."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.acp import AcpRpcError
from silo_nb.model.models import AgentSessionUpdate
from silo_nb.sessions.session import terminals as terminals_module
from silo_nb.sessions.session.terminals import TerminalHost, _cut_to_limit
from silo_nb.updates.entries import TERMINAL_OUTPUT_LIMIT, TerminalView, ToolEntry
from silo_nb.updates.transcript import fold_all
from tests.conftest import Workspace, pid_alive, raw_agent

PY = sys.executable


def host(tmp_path: Path, **options: Any) -> tuple[TerminalHost, list[AgentSessionUpdate]]:
    lines: list[AgentSessionUpdate] = []
    settings = {"enabled": True, "max_terminals": 4, **options}
    return TerminalHost(folders=(tmp_path,), cwd=str(tmp_path), record=lines.append, **settings), lines


async def run(terminals: TerminalHost, *args: str, **extra: Any) -> str:
    made = await terminals.create({"sessionId": "s", "command": PY, "args": ["-c", *args], **extra})
    return str(made["terminalId"])


async def test_a_command_runs_without_a_shell_and_its_output_and_exit_come_back(tmp_path: Path) -> None:
    terminals, lines = host(tmp_path)
    terminal_id = await run(terminals, "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)")
    with anyio.fail_after(20):
        assert await terminals.wait_for_exit({"terminalId": terminal_id}) == {"exitCode": 3, "signal": None}
    output = await terminals.output({"terminalId": terminal_id})
    assert output["output"].split() == ["out", "err"] and output["truncated"] is False
    assert output["exitStatus"] == {"exitCode": 3, "signal": None}
    not_a_shell = await terminals.create({"command": "echo", "args": ["$HOME", ";", "ls"]})
    await terminals.wait_for_exit(not_a_shell)
    assert (await terminals.output(not_a_shell))["output"] == "$HOME ; ls\n"  # no expansion, no chaining
    await terminals.release({"terminalId": terminal_id})
    with pytest.raises(AcpRpcError, match="no terminal"):
        await terminals.output({"terminalId": terminal_id})
    # Journaled: the last line carries the exit status.
    assert lines[-1].raw["exitStatus"] is not None
    await terminals.close_all()


def test_the_output_is_cut_from_the_beginning_at_a_character_boundary() -> None:
    buffer = bytearray("aé€😀".encode())  # 1, 2, 3 and 4 bytes
    assert _cut_to_limit(buffer, 6) and buffer.decode() == "😀"  # the cut never splits a character
    buffer = bytearray(b"abc")
    assert not _cut_to_limit(buffer, 3) and buffer == b"abc"


async def test_output_beyond_the_limit_is_truncated_and_a_flood_stays_bounded(tmp_path: Path) -> None:
    terminals, lines = host(tmp_path)
    code = "import sys; w = sys.stdout.buffer.write\nfor _ in range(16384): w(b'x' * 65535 + b'\\n')"
    terminal_id = await run(terminals, code, outputByteLimit=1000)  # 1 GiB through the pipe
    with anyio.fail_after(240):
        await terminals.wait_for_exit({"terminalId": terminal_id})
    output = await terminals.output({"terminalId": terminal_id})
    assert len(output["output"].encode()) <= 1000 and output["truncated"] is True
    journaled = sum(len(line.raw.get("output", "")) for line in lines)
    assert journaled < 10_000_000  # the journal got the first megabyte, then the end, not the gigabyte
    view = TerminalView(terminal_id)
    for line in lines:
        view = view.with_output(line.raw)
    assert view.output.endswith(output["output"]) and view.truncated  # what the journal repaints
    await terminals.close_all()


async def test_past_its_first_megabyte_a_terminal_journals_only_what_is_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28: every flush after the first megabyte journaled the whole 200,000-character tail again
    (45 bytes printed made a 54 MB journal). Now a line carries what is new; the journal repaints the
    same end of the output the terminal holds."""
    monkeypatch.setattr(terminals_module, "JOURNAL_INTERVAL_SECONDS", 0.02)  # many flushes, quickly
    monkeypatch.setattr(terminals_module, "JOURNAL_FLOOD_INTERVAL_SECONDS", 0.02)
    terminals, lines = host(tmp_path)
    code = (
        "import sys, time\n"
        "sys.stdout.write('x' * 1_100_000); sys.stdout.flush()\n"
        "for i in range(100):\n"
        "    sys.stdout.write(str(i % 10)); sys.stdout.flush(); time.sleep(0.01)\n"
    )
    terminal_id = await run(terminals, code)
    with anyio.fail_after(60):
        await terminals.wait_for_exit({"terminalId": terminal_id})
    printed = 1_100_000 + 100
    assert len(lines) > 5  # the small bits came in many flushes (else this proves nothing)
    journaled = sum(len(line.raw.get("output", "")) for line in lines)
    assert journaled <= printed, f"{journaled} characters journaled for {printed} printed"
    view = TerminalView(terminal_id)
    for line in lines:
        view = view.with_output(line.raw)
    output = (await terminals.output({"terminalId": terminal_id}))["output"]
    assert view.output == output[-TERMINAL_OUTPUT_LIMIT:] and view.truncated and view.exit_code == 0
    await terminals.close_all()


async def test_kill_keeps_the_terminal_readable_and_a_setsid_grandchild_dies_too(tmp_path: Path) -> None:
    terminals, _ = host(tmp_path)
    pid_file = tmp_path / "grandchild.pid"
    grandchild = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "if os.fork() == 0:\n"
        "    os.setsid(); signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"    open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)\n"
        "time.sleep(600)\n"
    )
    terminal_id = await run(terminals, grandchild)
    with anyio.fail_after(20):
        while not pid_file.exists() or not pid_file.read_text():
            await anyio.sleep(0.05)
    pid = int(pid_file.read_text())
    await terminals.kill({"terminalId": terminal_id})
    with anyio.fail_after(20):
        status = await terminals.wait_for_exit({"terminalId": terminal_id})
    assert status["signal"] in ("SIGTERM", "SIGKILL")
    assert (await terminals.output({"terminalId": terminal_id}))["exitStatus"] == status  # still readable
    with anyio.fail_after(10):
        while pid_alive(pid):
            await anyio.sleep(0.05)
    await terminals.close_all()


async def test_limits_refuse_clearly(tmp_path: Path) -> None:
    terminals, _ = host(tmp_path, max_terminals=2)
    with pytest.raises(AcpRpcError, match="inside the session's folders"):
        await run(terminals, "pass", cwd="/")
    first = await run(terminals, "import time; time.sleep(30)")
    await run(terminals, "import time; time.sleep(30)")
    with pytest.raises(AcpRpcError, match="max_terminals"):
        await run(terminals, "pass")
    await terminals.release({"terminalId": first})
    await run(terminals, "pass")  # a released one no longer counts
    await terminals.close_all()
    terminals, _ = host(tmp_path)
    with pytest.raises(AcpRpcError, match="not found"):
        await terminals.create({"command": "no-such-command-anywhere"})
    off, _ = host(tmp_path, enabled=False)
    with pytest.raises(AcpRpcError, match="terminal = false"):
        await off.create({"command": PY})
    await terminals.close_all()


async def test_a_huge_command_is_named_once_and_shortened_in_the_error(tmp_path: Path) -> None:
    """Issue 28: a 10 MB command came back twice in the error (20 MB to the agent)."""
    terminals, _ = host(tmp_path)
    for command, args, named in (("cmd-" + "x" * 10_000_000, [], "cmd-"), (PY, ["y" * 10_000_000], PY)):
        with pytest.raises(AcpRpcError) as caught:
            await terminals.create({"command": command, "args": args})
        message = caught.value.message
        assert len(message) < 1000 and message.count(named) == 1, message[:300]
        assert "\n" not in message
    await terminals.close_all()


async def test_a_hundred_terminals_at_once_leave_nothing_after_close(tmp_path: Path) -> None:
    terminals, _ = host(tmp_path, max_terminals=100)
    ids = [await run(terminals, "import time; time.sleep(60)") for _ in range(100)]
    assert len(terminals) == 100 and len(set(ids)) == 100
    await terminals.close_all()
    assert len(terminals) == 0


async def test_through_a_real_agent_the_file_the_terminal_and_the_transcript(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("uses-client"))
    svc = workspace.service()
    async with await svc.sessions.connect("raw-uses-client") as handle:
        shown: list[silo_nb.AgentSessionUpdate] = []
        handle.on_transcript(shown.append)
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        with anyio.fail_after(60):
            await handle.prompt([{"type": "text", "text": "go"}])
        summary = json.loads(next(u.text for u in updates if u.text))
        assert summary["wrote"] == {} and summary["read"] == "- one\n"
        assert summary["exit"] == {"exitCode": 0, "signal": None}
        assert summary["output"] == "hello from a terminal\n"
        assert (workspace.folder / "notes.md").read_text() == "- one\n"
        state = fold_all(shown)
        tool = next(e for e in state.entries if isinstance(e, ToolEntry))
        assert tool.terminals[0].output == "hello from a terminal\n" and tool.terminals[0].exit_code == 0
        journal = fold_all(handle.journal_updates())
        assert journal.entries == state.entries  # the journal repaints what the live view showed


async def test_the_agent_withdraws_a_wait_and_the_terminal_is_still_its_to_kill(workspace: Workspace) -> None:
    workspace.add_profiles(raw_agent("withdraws-wait"))
    svc = workspace.service()
    async with await svc.sessions.connect("raw-withdraws-wait") as handle:
        updates: list[silo_nb.AgentSessionUpdate] = []
        handle.on_update(updates.append)
        with anyio.fail_after(20):  # not the 30 s of the sleep: the wait ended when it was withdrawn
            await handle.prompt([{"type": "text", "text": "go"}])
        report = json.loads(next(u.text for u in updates if u.text))
        assert report["waited"] == -32800 and report["killed"] is True  # answered "request cancelled"
        assert report["exit"] is not None and report["exit"]["signal"] in ("SIGKILL", "SIGTERM")


async def test_a_disposed_session_leaves_no_terminal(workspace: Workspace, tmp_path: Path) -> None:
    svc = workspace.service()
    handle = await svc.sessions.connect("demo")
    terminals = handle.core.terminals
    made = await terminals.create({"command": PY, "args": ["-c", "import time; time.sleep(600)"]})
    (pid,) = terminals.pids()
    assert made["terminalId"] and pid_alive(pid)
    await handle.aclose()
    assert not pid_alive(pid) and len(terminals) == 0
    with pytest.raises(AcpRpcError, match="closed"):  # a closed session makes no more
        await terminals.create({"command": PY})


KERNEL = """
import asyncio, sys
from pathlib import Path
from silo_nb.sessions.session.terminals import TerminalHost

async def main():
    host = TerminalHost(enabled=True, folders=(Path.cwd(),), cwd=str(Path.cwd()), max_terminals=2,
                        record=lambda line: None)
    code = "\\n".join(
        ["import os, time", "if os.fork() == 0:", "    os.setsid()", "    print(os.getpid(), flush=True)",
         "time.sleep(600)"]
    )
    made = await host.create({"command": sys.executable, "args": ["-c", code]})
    await asyncio.sleep(1.0)
    out = await host.output(made)
    print(host.pids()[0], out["output"].strip(), flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


async def test_a_killed_kernel_leaves_no_terminal(tmp_path: Path) -> None:
    """The process holding the terminals (a kernel) is SIGKILLed: its terminals' trees go with it,
    the ``setsid`` grandchild too (the supervisor's lifeline closes)."""
    kernel = await anyio.open_process([PY, "-c", KERNEL], cwd=tmp_path)
    assert kernel.stdout is not None
    with anyio.fail_after(30):
        line = b""
        while not line.endswith(b"\n"):
            line += await kernel.stdout.receive()
    terminal_pid, grandchild_pid = map(int, line.split())
    assert pid_alive(terminal_pid) and pid_alive(grandchild_pid)
    kernel.kill()
    await kernel.wait()
    with anyio.fail_after(20):
        while pid_alive(terminal_pid) or pid_alive(grandchild_pid):
            await anyio.sleep(0.05)
    await kernel.aclose()
