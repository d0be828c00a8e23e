"""Whole turns through the public API against real agent subprocesses.

- The TypeScript SDK 1.9.0 example agent (``@agentclientprotocol/sdk``, installed by ``.ci/setup``):
  a turn with permission allowed, one rejected, one cancelled.
- A fake agent written with the official Python SDK: the same three paths.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import silo_nb
from tests.conftest import Workspace, sdk_agent, ts_agent


class Recorder:
    """Collects updates and answers permission requests with a chosen policy."""

    def __init__(
        self, handle: silo_nb.AgentSessionHandle, choose: str | None, *, cancel: bool = False
    ) -> None:
        self.updates: list[silo_nb.AgentSessionUpdate] = []
        self.requests: list[silo_nb.AgentPermissionRequest] = []
        self.states_seen: list[str] = []
        self._handle = handle
        self._choose = choose
        self._cancel = cancel
        handle.on_update(self.updates.append)
        handle.on_permission(self._on_permission)

    def _on_permission(self, request: silo_nb.AgentPermissionRequest) -> None:
        self.requests.append(request)
        if self._cancel:
            return  # left pending: the test cancels the turn
        option = next(o for o in request.options if o.kind == self._choose)
        request.respond(option.option_id)

    def kinds(self) -> list[str]:
        return [u.kind for u in self.updates]

    def final_status(self, tool_call_id: str) -> str | None:
        status = None
        for update in self.updates:
            if update.tool_call and update.tool_call.tool_call_id == tool_call_id and update.tool_call.status:
                status = update.tool_call.status
        return status


async def _turn(
    handle: silo_nb.AgentSessionHandle, recorder: Recorder, text: str
) -> silo_nb.AgentPromptResult:
    with anyio.fail_after(30):
        return await handle.prompt([{"type": "text", "text": text}])


@pytest.mark.parametrize(
    ("choose", "expected_status"), [("allow_once", "completed"), ("reject_once", "pending")]
)
async def test_ts_example_agent_turn_with_permission(
    workspace: Workspace, choose: str, expected_status: str
) -> None:
    workspace.add_profiles(ts_agent())
    svc = workspace.service()
    handle = await svc.sessions.connect("ts-example")
    try:
        assert handle.resume_outcome == "new"
        assert handle.can_resume is False
        recorder = Recorder(handle, choose)
        result = await _turn(handle, recorder, "please edit the config")
        assert result.stop_reason == "end_turn"
        assert len(recorder.requests) == 1
        request = recorder.requests[0]
        assert request.tool_call_id == "call_2"
        assert [o.kind for o in request.options] == ["allow_once", "reject_once"]
        assert request.answered
        assert recorder.kinds()[:5] == [
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
            "tool_call",
        ]
        # Allowed: call_2 completes. Rejected: the agent never updates call_2 again.
        assert recorder.final_status("call_2") == expected_status
        assert recorder.kinds()[-1] == "agent_message_chunk"
        # The journal holds the synthesized prompt plus every update, in order.
        journal = await svc.sessions.read_journal(handle.session_id)
        assert journal[0].kind == "user_message_chunk" and journal[0].text == "please edit the config"
        assert journal[0].raw == {"synthesized": True, "cwd": handle.cwd} and journal[0].timestamp
        agent_sent = [u for u in journal[1:] if not u.raw.get("synthesized")]
        assert [u.kind for u in agent_sent] == recorder.kinds()
        # The request and its answer are journaled too, right after the tool call they are about (before
        # the agent went on), under one request id.
        kinds = [u.kind for u in journal]
        at = kinds.index("permission_request")
        assert kinds[at - 1 : at + 2] == ["tool_call", "permission_request", "permission_decision"]
        asked, decision = journal[at], journal[at + 1]
        assert asked.raw["requestId"] == decision.raw["requestId"] == request.request_id
        assert decision.raw["toolCallId"] == "call_2"
        assert decision.raw["optionId"] == request.options[0 if choose == "allow_once" else 1].option_id
        (info,) = svc.get_state()
        assert info.activity == "idle" and info.needs_attention is True and info.idle_since
    finally:
        await handle.aclose()


async def test_ts_example_agent_turn_cancelled(workspace: Workspace) -> None:
    workspace.add_profiles(ts_agent())
    svc = workspace.service()
    handle = await svc.sessions.connect("ts-example")
    try:
        recorder = Recorder(handle, "allow_once")
        results: list[silo_nb.AgentPromptResult] = []
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                results.append(await _turn(handle, recorder, "edit please"))

            tg.start_soon(run)
            with anyio.fail_after(20):
                while "tool_call" not in recorder.kinds():
                    await anyio.sleep(0.02)
            assert svc.get_state()[0].activity == "working"
            handle.cancel()
        assert results[0].stop_reason == "cancelled"
        assert not handle.stop_overdue  # the agent's own answer ended it, within cancel_timeout
        assert recorder.requests == []  # cancelled before it asked
        info = svc.get_state()[0]
        assert info.activity == "idle"
        assert info.needs_attention is False  # a cancelled turn raises no attention
    finally:
        await handle.aclose()


async def test_ts_example_agent_cancel_while_permission_pending(workspace: Workspace) -> None:
    """The pending request is answered ``cancelled``; this example agent then ends its turn normally
    (``end_turn``), which after a Stop is reported as ``cancelled``, the agent's answer kept in ``raw``."""
    workspace.add_profiles(ts_agent())
    svc = workspace.service()
    handle = await svc.sessions.connect("ts-example")
    try:
        recorder = Recorder(handle, None, cancel=True)
        states: list[str] = []
        svc.subscribe(lambda state: states.append(state[0].activity if state else "gone"))
        results: list[silo_nb.AgentPromptResult] = []
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                results.append(await _turn(handle, recorder, "edit please"))

            tg.start_soon(run)
            with anyio.fail_after(20):
                while not recorder.requests:
                    await anyio.sleep(0.02)
            assert svc.get_state()[0].activity == "blocked"
            handle.cancel()
        assert results[0].stop_reason == "cancelled" and results[0].raw["stopReason"] == "end_turn"
        assert recorder.requests[0].answered and recorder.requests[0].answer is None
        assert states[:3] == ["working", "blocked", "working"]
        info = svc.get_state()[0]
        assert info.activity == "idle"
        assert info.needs_attention is False  # the user stopped it: a cancelled turn raises none
    finally:
        await handle.aclose()


@pytest.mark.parametrize(
    ("choose", "status", "answer"), [("allow_once", "completed", "yes"), ("reject_once", "failed", "no")]
)
async def test_python_sdk_agent_turn(workspace: Workspace, choose: str, status: str, answer: str) -> None:
    workspace.add_profiles(sdk_agent())
    svc = workspace.service()
    async with await svc.sessions.connect("sdk-normal") as handle:
        assert handle.agent_name == "SDK fake agent"
        recorder = Recorder(handle, choose)
        result = await _turn(handle, recorder, "hi")
        assert result.stop_reason == "end_turn"
        assert recorder.updates[0].text == "You said: hi"
        assert recorder.final_status("edit-1") == status
        assert recorder.updates[-1].text == f"Answer: {answer}"


async def test_python_sdk_agent_turn_cancelled(workspace: Workspace) -> None:
    workspace.add_profiles(sdk_agent())
    svc = workspace.service()
    async with await svc.sessions.connect("sdk-normal") as handle:
        recorder = Recorder(handle, None, cancel=True)
        results: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                results.append(await _turn(handle, recorder, "hi"))

            tg.start_soon(run)
            with anyio.fail_after(20):
                while not recorder.requests:
                    await anyio.sleep(0.02)
            handle.cancel()
        assert results[0].stop_reason == "cancelled"


async def test_no_permission_listener_means_cancelled_at_once(workspace: Workspace) -> None:
    workspace.add_profiles(sdk_agent())
    svc = workspace.service()
    async with await svc.sessions.connect("sdk-normal") as handle:
        seen: list[str] = []
        svc.subscribe(lambda state: seen.append(state[0].activity))
        with anyio.fail_after(20):
            result = await handle.prompt([{"type": "text", "text": "hi"}])
        assert result.stop_reason == "cancelled"
        assert "blocked" not in seen
