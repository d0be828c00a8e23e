"""``subagent``: the demo agent hands part of a turn to a child session (ACP v1.25 subagents, unstable).

- Only for a client that advertises ``subagents`` (as Claude's and Codex's adapters do): otherwise it says
  so and does the work itself.
- The parent announces the child (``subagent_update``: title, description, ``cancel`` offered, running,
  its folder) and sends it its task (a ``session_message``, parent → child); the child's own traffic comes
  under its session id (a thought, a tool call that lists the folder, a permission request asked under its
  id, its reply); then the child goes idle and its report comes back (child → parent).
- A ``session/cancel`` naming the child stops the child at its next step (``Session.children``): it goes
  idle with ``stopReason: cancelled`` and the parent's turn goes on.
- The child's updates are not kept in the parent's history (``session/load`` replays the parent's only).
"""

from __future__ import annotations

import asyncio
import os
from typing import Protocol

from silo_nb_agents.demo.client_tools import ClientTools, Peer
from silo_nb_agents.demo.rpc_endpoint import JsonObject
from silo_nb_agents.demo.session_store import Session

__all__ = ["ChildStopped", "run_subagent"]

TASK = "Look around the session's folder and tell me what is there."


class ChildStopped(Exception):
    """The client stopped the child (``session/cancel`` with its id)."""


class Script(Protocol):
    """What this step needs of a turn script."""

    peer: Peer
    session: Session
    client: ClientTools
    delay: float

    async def emit(self, update: JsonObject, pause: float | None = None) -> None: ...

    async def say(self, text: str, parts: int = 1) -> None: ...

    async def pause(self, seconds: float) -> None: ...

    async def permission(self, tool_call: JsonObject, *, session_id: str | None = None) -> bool: ...


def _text(text: str) -> list[JsonObject]:
    return [{"type": "text", "text": text}]


async def run_subagent(script: Script) -> None:
    """The child's whole life inside this turn (see the module docstring)."""
    if not script.client.subagents:
        await script.say(
            "I would hand this to a subagent, but this client does not show subagents (it does not "
            "advertise `subagents`), so I looked around myself."
        )
        return
    session = script.session
    child_id = f"{session.session_id}-child-{len(session.children) + 1}"
    stopped = session.children[child_id] = asyncio.Event()
    task_id = session.next_id("task")
    await script.emit(
        {
            "sessionUpdate": "subagent_update",
            "sessionId": child_id,
            "title": "Explorer",
            "description": "looks around the folder for the parent",
            "capabilities": {"cancel": {}},
            "state": {"state": "running"},
            "cwd": session.cwd,
        }
    )
    await script.emit(
        {
            "sessionUpdate": "session_message",
            "messageId": task_id,
            "senderSessionId": session.session_id,
            "recipientSessionId": child_id,
            "content": _text(TASK),
        }
    )
    try:
        report = await _child_work(script, child_id, stopped)
        state: JsonObject = {"state": "idle", "stopReason": "end_turn"}
    except ChildStopped:
        report, state = "I was stopped before I finished.", {"state": "idle", "stopReason": "cancelled"}
    finally:
        session.children.pop(child_id, None)
    await script.emit({"sessionUpdate": "subagent_update", "sessionId": child_id, "state": state})
    await script.emit(
        {
            "sessionUpdate": "session_message",
            "messageId": f"{task_id}-reply",
            "senderSessionId": child_id,
            "recipientSessionId": session.session_id,
            "content": _text(report),
        }
    )
    await script.say("The subagent reported back (above).")


async def _child_work(script: Script, child_id: str, stopped: asyncio.Event) -> str:
    session = script.session

    async def child_says(update: JsonObject) -> None:
        await script.pause(script.delay)
        if stopped.is_set():
            raise ChildStopped
        await script.peer.notify("session/update", {"sessionId": child_id, "update": update})

    think_id, reply_id, call_id = (session.next_id(prefix) for prefix in ("think", "msg", "call"))
    thought = {"type": "text", "text": "Listing the folder first."}
    await child_says({"sessionUpdate": "agent_thought_chunk", "messageId": think_id, "content": thought})
    call: JsonObject = {
        "toolCallId": call_id,
        "title": "List the folder",
        "kind": "read",
        "status": "pending",
        "locations": [{"path": session.cwd}],
    }
    await child_says({"sessionUpdate": "tool_call", **call})
    try:
        allowed = await script.permission(call, session_id=child_id)
    except Exception:  # the request answered cancelled: the child's Stop, or the whole turn's
        if stopped.is_set():
            raise ChildStopped from None
        raise
    if stopped.is_set():
        raise ChildStopped
    if not allowed:
        await child_says({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed"})
        return "I was not allowed to list the folder."
    try:
        names = sorted(name for name in os.listdir(session.cwd) if not name.startswith("."))[:8]
    except OSError as exc:
        names = [f"(could not list it: {exc.strerror})"]
    listing = "\n".join(names) or "(empty)"
    content = [{"type": "content", "content": {"type": "text", "text": listing}}]
    update = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed"}
    await child_says({**update, "content": content})
    report = f"The folder holds {len(names)} visible entr{'y' if len(names) == 1 else 'ies'}."
    await child_says(
        {"sessionUpdate": "agent_message_chunk", "messageId": reply_id, "content": _text(report)[0]}
    )
    return report
