"""A scripted agent's turn with a subagent (ACP v1.25, issue 31 part 2), for the session and notebook tests:
the parent speaks, announces ``child-1`` (cancellable, running), messages it, the child speaks and asks a
permission under its own id (and sends a title of its own), an unannounced ``ghost-9`` speaks, the child
goes idle and the parent finishes."""

from __future__ import annotations

from typing import Any

from tests.agents.scripted import Peer

OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]
ASK = {"toolCall": {"toolCallId": "w1", "title": "Write notes.md", "kind": "edit"}, "options": OPTIONS}
CHILD = "child-1"


def chunk(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


async def delegate(peer: Peer, answers: list[Any]) -> None:
    await peer.update(chunk("Delegating."))
    await peer.update(
        {
            "sessionUpdate": "subagent_update",
            "sessionId": CHILD,
            "title": "Explorer",
            "capabilities": {"cancel": {}},
            "state": {"state": "running"},
            "cwd": "/work",
        }
    )
    await peer.update(
        {
            "sessionUpdate": "session_message",
            "messageId": "s1",
            "senderSessionId": peer.session_id,
            "recipientSessionId": CHILD,
            "content": [{"type": "text", "text": "Look around"}],
        }
    )
    await peer.update(
        {
            "sessionUpdate": "session_message_chunk",
            "messageId": "s1",
            "content": {"type": "text", "text": "!"},
        }
    )
    await peer.update(chunk("Child here, "), session_id=CHILD)
    await peer.update({"sessionUpdate": "session_info_update", "title": "CHILD TITLE"}, session_id=CHILD)
    answers.append(await peer.ask_permission(ASK, session_id=CHILD))
    await peer.update(chunk("done."), session_id=CHILD)
    await peer.update(chunk("Who am I?"), session_id="ghost-9")
    await peer.update({"sessionUpdate": "subagent_update", "sessionId": CHILD, "state": {"state": "idle"}})
    await peer.update(chunk("All done."))
