"""A fake agent written with the official Python SDK (``agent-client-protocol``, a test-only dependency).

Modes (argv[1]):
- ``normal``: a turn streams one chunk, opens an edit tool call, asks permission, then finishes.
- ``auth``: ``session/new`` fails with the SDK's "Authentication required" (-32000) and a hint in data.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from typing import Any

import acp
from acp import helpers
from acp.schema import AgentCapabilities, Implementation, PermissionOption, ToolCallUpdate

MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"


class FakeAgent:
    def __init__(self) -> None:
        self._conn: Any = None
        self._cancelled: set[str] = set()

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> acp.InitializeResponse:
        return acp.InitializeResponse(
            protocol_version=1,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name="sdk-fake", title="SDK fake agent", version="1.0"),
        )

    async def new_session(self, cwd: str, **_: Any) -> acp.NewSessionResponse:
        if MODE == "auth":
            raise acp.RequestError.auth_required({"details": "sign in with `sdk-fake login` first"})
        return acp.NewSessionResponse(session_id=f"sdk-{uuid.uuid4().hex[:8]}")

    async def cancel(self, session_id: str, **_: Any) -> None:
        self._cancelled.add(session_id)

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> acp.PromptResponse:
        self._cancelled.discard(session_id)
        text = "".join(getattr(block, "text", "") for block in prompt)
        await self._conn.session_update(session_id, helpers.update_agent_message_text(f"You said: {text}"))
        await self._conn.session_update(
            session_id,
            helpers.start_tool_call("edit-1", "Edit notes.txt", kind="edit", status="pending"),
        )
        answer = await self._conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="edit-1", title="Edit notes.txt", kind="edit"),
            options=[
                PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                PermissionOption(option_id="no", name="Deny", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        if getattr(outcome, "outcome", None) == "cancelled" or session_id in self._cancelled:
            return acp.PromptResponse(stop_reason="cancelled")
        chosen = getattr(outcome, "option_id", "")
        status = "completed" if chosen == "yes" else "failed"
        await self._conn.session_update(session_id, helpers.update_tool_call("edit-1", status=status))
        await self._conn.session_update(session_id, helpers.update_agent_message_text(f"Answer: {chosen}"))
        return acp.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(FakeAgent()))
