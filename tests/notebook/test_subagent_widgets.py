"""The live turn's subagents (issue 31, part 2): a child that offers ``cancel`` gets its own Stop while it
works, which calls ``on_stop_child`` with its session id once (the parent's turn goes on); a child's
permission row says which child asks."""

from __future__ import annotations

from typing import Any

from silo_nb.model import AgentPermissionOption, AgentPermissionRequest, AgentSessionUpdate
from silo_nb.notebook.widgets import PermissionRow, TurnView
from tests.notebook.widget_utils import Sent, frontend_click


def announce(child: str, **raw: Any) -> AgentSessionUpdate:
    return AgentSessionUpdate(
        kind="subagent_update", raw={"sessionUpdate": "subagent_update", "sessionId": child, **raw}
    )


async def test_a_child_that_offers_cancel_gets_its_own_stop(comms: list[Sent]) -> None:
    stopped: list[str] = []
    view = TurnView(label="Demo", on_stop=lambda: None, on_stop_child=stopped.append, throttle=0.0)
    view.transcript.apply(
        announce("c1", title="Explorer", capabilities={"cancel": {}}, state={"state": "running"})
    )
    view.transcript.apply(announce("c2", title="No cancel", state={"state": "running"}))
    view.flush()
    buttons = view.child_stop_buttons
    assert set(buttons) == {"c1"} and buttons["c1"].description == "Stop Explorer"
    assert "Explorer" in view.html and "No cancel" in view.html
    frontend_click(buttons["c1"])
    assert stopped == ["c1"] and buttons["c1"].disabled and buttons["c1"].description == "Stopping Explorer…"
    assert view.stop_child("c1") is False and view.stop_child("c2") is False and stopped == ["c1"]
    assert view.running and not view.stop_button.disabled  # the parent's turn goes on
    view.transcript.apply(announce("c1", state={"state": "idle"}))
    view.flush()
    assert buttons["c1"].layout.display == "none"  # an idle child has nothing to stop
    view.transcript.set_status("finished")
    view.close_all()


async def test_a_child_s_reply_streams_live_and_the_ended_view_is_the_saved_one(comms: list[Sent]) -> None:
    """The live view draws a child's entries as its own (a long reply cut while it streams); once the turn
    ends it is exactly the saved bundle, so the cell does not jump."""
    from silo_nb.model import AgentContentBlock
    from silo_nb.notebook.render import static_bundle
    from silo_nb.notebook.render.live_entries import LIVE_MESSAGE_CHARS

    view = TurnView(label="Demo", throttle=0.0)
    view.transcript.apply(announce("c1", title="Explorer", state={"state": "running"}))
    long_text = ("word " * 40 + "\n\n") * (LIVE_MESSAGE_CHARS // 150)  # paragraphs: blocks complete
    chunk = AgentSessionUpdate(
        kind="agent_message_chunk",
        text=long_text,
        content=AgentContentBlock(type="text", text=long_text),
        message_id="m1",
        child_session_id="c1",
    )
    view.transcript.apply(chunk)
    view.flush()
    assert view.body.cut and "the rest of this reply shows when the turn ends" in view.html
    view.transcript.set_status("finished", stop_reason="end_turn")
    saved = static_bundle(view.state, metadata={}, title="", label=view.label)[0]["text/html"]
    assert view.html == saved and saved.count("<p ") >= LIVE_MESSAGE_CHARS // 150
    view.close_all()


async def test_no_child_stop_without_a_callback(comms: list[Sent]) -> None:
    view = TurnView(label="Demo", throttle=0.0)
    view.transcript.apply(announce("c1", capabilities={"cancel": {}}))
    view.flush()
    assert view.child_stop_buttons == {} and view.stop_child("c1") is False
    view.close_all()


def test_a_child_s_permission_row_names_the_child(comms: list[Sent]) -> None:
    request = AgentPermissionRequest(
        tool_call_id="t",
        title="Edit notes.md",
        options=(AgentPermissionOption(option_id="a", name="Allow", kind="allow_once"),),
        child_session_id="c1",
        child_title="Explorer <b>",
    )
    row = PermissionRow(request)
    assert row.title_html.value.startswith("<b>Explorer &lt;b&gt;</b> asks — <b>Permission:</b>")
    row.close()
