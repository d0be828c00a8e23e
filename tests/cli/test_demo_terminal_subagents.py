"""``python -m silo_nb demo``'s terminal view names a subagent's lines (issue 31, part 2): its announcement,
the messages between sessions, and its words under its own prefix, never run into the parent's."""

from __future__ import annotations

import io

from silo_nb.cli.demo import TerminalView
from silo_nb.model import AgentContentBlock, AgentSessionUpdate


def chunk(text: str, child: str | None = None) -> AgentSessionUpdate:
    block = AgentContentBlock(type="text", text=text)
    return AgentSessionUpdate(kind="agent_message_chunk", text=text, content=block, child_session_id=child)


def test_a_subagent_s_lines_say_whose_they_are() -> None:
    out = io.StringIO()
    view = TerminalView(out)
    announce = {"sessionUpdate": "subagent_update", "sessionId": "kid-1", "title": "Explorer"}
    view.show(chunk("Delegating. "))
    view.show(AgentSessionUpdate(kind="subagent_update", raw={**announce, "state": {"state": "running"}}))
    message = {"sessionUpdate": "session_message", "content": [{"type": "text", "text": "Look around"}]}
    view.show(AgentSessionUpdate(kind="session_message", raw=message))
    view.show(chunk("I looked.", "kid-1"))
    view.show(chunk("Thanks."))
    view.finish()
    assert out.getvalue().splitlines()[1:] == [
        "agent> Delegating. ",
        "  [subagent kid-1] Explorer · running",
        "  [message] Look around",
        "",
        "subagent kid-1> I looked.",
        "",
        "agent> Thanks.",
    ]
