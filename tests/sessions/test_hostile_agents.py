"""The adversarial round of issue 8: real subprocess agents that attack the client
(``tests/agents/hostile_agent.py``). Each test proves the outcome — the session ends or carries on with
a clear message, nothing is lost, no agent process is left — and that the kernel's event loop stayed
responsive throughout (a 10 ms heartbeat; its longest gap is asserted with a generous bound, CI is
loaded, and recorded in tests/RELIABILITY.md).
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import silo_nb
from tests.conftest import AGENTS, Workspace, pid_alive

LOOP_GAP_LIMIT = 1.0  # seconds, generous for a loaded CI; measured values are in tests/RELIABILITY.md


def hostile(workspace: Workspace, mode: str, **extra: Any) -> silo_nb.AgentsService:
    workspace.add_profiles(
        {
            "id": mode,
            "label": f"Hostile {mode}",
            "command": sys.executable,
            "args": [str(AGENTS / "hostile_agent.py"), mode],
            **extra,
        }
    )
    return workspace.service()


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Heartbeat:
    def __init__(self) -> None:
        self.longest_gap = 0.0
        self.start_rss_kib = self.peak_rss_kib = rss_kib()


@contextlib.asynccontextmanager
async def heartbeat() -> AsyncIterator[Heartbeat]:
    """How long the event loop went without running a 10 ms timer (and the peak RSS meanwhile)."""
    beat = Heartbeat()

    async def run() -> None:
        last = time.monotonic()
        while True:
            await anyio.sleep(0.01)
            now = time.monotonic()
            beat.longest_gap = max(beat.longest_gap, now - last - 0.01)
            beat.peak_rss_kib = max(beat.peak_rss_kib, rss_kib())
            last = now

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        try:
            yield beat
        finally:
            tg.cancel_scope.cancel()


async def gone(pid: int, within: float = 10) -> bool:
    with anyio.move_on_after(within):
        while pid_alive(pid):
            await anyio.sleep(0.05)
    return not pid_alive(pid)


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


async def test_a_flood_of_updates_before_initialize_is_answered_by_the_timeout(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    svc = hostile(workspace, "flood-before-init", connect_timeout=2)
    started = time.monotonic()
    async with heartbeat() as beat:
        with anyio.fail_after(20), pytest.raises(silo_nb.AgentSessionError) as caught:
            await svc.sessions.connect("flood-before-init")
    elapsed = time.monotonic() - started
    assert "no answer within 2 s" in str(caught.value)
    assert elapsed < 8
    assert beat.longest_gap < LOOP_GAP_LIMIT
    grown_mib = (beat.peak_rss_kib - beat.start_rss_kib) / 1024
    print(f"flood: {elapsed:.2f} s, loop gap {beat.longest_gap * 1000:.0f} ms, peak RSS +{grown_mib:.0f} MiB")
    assert svc.get_state() == []
    assert grown_mib < 60  # the updates kept from before the session existed are bounded (was 75 MiB/2 s)
    assert "before its session existed; the rest are not kept" in caplog.text


async def test_a_storm_of_responses_to_ids_never_sent_changes_nothing(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    svc = hostile(workspace, "foreign-ids")
    async with await svc.sessions.connect("foreign-ids") as handle:
        async with heartbeat() as beat:
            with anyio.fail_after(30):
                result = await handle.prompt(text("go"))
        assert result.stop_reason == "end_turn"
        journal = await svc.sessions.read_journal(handle.session_id)
        assert [u.text for u in journal if u.kind == "agent_message_chunk"] == ["still answering"]
        assert handle.is_live
    skipped = [
        r for r in caplog.records if "skipped a message" in r.getMessage() and r.levelname == "WARNING"
    ]
    assert 0 < len(skipped) <= 20  # the log is not flooded
    print(f"foreign ids: loop gap {beat.longest_gap * 1000:.0f} ms")
    assert beat.longest_gap < LOOP_GAP_LIMIT


@pytest.mark.parametrize("listening", [False, True])
async def test_a_storm_of_permission_requests_is_answered_every_one(
    workspace: Workspace, listening: bool
) -> None:
    svc = hostile(workspace, "permission-storm")
    async with await svc.sessions.connect("permission-storm") as handle:
        if listening:
            handle.on_permission(lambda request: request.respond("ok"))
        async with heartbeat() as beat:
            with anyio.fail_after(60):
                result = await handle.prompt(text("go"))
        assert result.stop_reason == "end_turn"
        journal = await svc.sessions.read_journal(handle.session_id)
        reply = json.loads(next(u.text for u in journal if u.kind == "agent_message_chunk") or "{}")
        assert reply == ({"ok": 2000} if listening else {"cancelled": 2000})
        decisions = [u for u in journal if u.kind == "permission_decision"]
        assert len(decisions) == (2000 if listening else 0)  # recorded only when someone was asked
        assert handle.pending_permissions == ()
    print(f"permission storm (listening={listening}): loop gap {beat.longest_gap * 1000:.0f} ms")
    assert beat.longest_gap < LOOP_GAP_LIMIT


async def test_an_agent_that_stops_reading_its_stdin_does_not_hang_a_prompt(workspace: Workspace) -> None:
    svc = hostile(workspace, "deaf")
    handle = await svc.sessions.connect("deaf")
    assert handle.core.wiring.connection is not None and handle.core.wiring.connection.process is not None
    pid = handle.core.wiring.connection.process.pid
    await anyio.sleep(0.3)  # it has closed its stdin by now, and keeps talking
    started = time.monotonic()
    async with heartbeat() as beat:
        with anyio.fail_after(30), pytest.raises(silo_nb.AgentSessionError) as caught:
            await handle.prompt(text("are you there?"))
    elapsed = time.monotonic() - started
    assert "stopped reading" in str(caught.value)
    assert not handle.is_live
    assert await gone(pid)  # it ignored SIGTERM: killed
    journal = await svc.sessions.read_journal(handle.session_id)
    assert [u.text for u in journal if u.kind == "user_message_chunk"] == ["are you there?"]
    assert any((u.text or "").startswith("tick") for u in journal)  # what it said before is kept
    await handle.aclose()
    print(f"deaf: prompt failed after {elapsed:.2f} s, loop gap {beat.longest_gap * 1000:.0f} ms")
    assert elapsed < 10 and beat.longest_gap < LOOP_GAP_LIMIT


async def test_an_agent_that_closes_its_stdout_but_keeps_running_is_ended(workspace: Workspace) -> None:
    svc = hostile(workspace, "mute")
    handle = await svc.sessions.connect("mute")
    assert handle.core.wiring.connection is not None and handle.core.wiring.connection.process is not None
    pid = handle.core.wiring.connection.process.pid
    started = time.monotonic()
    with anyio.fail_after(30):
        while handle.is_live:
            await anyio.sleep(0.05)
    elapsed = time.monotonic() - started
    with pytest.raises(silo_nb.AgentSessionError):
        await handle.prompt(text("hello?"))
    assert await gone(pid)
    await handle.aclose()
    print(f"mute: session ended {elapsed:.2f} s after it closed its stdout")
    assert elapsed < 10
