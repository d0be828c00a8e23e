"""``TurnView``: one ``%%prompt`` turn, live — the transcript box, permission rows, a Stop button.

- The widget only displays. It watches a :class:`~silo_nb.notebook.live_transcript.LiveTranscript`
  that its owner (the ``Turn``) feeds from ``handle.on_transcript`` — the agent's updates and the
  synthesized prompt and permission lines, exactly what the journal holds — and ends with a status. The
  body is a
  :class:`~silo_nb.notebook.widgets.live_body.LiveBody`: the static bundle's box (header row included) as
  segments, of which only those that changed are sent, paced to a bounded rate whatever the turn's
  length; :attr:`html` is what it shows, and equals the saved HTML once the turn has ended.
- Re-rendering is throttled (:class:`~silo_nb.notebook.widgets.throttle.Throttle`): a burst of chunks
  costs at most one render per ``throttle`` seconds; :meth:`flush` and the end of the turn render at
  once. Only the small badge beside Stop ticks once a second while running. Long replies are cut while
  streaming; "Show all" lifts the cut.
- Permission requests still waiting for an answer become :class:`PermissionRow` s (buttons) under the
  transcript, questions :class:`QuestionForm` s; what was asked and decided reaches the transcript as
  updates, never from the rows.
- The Stop button (and its Python twin :meth:`stop`) only calls ``on_stop`` — typically
  ``handle.cancel`` — once; the turn really ends when its owner sets the transcript's status.
- With ``on_steer`` (an agent that takes input mid-turn), a text box and Send sit under the transcript
  while the turn runs; Send (:meth:`steer`) runs ``on_steer(text)`` — typically ``handle.steer`` — in a
  task, and the text reaches the transcript as a journaled update, like everything else (a refusal is also
  said beside the box).
- A subagent that offers ``cancel`` (ACP v1.25) gets a Stop of its own while it works ("Stop <title>",
  :meth:`stop_child`), which calls ``on_stop_child(child_session_id)`` — typically ``handle.cancel_child``;
  the parent's turn goes on. The buttons follow the transcript's subagent entries at each render.
- :meth:`close_all` closes every widget of the turn (the static bundle replaces it in the notebook).
"""

from __future__ import annotations

import asyncio
import html
import time
from collections.abc import Awaitable, Callable
from typing import Any

from silo_nb.model import (
    AgentElicitationRequest,
    AgentPermissionRequest,
    AgentSessionError,
)
from silo_nb.notebook.live_transcript import LiveTranscript
from silo_nb.notebook.render import status_badge_html, styles
from silo_nb.notebook.widgets._common import close_tree, ipw, log
from silo_nb.notebook.widgets.live_body import LiveBody
from silo_nb.notebook.widgets.permission_row import PermissionRow
from silo_nb.notebook.widgets.question_form import QuestionForm
from silo_nb.notebook.widgets.throttle import Throttle, Ticker
from silo_nb.task_set import TaskSet
from silo_nb.updates import (
    TranscriptState,
)

__all__ = ["TurnView"]

# A finished turn is shown with the activity its session goes back to.
_ENDED_ACTIVITY: dict[str, str] = {
    "finished": "idle",
    "cancelled": "idle",
    "failed": "error",
    "restored": "idle",
}


class TurnView(ipw.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A live prompt turn: displays ``transcript`` (fed and ended by its owner, the ``Turn``)."""

    def __init__(
        self,
        *,
        label: str,
        transcript: LiveTranscript | None = None,
        on_stop: Callable[[], None] | None = None,
        on_steer: Callable[[str], Awaitable[object]] | None = None,
        on_stop_child: Callable[[str], object] | None = None,
        throttle: float = 0.1,
    ) -> None:
        self.label = label
        self.transcript = transcript if transcript is not None else LiveTranscript()
        self._on_stop = on_stop
        self._on_steer = on_steer
        self._steers = TaskSet()  # input on its way (referenced until the agent answers)
        self._on_stop_child = on_stop_child
        self._child_buttons: dict[str, Any] = {}  # a Stop per subagent that offers cancel, by session id
        self._children_stopped: set[str] = set()
        self._stops_for: tuple[TranscriptState, bool] | None = None  # what the child Stops were made from
        self._started = time.monotonic()
        self._ended: float | None = None
        self._stop_requested = False
        self._closed = False
        # Set by a notebook turn whose view is replaced by the static bundle as soon as the turn ends: the
        # last whole render would be built and sent only to be thrown away (seconds of a blocked kernel at
        # the end of a 2,000-tool-call turn), so the body keeps its last live render until the swap.
        self.replaced_at_end = False
        self._rows: list[PermissionRow] = []
        self._forms: list[QuestionForm] = []
        self._throttle = Throttle(throttle, self._render)
        self._forced = False
        self._ticker = Ticker(1.0, self._render_header)

        self.badge: Any = ipw.HTML(value=self._badge_html())
        self.stop_button: Any = ipw.Button(
            description="Stop",
            icon="stop",
            tooltip="Cancel this turn",
            disabled=on_stop is None,
            layout=ipw.Layout(width="auto"),
        )
        self.stop_button.on_click(lambda _button: self.stop())
        self.show_all_button: Any = ipw.Button(
            description="Show all",
            tooltip="Show the long parts of this turn whole now (they are whole once it ends)",
            layout=ipw.Layout(width="auto", display="none"),
        )
        self.show_all_button.on_click(lambda _button: self.show_all())
        # The body is the very box the static bundle shows (header row included), so nothing above the
        # transcript moves when the turn ends; only the controls below it go away.
        self.body = LiveBody(label)
        self._cursor = self.transcript.change_cursor
        self.body.render(self.transcript.state, None)
        self.permissions: Any = ipw.VBox(children=[])
        self.child_stops: Any = ipw.HBox(children=[], layout=ipw.Layout(flex_flow="row wrap"))
        self.controls: Any = ipw.HBox(
            children=[self.child_stops, self.show_all_button, self.badge, self.stop_button],
            layout=ipw.Layout(align_items="center", justify_content="flex-end"),
        )
        # Input to the running turn, for an agent that takes it (``handle.steer``); gone when the turn ends.
        self.steer_box: Any = ipw.Text(
            placeholder="Tell the agent something while it works…", layout=ipw.Layout(flex="1 1 auto")
        )
        self.steer_button: Any = ipw.Button(
            description="Send",
            icon="reply",
            tooltip="Add this to the running turn: the agent reads it without waiting for the turn to end",
            layout=ipw.Layout(width="auto"),
        )
        self.steer_button.on_click(lambda _button: self.steer())
        self.steer_note: Any = ipw.HTML(value="")
        self.steer_row: Any = ipw.HBox(
            children=[self.steer_box, self.steer_button, self.steer_note],
            layout=ipw.Layout(align_items="center", display="flex" if on_steer is not None else "none"),
        )
        super().__init__(children=[self.body.box, self.permissions, self.steer_row, self.controls])
        self._ticker.start()
        self._watching = self.transcript.watch(self._transcript_changed)

    # -- read-only surface ------------------------------------------------------------------------

    @property
    def state(self) -> TranscriptState:
        """The transcript so far (what the next render shows)."""
        return self.transcript.state

    @property
    def rows(self) -> tuple[PermissionRow, ...]:
        """The permission rows, in arrival order."""
        return tuple(self._rows)

    @property
    def html(self) -> str:
        """The transcript HTML the live view holds (the saved transcript's, once the turn ended)."""
        return self.body.html

    @property
    def running(self) -> bool:
        return self.transcript.status == "running"

    @property
    def elapsed(self) -> float:
        """Seconds since the view was created (frozen once the turn ended)."""
        return (self._ended if self._ended is not None else time.monotonic()) - self._started

    # -- what it is shown ---------------------------------------------------------------------------

    def _transcript_changed(self) -> None:
        """A new update re-renders (throttled); the end of the turn renders at once and stops the clock."""
        if self._closed:
            return
        if self.running:
            self._throttle.poke()
            return
        for row in self._askers():
            row.refresh()  # requests settled by the turn ending show "cancelled"
        if self._ended is None:
            self._ended = time.monotonic()
        self._ticker.stop()
        self.stop_button.disabled = True
        self.steer_row.layout.display = "none"
        self._refresh_child_stops()
        self._throttle.cancel()
        if self.replaced_at_end:
            self._render_header()
        else:
            self._render()

    def _askers(self) -> list[PermissionRow | QuestionForm]:
        """Every permission row and question form shown, in arrival order per kind."""
        return [*self._rows, *self._forms]

    @property
    def forms(self) -> tuple[QuestionForm, ...]:
        """The agent's questions shown as forms, in arrival order."""
        return tuple(self._forms)

    def add_question(self, request: AgentElicitationRequest) -> None:
        """Show a form for a question nobody has answered yet."""
        if self._closed or request.answered:
            return
        form = QuestionForm(request, on_answer=self._question_answered)
        self._forms.append(form)
        self.permissions.children = (*self.permissions.children, form)
        self._render_header()
        self._throttle.poke()

    def _question_answered(self, _request: AgentElicitationRequest) -> None:
        self._render_header()
        self._throttle.poke()

    def add_permission(self, request: AgentPermissionRequest) -> None:
        """Show buttons for a permission request nobody has answered yet."""
        if self._closed or request.answered:
            return
        row = PermissionRow(request, on_answer=self._permission_answered)
        self._rows.append(row)
        self.permissions.children = (*self.permissions.children, row)
        self._render_header()
        self._throttle.poke()

    def stop(self) -> bool:
        """The Stop button's twin: call ``on_stop`` once (True if this call did)."""
        if self._stop_requested or not self.running or self._on_stop is None:
            return False
        self._stop_requested = True
        self.stop_button.disabled = True
        self.stop_button.description = "Stopping…"
        try:
            self._on_stop()
        except Exception:
            log.exception("the turn's on_stop callback raised")
        return True

    def steer(self, text: str | None = None) -> bool:
        """The Send button's twin: send ``text`` (default: the box's) with ``on_steer`` in a task and clear
        the box; False when there is nothing to send, no turn running, or no ``on_steer``. A refusal is
        shown beside the box (:meth:`steer_failed`)."""
        text = self.steer_box.value if text is None else text
        if not text.strip() or not self.running or self._on_steer is None:
            return False
        self.steer_box.value = ""
        self.steer_note.value = ""
        self._steers.add(asyncio.get_running_loop().create_task(self._send(self._on_steer, text)))
        return True

    async def _send(self, on_steer: Callable[[str], Awaitable[object]], text: str) -> None:
        try:
            await on_steer(text)
        except Exception as exc:  # AgentSessionError says why in one line; anything else is logged too
            if not isinstance(exc, AgentSessionError):
                log.exception("the turn's on_steer callback raised")
            self.steer_failed(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)

    def steer_failed(self, message: str) -> None:
        """Say beside the box why the input was not taken (the transcript says it too, when sent)."""
        if not self._closed:
            self.steer_note.value = f'<span style="{styles.ERROR_TEXT}">✗ {html.escape(message)}</span>'

    @property
    def child_stop_buttons(self) -> dict[str, Any]:
        """The Stop button of each subagent shown (by its session id); hidden ones included."""
        return dict(self._child_buttons)

    def stop_child(self, child_session_id: str) -> bool:
        """A subagent's Stop button's twin: ``on_stop_child`` once for that child (True if this call did)."""
        button = self._child_buttons.get(child_session_id)
        if (
            button is None
            or child_session_id in self._children_stopped
            or not self.running
            or self._on_stop_child is None
        ):
            return False
        self._children_stopped.add(child_session_id)
        button.disabled = True
        button.description = f"Stopping {button.tooltip.removeprefix('Stop the subagent ')}…"
        try:
            self._on_stop_child(child_session_id)
        except Exception:
            log.exception("the turn's on_stop_child callback raised")
        return True

    def _refresh_child_stops(self) -> None:
        """One Stop per subagent that offers cancel and has not gone idle, while the turn runs."""
        state, running = self.transcript.state, self.running
        last = self._stops_for
        if self._on_stop_child is None or (last is not None and last[0] is state and last[1] == running):
            return  # nothing changed since the last look (a long turn's render walks no entries twice)
        self._stops_for = (state, running)
        wanted = {
            child.session_id: child.label
            for child in state.subagents
            if child.cancel and child.state not in ("idle",) and running
        }
        for session_id, label in wanted.items():
            if session_id not in self._child_buttons:
                button = ipw.Button(
                    description=f"Stop {label[:40]}",
                    icon="stop",
                    tooltip=f"Stop the subagent {label[:80]}",
                    layout=ipw.Layout(width="auto"),
                )
                button.on_click(lambda _button, child=session_id: self.stop_child(child))
                self._child_buttons[session_id] = button
                self.child_stops.children = (*self.child_stops.children, button)
        for session_id, button in self._child_buttons.items():
            display = "" if session_id in wanted else "none"
            if button.layout.display != display:
                button.layout.display = display

    def show_all(self) -> None:
        """The "Show all" button's twin: long replies and tool output whole from now on."""
        self.body.show_all()
        self.show_all_button.layout.display = "none"
        self._throttle.poke()

    def flush(self) -> None:
        """Render now, all of it (past the pacing budgets), if an update is waiting for the throttle."""
        self._forced = True
        try:
            self._throttle.flush()
        finally:
            self._forced = False

    def close_all(self) -> None:
        """Close this view and every widget in it; timers are cancelled, later calls do nothing."""
        self._closed = True
        self._watching.dispose()
        self._throttle.cancel()
        self._ticker.stop()
        close_tree(self)

    # -- rendering --------------------------------------------------------------------------------

    def _permission_answered(self, _request: AgentPermissionRequest) -> None:
        self._render_header()
        self._throttle.poke()

    def _activity(self) -> str:
        status = self.transcript.status
        if status != "running":
            return _ENDED_ACTIVITY.get(status, "idle")
        waiting = any(not row.answered for row in self._askers())
        return "blocked" if waiting else "working"

    def _badge_html(self) -> str:
        elapsed = self.elapsed if self.running else None
        return status_badge_html(self._activity(), elapsed=elapsed)

    def _render_header(self) -> None:
        if self._closed:
            return
        self.badge.value = self._badge_html()

    def _render(self) -> None:
        if self._closed:
            return
        for row in self._askers():
            row.refresh()
        changed = self.transcript.changes_since(self._cursor)
        self._cursor = self.transcript.change_cursor
        done = self.body.render(self.transcript.state, changed, force=self._forced)
        display = "" if self.body.cut and self.running else "none"
        if self.show_all_button.layout.display != display:
            self.show_all_button.layout.display = display
        self._refresh_child_stops()
        self._render_header()
        if not done:
            self._throttle.poke()  # the rest at the next tick, within the budgets
