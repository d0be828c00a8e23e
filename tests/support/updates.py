"""Updates as a session makes them: agent traffic parsed as the client parses it, the user prompt as
the session synthesizes it."""

from __future__ import annotations

from typing import Any

from silo_nb.model import AgentContentBlock, AgentSessionUpdate
from silo_nb.updates.parse import parse_update


def wire(kind: str, /, **fields: Any) -> AgentSessionUpdate:
    update = parse_update({"sessionUpdate": kind, **fields})
    assert update is not None
    return update


def say(text: str, message_id: str | None = "m1", kind: str = "agent_message_chunk") -> AgentSessionUpdate:
    return wire(kind, messageId=message_id, content={"type": "text", "text": text})


def prompt(text: str, n: int = 1) -> AgentSessionUpdate:
    """The user prompt as a session synthesizes it (``sessions/session/prompt_blocks.prompt_line``)."""
    return AgentSessionUpdate(
        kind="user_message_chunk",
        text=text,
        content=AgentContentBlock(type="text", text=text),
        message_id=f"silo-journal-user-{n}",
        raw={"synthesized": True},
    )
