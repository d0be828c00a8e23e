"""A kernel restart, simulated: a process that connected and prompted is SIGKILLed mid-turn. A new
process finds every update the agent had sent up to the kill in the journal (within the 250 ms flush
window), and can resume the session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import anyio
import pytest

from tests.conftest import AGENTS, Workspace

FLUSH_WINDOW_SECONDS = 0.25


def _read_line(proc: subprocess.Popen[str], deadline: float) -> str:
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line:
            return line.rstrip("\n")
    pytest.fail("the client process stopped reporting")


async def test_sigkill_mid_turn_then_read_journal_and_resume(workspace: Workspace) -> None:
    env = dict(os.environ, SILO_NB_WORKSPACE=str(workspace.folder), SILO_NB_DATA_DIR=str(workspace.data))
    env["SILO_NB_DEMO_DELAY"] = "0"
    proc = subprocess.Popen(
        [sys.executable, str(AGENTS / "prompting_client.py")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=workspace.folder,
    )
    try:
        deadline = time.monotonic() + 30
        header = _read_line(proc, deadline)
        assert header.startswith("session ")
        session_id = header.split()[1]
        seen: list[str] = []
        while len(seen) < 25:
            seen.append(_read_line(proc, deadline))
        proc.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    # Everything the client had received more than one flush window before the kill is on disk. (The
    # child stamps each update itself: CLOCK_MONOTONIC is shared by processes; pipe reads lag.)
    confirmed = [
        line for line in seen if float(line.split(" ", 1)[0]) <= killed_at - FLUSH_WINDOW_SECONDS - 0.02
    ]
    assert len(confirmed) >= 10, "the test did not run long enough to check the flush window"

    svc = workspace.service()
    journal = await svc.sessions.read_journal(session_id)
    assert journal[0].kind == "user_message_chunk" and journal[0].text == "go slow please"
    agent_updates = journal[1:]
    assert len(agent_updates) >= len(confirmed), (
        killed_at,
        confirmed,
        [(u.kind, u.text) for u in agent_updates],
    )
    for line, update in zip(confirmed, agent_updates, strict=False):
        _stamp, kind, text = line.split(" ", 2)
        assert update.kind == kind, line
        assert repr(update.text) == text

    # The next "kernel" resumes the session; the agent (orphaned by the kill) is gone or going.
    with anyio.fail_after(30):
        async with await svc.sessions.connect("demo", resume={"session_id": session_id}) as handle:
            assert handle.resume_outcome == "resumed"
            assert len(handle.journal) == len(journal)
            result = await handle.prompt([{"type": "text", "text": "are you back?"}])
            assert result.stop_reason == "end_turn"
