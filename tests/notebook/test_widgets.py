"""The widgets, in-process: every widget message is recorded, clicks and changes arrive as the frontend
sends them (``_handle_msg``) or through the Python twins. No kernel, no browser."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import silo_nb
from silo_nb.model.agent_requests import AgentPermissionOption, AgentPermissionRequest
from silo_nb.model.errors import AgentSessionError
from silo_nb.model.models import (
    AgentCommand,
    AgentCommandInput,
    AgentContentBlock,
    AgentInfo,
    AgentSessionConfigChoice,
    AgentSessionConfigOption,
    AgentSessionUpdate,
    AgentToolCall,
)
from silo_nb.notebook.widgets import AgentsList, PermissionRow, SessionPanel, Throttle, Ticker, TurnView
from silo_nb.notebook.widgets.snapshot_views import option_values
from silo_nb.sessions.session.permission_desk import PermissionDesk
from silo_nb.updates.transcript import PermissionEntry
from tests.notebook.widget_utils import (
    Sent,
    closed_comms,
    frontend_click,
    frontend_update,
    state_updates,
    tree_ids,
)


def chunk(text: str, *, message_id: str = "m1", kind: str = "agent_message_chunk") -> AgentSessionUpdate:
    return AgentSessionUpdate(
        kind=kind, text=text, content=AgentContentBlock(type="text", text=text), message_id=message_id
    )


def permission_request(responses: list[str | None] | None = None) -> AgentPermissionRequest:
    request = AgentPermissionRequest(
        tool_call_id="call-1",
        title="Edit notes.md",
        options=(
            AgentPermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            AgentPermissionOption(option_id="yes-all", name="Allow all edits", kind="allow_always"),
            AgentPermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ),
        tool_call=AgentToolCall(tool_call_id="call-1", title="Edit notes.md", kind="edit"),
    )
    return request.attach_answers(RecordingAnswers(responses))


class RecordingAnswers:
    """A stand-in for a session's permission desk: keeps the first answer per request."""

    def __init__(self, responses: list[str | None] | None = None) -> None:
        self.responses = responses if responses is not None else []
        self._outcomes: dict[str, str | None] = {}

    def settle(self, request_id: str, option_id: str | None) -> None:
        if request_id not in self._outcomes:
            self._outcomes[request_id] = option_id
            self.responses.append(option_id)

    def outcome(self, request_id: str) -> tuple[bool, str | None]:
        return request_id in self._outcomes, self._outcomes.get(request_id)


def prompt_update(text: str) -> AgentSessionUpdate:
    """The synthesized user prompt a handle records before sending a turn."""
    return AgentSessionUpdate(
        kind="user_message_chunk",
        text=text,
        content=AgentContentBlock(type="text", text=text),
        message_id="silo-journal-user-1",
        raw={"synthesized": True},
    )


def desk_feeding(view: TurnView) -> PermissionDesk:
    """A real permission desk wired to a view as a handle wires it (transcript lines + buttons)."""
    desk = PermissionDesk(record=view.transcript.apply, on_blocked=lambda: None, on_answered=lambda: None)
    desk.listeners.add(view.add_permission)
    return desk


EDIT_PERMISSION = {
    "sessionId": "s1",
    "toolCall": {"toolCallId": "call-1", "title": "Edit notes.md", "kind": "edit"},
    "options": [
        {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
        {"optionId": "yes-all", "name": "Allow all edits", "kind": "allow_always"},
        {"optionId": "no", "name": "Reject", "kind": "reject_once"},
    ],
}


# -- Throttle / Ticker -----------------------------------------------------------------------------


def test_throttle_without_a_loop_calls_at_once() -> None:
    calls: list[int] = []
    throttle = Throttle(10.0, lambda: calls.append(1))
    throttle.poke()
    throttle.poke()
    assert calls == [1, 1]
    assert not throttle.pending


async def test_throttle_coalesces_a_burst_and_spaces_runs() -> None:
    calls: list[float] = []
    loop = asyncio.get_running_loop()
    throttle = Throttle(0.05, lambda: calls.append(loop.time()))
    for _ in range(100):
        throttle.poke()
    assert calls == [] and throttle.pending  # nothing runs inside the burst
    await asyncio.sleep(0)
    assert len(calls) == 1  # the first run after a quiet spell is immediate
    throttle.poke()
    await asyncio.sleep(0.01)
    assert len(calls) == 1  # the next one waits for the interval
    await asyncio.sleep(0.08)
    assert len(calls) == 2
    assert calls[1] - calls[0] >= 0.045


async def test_throttle_flush_and_cancel() -> None:
    calls: list[int] = []
    throttle = Throttle(0.05, lambda: calls.append(1))
    throttle.flush()
    assert calls == []  # nothing pending, nothing to run
    throttle.poke()
    throttle.flush()
    assert calls == [1]
    await asyncio.sleep(0.08)
    assert calls == [1]  # the flushed run is not repeated by the timer
    throttle.poke()
    throttle.cancel()
    await asyncio.sleep(0.08)
    assert calls == [1] and not throttle.pending


async def test_throttle_logs_callback_errors(caplog: pytest.LogCaptureFixture) -> None:
    def boom() -> None:
        raise RuntimeError("render failed")

    throttle = Throttle(0.01, boom)
    throttle.poke()
    await asyncio.sleep(0.02)
    assert any("throttled" in r.getMessage() and r.name == "silo_nb.notebook" for r in caplog.records)


async def test_ticker_ticks_until_stopped() -> None:
    ticks: list[int] = []
    ticker = Ticker(0.01, lambda: ticks.append(1))
    ticker.start()
    ticker.start()  # idempotent
    await asyncio.sleep(0.1)
    ticker.stop()
    count = len(ticks)
    assert 2 <= count <= 10
    await asyncio.sleep(0.03)
    assert len(ticks) == count and not ticker.running


def test_ticker_without_a_loop_does_nothing() -> None:
    ticker = Ticker(0.01, lambda: None)
    ticker.start()
    assert not ticker.running


# -- PermissionRow ---------------------------------------------------------------------------------


def test_a_request_with_ten_thousand_options_shows_a_bounded_row(comms: list[Sent]) -> None:
    """Issue 21, item 5: one button per option froze the kernel 12 s at 10,000 (a widget each); the row
    shows the first few, says how many more, and any of them can still be answered from Python."""
    from silo_nb.notebook.widgets.permission_row import MAX_OPTION_BUTTONS

    responses: list[str | None] = []
    options = tuple(
        AgentPermissionOption(option_id=f"o{i}", name=f"Option {i}", kind="allow_once") for i in range(10_000)
    )
    request = AgentPermissionRequest(tool_call_id="c", title="Pick", options=options).attach_answers(
        RecordingAnswers(responses)
    )
    row = PermissionRow(request)
    assert len(row.buttons) == MAX_OPTION_BUTTONS
    assert f"{10_000 - MAX_OPTION_BUTTONS:,} more options" in row.more_html.value
    # bounded widgets, whatever the agent sent: one per button (the buttons share a layout and a style)
    assert len(comms) <= MAX_OPTION_BUTTONS + 10
    assert row.choose("o9999") and responses == ["o9999"]
    assert "Option 9999" in row.status_html.value


def test_permission_row_shows_the_agents_own_options(comms: list[Sent]) -> None:
    row = PermissionRow(permission_request())
    labels = [b.description for b in row.buttons.values()]
    assert labels == ["Allow", "Allow all edits (always)", "Reject"]
    assert row.buttons["yes-all"].tooltip == "Grants a lasting permission"
    assert "(always)" not in row.buttons["yes"].description
    assert [b.button_style for b in row.buttons.values()] == ["success", "warning", "danger"]
    assert "Edit notes.md" in row.title_html.value
    assert all(not b.disabled for b in row.buttons.values())


def test_a_lasting_option_already_named_always_is_not_marked_twice(comms: list[Sent]) -> None:
    request = AgentPermissionRequest(
        tool_call_id="c1",
        title="Edit",
        options=(AgentPermissionOption(option_id="a", name="Always allow", kind="allow_always"),),
    )
    row = PermissionRow(request)
    assert row.buttons["a"].description == "Always allow"
    assert row.buttons["a"].tooltip == "Grants a lasting permission"


def test_permission_row_click_answers_once(comms: list[Sent]) -> None:
    responses: list[str | None] = []
    answered: list[AgentPermissionRequest] = []
    request = permission_request(responses)
    row = PermissionRow(request, on_answer=answered.append)

    frontend_click(row.buttons["yes"])

    assert responses == ["yes"] and request.answer == "yes"
    assert answered == [request]
    assert all(b.disabled for b in row.buttons.values())
    for button in row.buttons.values():
        assert state_updates(comms, button, "disabled") == [True]  # the browser was told
    assert "✓ Allowed once" in row.status_html.value and "Allow" in row.status_html.value
    assert state_updates(comms, row.status_html, "value")

    before = len(comms)
    frontend_click(row.buttons["no"])  # a late click on a disabled-looking button
    assert row.choose("no") is False
    assert responses == ["yes"] and request.answer == "yes" and answered == [request]
    assert len(comms) == before  # nothing changed, nothing sent


def test_permission_row_choose_is_the_click_twin(comms: list[Sent]) -> None:
    answered: list[AgentPermissionRequest] = []
    request = permission_request()
    row = PermissionRow(request, on_answer=answered.append)
    assert row.choose("yes-all") is True
    assert request.answer == "yes-all" and row.choice is not None and row.choice.name == "Allow all edits"
    assert "✓ Allowed always" in row.status_html.value
    assert row.buttons["yes-all"].icon == "check"
    frontend_click(row.buttons["yes"])
    assert request.answer == "yes-all" and len(answered) == 1
    with pytest.raises(ValueError, match="not one of"):
        row.choose("maybe")


def test_permission_row_refresh_after_external_cancel(comms: list[Sent]) -> None:
    answered: list[AgentPermissionRequest] = []
    request = permission_request()
    row = PermissionRow(request, on_answer=answered.append)
    request.respond("not-an-option")  # settled elsewhere: cancelled (as handle.cancel() does)
    row.refresh()
    assert all(b.disabled for b in row.buttons.values())
    assert "cancelled" in row.status_html.value
    assert answered == [request]
    frontend_click(row.buttons["yes"])
    assert request.answer is None and answered == [request]


def test_permission_row_for_an_already_answered_request(comms: list[Sent]) -> None:
    request = permission_request()
    request.respond("no")
    row = PermissionRow(request)
    assert all(b.disabled for b in row.buttons.values())
    assert "✗ Rejected once" in row.status_html.value


# -- TurnView --------------------------------------------------------------------------------------


def body_updates(sent: list[Sent], view: TurnView) -> list[str]:
    """Every HTML value sent for the view's transcript box (header, segments, footer), in order."""
    ids = {child.model_id for child in view.body.box.children}
    return [
        data["state"]["value"]
        for msg_type, comm_id, data in sent
        if msg_type == "comm_msg" and comm_id in ids and data and "value" in data.get("state", {})
    ]


async def test_turn_view_throttles_a_burst_of_chunks(comms: list[Sent]) -> None:
    view = TurnView(label="Demo", throttle=0.05)
    view.transcript.apply(prompt_update("please summarise"))
    view.flush()
    assert "please summarise" in view.html
    for i in range(500):
        view.transcript.apply(chunk(f"word{i} "))
        if i % 25 == 0:
            await asyncio.sleep(0)  # the agent's reader yields now and then
    view.flush()
    renders = body_updates(comms, view)
    assert 1 <= len(renders) <= 8, len(renders)
    assert "word499" in view.html and "word499" in renders[-1]
    assert view.state.reply_text.startswith("word0 word1 ")
    view.close_all()


async def test_turn_view_paces_a_steady_stream(comms: list[Sent]) -> None:
    loop = asyncio.get_running_loop()
    view = TurnView(label="Demo", throttle=0.05)
    started = loop.time()
    for i in range(100):
        view.transcript.apply(chunk(f"w{i} "))
        await asyncio.sleep(0.002)  # ~500 chunks per second
    duration = loop.time() - started
    renders = len(body_updates(comms, view))
    assert renders <= duration / 0.05 + 2, (renders, duration)
    view.flush()
    assert "w99" in view.html
    view.close_all()


async def test_turn_view_renders_with_no_flush_once_the_interval_passes(comms: list[Sent]) -> None:
    view = TurnView(label="Demo", throttle=0.02)
    view.transcript.apply(chunk("hello"))
    view.transcript.apply(chunk(" there"))
    await asyncio.sleep(0.05)
    assert "hello there" in view.html
    view.close_all()


async def test_turn_view_status_and_stop(comms: list[Sent]) -> None:
    stops: list[int] = []
    view = TurnView(label="Demo agent", on_stop=lambda: stops.append(1))
    assert view.running and not view.stop_button.disabled
    badge_running = view.badge.value
    assert "Demo agent" in view.html  # the header row, inside the transcript box

    frontend_click(view.stop_button)
    assert stops == [1] and view.stop_button.disabled
    frontend_click(view.stop_button)
    assert view.stop() is False and stops == [1]

    view.transcript.apply(chunk("partial"))
    view.transcript.set_status("cancelled", stop_reason="cancelled")
    assert view.state.status == "cancelled" and view.state.stop_reason == "cancelled"
    assert not view.running and view.stop_button.disabled
    assert "partial" in view.html  # rendered at once, no flush needed
    assert view.badge.value != badge_running
    assert not view._ticker.running
    view.close_all()


async def test_turn_view_stop_twin_and_failed_status(comms: list[Sent]) -> None:
    stops: list[int] = []
    view = TurnView(label="Demo", on_stop=lambda: stops.append(1))
    assert view.stop() is True and view.stop() is False and stops == [1]
    view.transcript.set_status("failed", error="the agent crashed")
    assert view.state.error == "the agent crashed"
    assert "the agent crashed" in view.html
    view.close_all()


def test_turn_view_without_on_stop(comms: list[Sent]) -> None:
    view = TurnView(label="Demo")
    assert view.stop_button.disabled and view.stop() is False
    view.transcript.set_status("finished", stop_reason="end_turn")
    assert view.elapsed >= 0 and view.state.status == "finished"
    view.close_all()


async def row_shown(view: TurnView) -> None:
    """The desk reads, records and shows a request in separate steps of the loop: let them run."""
    for _ in range(20):
        if view.rows:
            return
        await asyncio.sleep(0)


async def test_turn_view_permission_is_recorded_in_the_transcript(comms: list[Sent]) -> None:
    view = TurnView(label="Demo")
    desk = desk_feeding(view)
    asked = asyncio.create_task(desk.ask(EDIT_PERMISSION, open_=True))
    await row_shown(view)
    assert len(view.rows) == 1 and view.rows[0] in view.permissions.children
    entry = view.state.entries[-1]
    assert isinstance(entry, PermissionEntry) and not entry.answered
    assert "blocked" in view.badge.value

    frontend_click(view.rows[0].buttons["yes"])
    assert await asked == {"outcome": {"outcome": "selected", "optionId": "yes"}}
    view.flush()
    entries = [e for e in view.state.entries if isinstance(e, PermissionEntry)]
    assert len(entries) == 1 and entries[0].answered and entries[0].choice_name == "Allow"
    assert "working" in view.badge.value and "Edit notes.md" in view.html
    view.transcript.set_status("finished", stop_reason="end_turn")
    view.close_all()


async def test_turn_view_permission_answered_by_a_listener_shows_once(comms: list[Sent]) -> None:
    """Regression (issue 7): a request answered by an ``on_permission`` listener registered before the
    view's showed twice in the live transcript."""
    view = TurnView(label="Demo")
    desk = PermissionDesk(record=view.transcript.apply, on_blocked=lambda: None, on_answered=lambda: None)
    desk.listeners.add(lambda request: request.respond("yes"))
    desk.listeners.add(view.add_permission)
    assert await desk.ask(EDIT_PERMISSION, open_=True) == {
        "outcome": {"outcome": "selected", "optionId": "yes"}
    }
    view.flush()
    entries = [e for e in view.state.entries if isinstance(e, PermissionEntry)]
    assert len(entries) == 1 and entries[0].choice == "yes"
    assert view.rows == ()  # nothing left to click
    assert view.html.count("Permission:") == 1
    view.close_all()


async def test_turn_view_pending_permission_shows_cancelled_when_the_turn_ends(comms: list[Sent]) -> None:
    view = TurnView(label="Demo")
    desk = desk_feeding(view)
    asked = asyncio.create_task(desk.ask(EDIT_PERMISSION, open_=True))
    await row_shown(view)
    desk.cancel_all()  # the handle settles pending requests when the turn is cancelled
    assert await asked == {"outcome": {"outcome": "cancelled"}}
    view.transcript.set_status("cancelled", stop_reason="cancelled")
    row = view.rows[0]
    assert all(b.disabled for b in row.buttons.values()) and "cancelled" in row.status_html.value
    entry = next(e for e in view.state.entries if isinstance(e, PermissionEntry))
    assert entry.answered and entry.choice is None
    view.close_all()


async def test_turn_view_close_all_closes_every_comm(comms: list[Sent]) -> None:
    view = TurnView(label="Demo", on_stop=lambda: None)
    view.add_permission(permission_request())  # a request the view was handed directly still gets a row
    view.transcript.apply(chunk("text"))
    ids = tree_ids(view)
    assert len(ids) > 10
    view.close_all()
    assert ids <= closed_comms(comms)
    assert not view._ticker.running and not view._throttle.pending
    view.transcript.apply(chunk("late"))  # after close: folded, never rendered, no error
    await asyncio.sleep(0.15)


# -- SessionPanel ----------------------------------------------------------------------------------


class FakeDisposable:
    def __init__(self, listeners: list[Any], listener: Any) -> None:
        self._listeners = listeners
        self._listener = listener
        self.disposed = False

    def dispose(self) -> None:
        self.disposed = True
        if self._listener in self._listeners:
            self._listeners.remove(self._listener)


class FakeHandle:
    """What SessionPanel uses of AgentSessionHandle, with a set_config_option that can be made to fail."""

    def __init__(
        self, options: tuple[AgentSessionConfigOption, ...], commands: tuple[AgentCommand, ...]
    ) -> None:
        self.id = "entry-1"
        self.agent_name = "Fake agent"
        self.session_id = "sess-123"
        self.config_options = options
        self.commands = commands
        self.calls: list[tuple[str, Any]] = []
        self.reject: Exception | None = None
        self.update_listeners: list[Callable[[AgentSessionUpdate], None]] = []
        self.config_listeners: list[Callable[[], None]] = []
        self.command_listeners: list[Callable[[], None]] = []
        self.disposables: list[FakeDisposable] = []

    async def set_config_option(self, option_id: str, value: Any) -> None:
        self.calls.append((option_id, value))
        await asyncio.sleep(0)  # a round trip to the agent
        if self.reject is not None:
            raise self.reject
        self.config_options = tuple(
            o.model_copy(update={"current_value": value}) if o.id == option_id else o
            for o in self.config_options
        )
        self.fire_config()

    def _add(self, listeners: list[Any], listener: Any) -> FakeDisposable:
        listeners.append(listener)
        disposable = FakeDisposable(listeners, listener)
        self.disposables.append(disposable)
        return disposable

    def on_transcript(self, listener: Callable[[AgentSessionUpdate], None]) -> FakeDisposable:
        return self._add(self.update_listeners, listener)

    def on_config_options_changed(self, listener: Callable[[], None]) -> FakeDisposable:
        return self._add(self.config_listeners, listener)

    def on_commands_changed(self, listener: Callable[[], None]) -> FakeDisposable:
        return self._add(self.command_listeners, listener)

    def emit(self, update: AgentSessionUpdate) -> None:
        for listener in list(self.update_listeners):
            listener(update)

    def fire_config(self) -> None:
        for listener in list(self.config_listeners):
            listener()

    def fire_commands(self) -> None:
        for listener in list(self.command_listeners):
            listener()


MODE = AgentSessionConfigOption(
    id="mode",
    name="Mode",
    category="mode",
    type="select",
    current_value="ask",
    options=(
        AgentSessionConfigChoice(value="ask", name="Ask"),
        AgentSessionConfigChoice(value="code", name="Code"),
        AgentSessionConfigChoice(value="architect", name="Architect"),
    ),
)
THINKING = AgentSessionConfigOption(id="thinking", name="Thinking", type="boolean", current_value=False)
EXOTIC = AgentSessionConfigOption(id="temperature", name="Temperature", type="number", current_value=0.5)
COMMANDS = (
    AgentCommand(
        name="explain", description="Explain some code", input=AgentCommandInput(hint="what to explain")
    ),
    AgentCommand(name="compact", description="Compact the conversation"),
)


@pytest.fixture
def service(tmp_path: Path) -> silo_nb.AgentsService:
    svc = silo_nb.AgentsService(workspace_dir=tmp_path, config_dirs=[], data_dir=tmp_path / "data")
    return svc


def register(service: silo_nb.AgentsService, entry_id: str, title: str, agent: str = "Fake agent") -> None:
    service.board.register(
        AgentInfo(
            id=entry_id,
            workspace_id=service.workspace_id,
            title=title,
            agent_name=agent,
            session_id="sess-123",
        )
    )


@pytest.fixture
def handle() -> FakeHandle:
    return FakeHandle((MODE, THINKING, EXOTIC), COMMANDS)


@pytest.fixture
def panel(
    comms: list[Sent], handle: FakeHandle, service: silo_nb.AgentsService
) -> Iterator[tuple[SessionPanel, list[str]]]:
    register(service, handle.id, "Fix the parser")
    runs: list[str] = []
    widget = SessionPanel(handle, service, on_run=runs.append)
    yield widget, runs
    widget.close_all()


async def test_panel_shows_name_session_id_and_controls(
    panel: tuple[SessionPanel, list[str]], handle: FakeHandle
) -> None:
    widget, _runs = panel
    assert "Fake agent" in widget.name_html.value and "Fix the parser" in widget.name_html.value
    assert "sess-123" in widget.session_html.value
    assert set(widget.option_controls) == {"mode", "thinking"}  # "number" is not a type we draw
    dropdown = widget.option_controls["mode"]
    assert dropdown.description == "Mode"
    assert list(dropdown.options) == [("Ask", "ask"), ("Code", "code"), ("Architect", "architect")]
    assert dropdown.value == "ask"
    checkbox = widget.option_controls["thinking"]
    assert checkbox.description == "Thinking" and checkbox.value is False
    assert len(widget.controls.children) == 2


async def test_panel_dropdown_change_from_the_frontend(
    panel: tuple[SessionPanel, list[str]], handle: FakeHandle
) -> None:
    widget, _runs = panel
    dropdown = widget.option_controls["mode"]
    frontend_update(dropdown, index=1)  # what the browser sends: the index, not the value
    await widget.settled()
    assert handle.calls == [("mode", "code")]
    assert dropdown.value == "code" and widget.message.value == ""
    assert handle.config_options[0].current_value == "code"


async def test_panel_rejected_change_reverts_and_says_why(
    comms: list[Sent], panel: tuple[SessionPanel, list[str]], handle: FakeHandle
) -> None:
    widget, _runs = panel
    handle.reject = AgentSessionError('Fake agent rejected "Mode" = "architect": not in this plan')
    dropdown = widget.option_controls["mode"]
    frontend_update(dropdown, index=2)
    assert dropdown.value == "architect"  # until the agent answers
    await widget.settled()
    assert handle.calls == [("mode", "architect")]
    assert dropdown.value == "ask" and dropdown.index == 0
    assert state_updates(comms, dropdown, "index")[-1] == 0  # the browser was told to snap back
    assert "not in this plan" in widget.message.value and "Mode" in widget.message.value

    handle.reject = None
    await widget.select("mode", "code")
    assert dropdown.value == "code" and widget.message.value == ""


async def test_panel_select_twin_and_checkbox(
    panel: tuple[SessionPanel, list[str]], handle: FakeHandle
) -> None:
    widget, _runs = panel
    checkbox = widget.option_controls["thinking"]
    frontend_update(checkbox, value=True)
    await widget.settled()
    assert handle.calls == [("thinking", True)] and checkbox.value is True

    task = widget.select("thinking", False)
    assert checkbox.value is False  # the control shows the choice at once
    await task
    assert handle.calls[-1] == ("thinking", False)

    handle.reject = AgentSessionError("booleans are frozen")
    await widget.select("thinking", True)
    assert checkbox.value is False and "booleans are frozen" in widget.message.value


async def test_panel_rebuilds_when_the_agent_changes_its_options(
    panel: tuple[SessionPanel, list[str]], handle: FakeHandle
) -> None:
    widget, _runs = panel
    dropdown = widget.option_controls["mode"]
    dropdown_id = dropdown.model_id
    # Same options, new value (e.g. current_mode_update): synced in place, the agent is not asked.
    handle.config_options = (MODE.model_copy(update={"current_value": "architect"}), THINKING, EXOTIC)
    handle.fire_config()
    assert widget.option_controls["mode"] is dropdown and dropdown.value == "architect"
    assert handle.calls == []
    # A new option: the controls are rebuilt and the old ones closed.
    model = AgentSessionConfigOption(
        id="model",
        name="Model",
        category="model",
        type="select",
        current_value="big",
        options=(AgentSessionConfigChoice(value="big", name="Big"),),
    )
    handle.config_options = (MODE, model)
    handle.fire_config()
    assert set(widget.option_controls) == {"mode", "model"}
    assert dropdown.comm is None  # the old control was closed
    assert widget.option_controls["mode"].value == "ask"
    assert handle.calls == []
    assert dropdown_id not in {c.model_id for c in widget.controls.children}


def listed(widget: SessionPanel) -> str:
    """What the palette lists: each command's button and description."""
    return " ".join(
        f"{row.children[0].description} {row.children[1].value}" for row in widget.command_buttons.children
    )


def frontend_enter(text: Any) -> None:
    """What the browser sends when Enter is pressed in a ``Text``."""
    text._handle_msg(
        {"content": {"data": {"method": "custom", "content": {"event": "submit"}}}, "buffers": []}
    )


async def test_panel_command_palette_runs_slash_commands(
    comms: list[Sent], panel: tuple[SessionPanel, list[str]], handle: FakeHandle
) -> None:
    widget, runs = panel
    assert widget.command_box.options == ("/explain", "/compact")
    assert widget.command_box.ensure_option is False
    assert "/explain <span" in listed(widget) and "Explain some code" in listed(widget)
    assert "what to explain" in listed(widget)

    frontend_update(widget.command_box, value="/explain")
    assert widget.args_text.placeholder == "what to explain"
    frontend_update(widget.args_text, value="foo")
    frontend_click(widget.run_button)
    assert runs == ["/explain foo"]
    assert widget.args_text.value == ""

    assert widget.run("compact") == "/compact"
    assert widget.run("/explain", " bar ") == "/explain bar"
    assert runs == ["/explain foo", "/compact", "/explain bar"]

    frontend_update(widget.command_box, value="")
    frontend_click(widget.run_button)
    assert len(runs) == 3 and "Pick a command" in widget.message.value

    # Clicking a listed command fills the field; Enter in the arguments field runs it.
    frontend_click(widget.command_buttons.children[1].children[0])
    assert widget.command_box.value == "/compact" and widget.message.value == ""
    frontend_update(widget.args_text, value="now")
    frontend_enter(widget.args_text)
    assert runs[-1] == "/compact now" and widget.args_text.value == ""

    # A command the agent did not announce is refused, with the list; nothing is sent.
    frontend_update(widget.command_box, value="/nosuch")
    frontend_enter(widget.args_text)
    assert len(runs) == 4
    assert "/nosuch is not a command of Fake agent (commands: /explain, /compact)" in widget.message.value
    with pytest.raises(ValueError, match="/nosuch is not a command"):
        widget.run("nosuch")

    handle.commands = (AgentCommand(name="review", description="Review the diff"),)
    handle.fire_commands()
    assert widget.command_box.options == ("/review",)
    assert "Review the diff" in listed(widget) and "Explain" not in listed(widget)


def test_panel_shows_a_journal_problem_until_it_clears(
    panel: tuple[SessionPanel, list[str]], service: silo_nb.AgentsService, handle: FakeHandle
) -> None:
    widget, _runs = panel
    assert "journal" not in widget.session_html.value
    service.board.patch(handle.id, journal_problem="No space left on device <disk>")
    assert "⚠ journal: No space left on device &lt;disk&gt;" in widget.session_html.value
    service.board.patch(handle.id, journal_problem=None)
    assert "journal" not in widget.session_html.value


async def test_panel_status_badge_follows_the_service(
    panel: tuple[SessionPanel, list[str]], service: silo_nb.AgentsService, handle: FakeHandle
) -> None:
    widget, _runs = panel
    idle = widget.badge.value
    assert idle
    service.board.begin_turn(handle.id)
    working = widget.badge.value
    assert working != idle and "working" in working.lower()
    assert widget._ticker.running
    service.board.end_turn(handle.id, "finished")
    assert widget.badge.value != working and not widget._ticker.running


async def test_panel_background_updates_only_outside_turns(
    panel: tuple[SessionPanel, list[str]], handle: FakeHandle
) -> None:
    widget, _runs = panel
    assert widget.background.layout.display == "none"  # no empty box to expand
    widget.turn_active = True
    handle.emit(chunk("during the turn", message_id="t1"))
    widget.flush()
    assert widget.background_state.entries == ()
    assert widget.background.layout.display == "none"

    widget.turn_active = False
    handle.emit(chunk("working on my own", message_id="b1"))
    handle.emit(AgentSessionUpdate(kind="available_commands_update", raw={"availableCommands": []}))
    widget.flush()
    assert widget.background_state.reply_text == "working on my own"
    assert "working on my own" in widget.background.body.value
    assert widget.background.selected_index is None  # collapsed
    assert "(1)" in widget.background.titles[0]
    assert widget.background.layout.display is None  # shown now
    html, text = widget.snapshot()
    assert "Background activity (1)" in html and "working on my own" in html
    assert "working on my own" in text


def test_panel_and_agents_list_carry_a_static_snapshot(
    comms: list[Sent], panel: tuple[SessionPanel, list[str]], service: silo_nb.AgentsService
) -> None:
    """A saved notebook shows a readable snapshot, never ``SessionPanel(children=(…`` (issue 11)."""
    widget, _runs = panel
    bundle = widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # still the live widget
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == widget.model_id
    html, text = bundle["text/html"], bundle["text/plain"]
    assert "Children" not in text and "children=" not in text and "HTML(" not in text
    assert text.splitlines()[0].startswith("Fake agent · Fix the parser — ")
    assert "<b>Fake agent</b>" in html and "/explain" in html and "session" in text
    for name, value in option_values([o for o in widget.handle.config_options if o.type != "number"]):
        assert f"{name}: {value}" in text
    agents = AgentsList(service)
    bundle = agents._repr_mimebundle_()
    assert "Fix the parser" in bundle["text/html"] and "Fix the parser · Fake agent" in bundle["text/plain"]
    assert "AgentsList(" not in bundle["text/plain"]
    agents.close_all()


async def test_panel_close_all_disposes_everything(
    comms: list[Sent], handle: FakeHandle, service: silo_nb.AgentsService
) -> None:
    register(service, handle.id, "Fix the parser")
    widget = SessionPanel(handle, service)
    assert widget.run_button.disabled  # no on_run: nothing to run with
    ids = tree_ids(widget)
    widget.close_all()
    assert all(d.disposed for d in handle.disposables) and len(handle.disposables) == 3
    assert not handle.update_listeners and not handle.config_listeners and not handle.command_listeners
    assert not service.board._listeners[False]
    assert ids <= closed_comms(comms)
    service.board.begin_turn(handle.id)  # no listener left: nothing happens
    widget.close_all()  # idempotent


# -- AgentsList ------------------------------------------------------------------------------------


async def test_agents_list_rows_and_acknowledge(comms: list[Sent], service: silo_nb.AgentsService) -> None:
    agents = AgentsList(service)
    assert agents.rows == {} and agents.empty in agents.children

    register(service, "a", "Fix the parser", "Claude")
    register(service, "b", "Write docs", "Codex")
    assert list(agents.rows) == ["a", "b"]
    row_a = agents.rows["a"]
    assert "Fix the parser" in row_a.title.value and "Claude" in row_a.agent.value
    assert not row_a.shows_acknowledge and agents.empty not in agents.children

    service.board.begin_turn("a")
    assert "working" in row_a.badge.value.lower()
    service.board.end_turn("a", "finished")  # nobody watched: needs attention
    info = service.get("a")
    assert info is not None and info.needs_attention and info.attention_since
    assert row_a.shows_acknowledge and "needs attention" in row_a.attention.value

    frontend_click(row_a.acknowledge_button)
    info = service.get("a")
    assert info is not None and not info.needs_attention
    assert not row_a.shows_acknowledge and row_a.attention.value == ""

    service.board.begin_turn("b")
    service.board.end_turn("b", "finished")
    assert agents.rows["b"].shows_acknowledge
    agents.acknowledge("b")
    assert not agents.rows["b"].shows_acknowledge

    box_a = row_a.box
    service.board.unregister("a")
    assert list(agents.rows) == ["b"] and box_a.comm is None

    ids = tree_ids(agents) | {agents.rows["b"].acknowledge_button.model_id, agents.empty.model_id}
    agents.close_all()
    assert ids <= closed_comms(comms)
    assert not service.board._listeners[False]


def test_the_panel_snapshot_bounds_background_activity_like_a_saved_turn() -> None:
    """An agent busy on its own for thousands of entries: the panel's saved snapshot keeps the first and
    last of them around a note (as a turn's saved output does), not all of them on every refresh."""
    from silo_nb.notebook.render import SAVED_ENTRIES_LIMIT
    from silo_nb.notebook.widgets.snapshot_views import panel_snapshot
    from silo_nb.updates.transcript import fold_all

    background = fold_all(chunk(f"step {i}", message_id=f"b{i}") for i in range(5_000))
    html, text = panel_snapshot(
        agent_name="Demo",
        title=None,
        activity="idle",
        session_id="s1",
        options=[],
        commands=[],
        background=background,
    )
    assert "Background activity (5000)" in html
    assert "step 0" in html and "step 4999" in html and "step 2500" not in html
    assert "entries of this turn are not saved" in html
    assert html.count("step ") <= SAVED_ENTRIES_LIMIT
    assert "step 4999" in text and "step 2500" not in text
