"""``SessionPanel``: what ``%silo connect`` shows — one live session's status, controls and commands.

- Status comes from ``AgentsService`` (the same ``AgentInfo`` Silo's own UI reads), not from guessing:
  the panel subscribes and repaints its badge on every change; while ``working``/``blocked`` it shows the
  time since ``working_since``, ticking once a second on the kernel loop.
- Session controls are capability-driven: a ``Dropdown`` per ``select`` config option and a ``Checkbox``
  per ``boolean`` one, only what the agent advertised (other types are not drawn). A change — from the
  browser or from :meth:`select`, its Python twin — starts ``handle.set_config_option`` in an asyncio
  task (the widget callback itself only schedules). If the agent rejects it, the control snaps back to
  the handle's current value and the message line says why. ``on_config_options_changed`` rebuilds the
  controls when the set of options changes, or just re-syncs their values.
- The command palette (:class:`CommandPalette`) lists ``handle.commands``; Run, or Enter in its
  arguments field, calls ``on_run("/name args")``; the owner (the magics) sends it as a prompt turn.
  :meth:`run` is the Python twin; a name the agent did not announce is refused, with the list.
- :meth:`snapshot` (``SnapshotMixin``): the panel as static HTML + text, carried by its display bundle.
- Agents also work on their own between prompts. Updates that arrive while no prompt turn is active
  (``turn_active`` False; the magics set it) feed the :class:`BackgroundActivity` section under the
  panel; during a turn the turn view shows them instead.
- ``sign_in`` (``SignInRow``) shows "sign-in needed" and a button after a turn that wanted a sign-in.
- :meth:`close_all` disposes every subscription and closes every widget.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from silo_nb.model import (
    AgentCommand,
    AgentInfo,
    AgentSessionConfigOption,
    AgentSessionUpdate,
)
from silo_nb.notebook.render import status_badge_html, styles
from silo_nb.notebook.widgets._common import close_tree, esc, ipw, log, seconds_since
from silo_nb.notebook.widgets.background import BackgroundActivity
from silo_nb.notebook.widgets.palette import CommandPalette
from silo_nb.notebook.widgets.sign_in_row import SignInRow
from silo_nb.notebook.widgets.snapshot import SnapshotMixin
from silo_nb.notebook.widgets.snapshot_views import panel_snapshot
from silo_nb.notebook.widgets.throttle import Ticker
from silo_nb.sessions import (
    AgentsService,
)
from silo_nb.updates import (
    TranscriptState,
)

__all__ = ["PanelHandle", "SessionPanel"]

RENDERED_TYPES = frozenset({"select", "boolean"})
_TICKING = frozenset({"working", "blocked"})


class _Disposable(Protocol):
    def dispose(self) -> None: ...


class PanelHandle(Protocol):
    """What the panel uses of an ``AgentSessionHandle`` (which satisfies it as is)."""

    @property
    def id(self) -> str: ...

    @property
    def agent_name(self) -> str: ...

    @property
    def session_id(self) -> str: ...

    @property
    def config_options(self) -> tuple[AgentSessionConfigOption, ...]: ...

    @property
    def commands(self) -> tuple[AgentCommand, ...]: ...

    async def set_config_option(self, option_id: str, value: Any) -> None: ...

    def on_transcript(self, listener: Callable[[AgentSessionUpdate], None]) -> _Disposable: ...

    def on_config_options_changed(self, listener: Callable[[], None]) -> _Disposable: ...

    def on_commands_changed(self, listener: Callable[[], None]) -> _Disposable: ...


def _shape(options: tuple[AgentSessionConfigOption, ...]) -> tuple[Any, ...]:
    """What decides the controls themselves (not their values): rebuild only when this changes."""
    return tuple(
        (o.id, o.type, o.name, o.description, tuple((c.name, c.value) for c in o.options))
        for o in options
        if o.type in RENDERED_TYPES
    )


def _error_html(text: str) -> str:
    return f'<span style="{styles.ERROR_TEXT}">⚠ {esc(text)}</span>'


class SessionPanel(SnapshotMixin, ipw.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A connected session: status badge, config controls, command palette and background activity."""

    def __init__(
        self,
        handle: PanelHandle,
        service: AgentsService,
        *,
        on_run: Callable[[str], None] | None = None,
        throttle: float = 0.25,
        on_sign_in: Callable[[], None] | None = None,
    ) -> None:
        self.handle = handle
        self.service = service
        self.turn_active = False
        self._on_run = on_run
        self._closed = False
        self.disconnected = False  # set by %silo disconnect: the saved snapshot says so, not "idle"
        self._syncing = False
        self._shape: tuple[Any, ...] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.option_controls: dict[str, Any] = {}

        self.name_html: Any = ipw.HTML(value="")
        self.badge: Any = ipw.HTML(value="")
        self.session_html: Any = ipw.HTML(value="")
        self.header: Any = ipw.HBox(
            children=[self.name_html, self.badge, self.session_html],
            layout=ipw.Layout(align_items="center", justify_content="space-between"),
        )
        self.controls: Any = ipw.HBox(children=[], layout=ipw.Layout(flex_flow="row wrap"))
        self.message: Any = ipw.HTML(value="")
        self.sign_in = SignInRow(on_sign_in)

        self.palette = CommandPalette(
            lambda: self.handle.commands, agent_name=handle.agent_name, on_run=on_run, report=self._report
        )
        # The palette's parts, as the panel has always exposed them.
        self.command_box, self.args_text = self.palette.command_box, self.palette.args_text
        self.run_button, self.commands_html = self.palette.run_button, self.palette.commands_html
        self.command_buttons = self.palette.command_buttons

        self.background = BackgroundActivity(throttle=throttle)
        rows = [self.header, self.controls, self.message, self.sign_in, self.palette, self.background]
        super().__init__(children=rows)

        self._ticker = Ticker(1.0, self._render_status)
        self.refresh_options()
        self.refresh_commands()
        self._render_status()
        self._subscriptions: list[_Disposable] = [
            service.subscribe(self._on_state),
            handle.on_transcript(self._on_update),
            handle.on_config_options_changed(self.refresh_options),
            handle.on_commands_changed(self.refresh_commands),
        ]

    # -- read-only surface ------------------------------------------------------------------------

    @property
    def background_state(self) -> TranscriptState:
        """What the agent did on its own, outside prompt turns."""
        return self.background.transcript.state

    @property
    def info(self) -> AgentInfo | None:
        """The session's status entry (None once the session is gone)."""
        return self.service.get(self.handle.id)

    # -- Python twins -----------------------------------------------------------------------------

    def select(self, option_id: str, value: Any) -> asyncio.Task[None]:
        """Change a config option as the user would: the control shows ``value`` and the agent is asked.

        Needs a running loop. The task never raises: a rejection reverts the control and shows the reason.
        """
        control = self.option_controls.get(option_id)
        if control is not None:
            self._set_control(control, value)
        return self._start_set(option_id, value)

    def snapshot(self) -> tuple[str, str]:
        """The panel now, as static ``(html, text)``."""
        info = self.info
        return panel_snapshot(
            agent_name=self.handle.agent_name,
            title=info.title if info is not None else None,
            activity="disconnected" if self.disconnected else info.activity if info is not None else "dead",
            session_id=self.handle.session_id,
            options=[o for o in self.handle.config_options if o.type in RENDERED_TYPES],
            commands=self.handle.commands,
            background=self.background_state,
        )

    def run(self, name: str, args: str = "") -> str:
        """Run a command as the Run button would: ``on_run("/name args")``. Returns the text sent.

        A name the agent did not announce raises ``ValueError`` listing the ones it did."""
        return self.palette.run(name, args)

    def pick(self, name: str) -> None:
        """A listed command's button twin: the palette's field shows ``/name``."""
        self.palette.pick(name)

    def flush(self) -> None:
        """Render the background transcript now if an update is waiting for the throttle."""
        self.background.flush()

    async def settled(self) -> None:
        """Wait until every config change started from the panel has been answered."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- refresh ----------------------------------------------------------------------------------

    def refresh_options(self) -> None:
        """Rebuild the controls if the agent's options changed shape, else re-sync their values."""
        if self._closed:
            return
        options = self.handle.config_options
        shape = _shape(options)
        if shape != self._shape:
            self._shape = shape
            old = list(self.option_controls.values())
            self.option_controls = {o.id: self._build_control(o) for o in options if o.type in RENDERED_TYPES}
            self.controls.children = tuple(self.option_controls.values())
            for control in old:
                close_tree(control)
        else:
            self._sync_values()

    def refresh_commands(self) -> None:
        """Repaint the command palette from ``handle.commands``."""
        if not self._closed:
            self.palette.refresh()

    def close_all(self) -> None:
        """Dispose every subscription and listener, stop the timers and close every widget."""
        if self._closed:
            return
        self._closed = True
        for subscription in self._subscriptions:
            subscription.dispose()
        self._subscriptions.clear()
        self._ticker.stop()
        self.background.close_all()
        close_tree(self)

    # -- config options ---------------------------------------------------------------------------

    def _build_control(self, option: AgentSessionConfigOption) -> Any:
        common: dict[str, Any] = {
            "description": option.name,
            "tooltip": option.description or option.name,
            "style": {"description_width": "initial"},
        }
        if option.type == "boolean":
            control = ipw.Checkbox(value=bool(option.current_value), indent=False, **common)
        else:
            values = [c.value for c in option.options]
            control = ipw.Dropdown(
                options=[(c.name, c.value) for c in option.options],
                value=option.current_value if option.current_value in values else None,
                **common,
            )
        control.observe(lambda change, option_id=option.id: self._control_changed(option_id, change), "value")
        return control

    def _control_changed(self, option_id: str, change: dict[str, Any]) -> None:
        # A user change (browser): only schedule the request; the task does the rest.
        if self._syncing or self._closed:
            return
        try:
            self._start_set(option_id, change["new"])
        except RuntimeError:
            log.exception("no running event loop to change %s", option_id)
            self._sync_values()

    def _start_set(self, option_id: str, value: Any) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(
            self._set_option(option_id, value), name=f"silo_nb set_config_option {option_id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _set_option(self, option_id: str, value: Any) -> None:
        try:
            await self.handle.set_config_option(option_id, value)
        except Exception as exc:
            log.info("config option %s = %r was rejected: %s", option_id, value, exc)
            if not self._closed:
                option = next((o for o in self.handle.config_options if o.id == option_id), None)
                what = option.name if option is not None else option_id
                self.message.value = _error_html(f"{what} was not changed: {exc}")
                self._sync_values()
            return
        if not self._closed:
            self.message.value = ""
            self.refresh_options()

    def _set_control(self, control: Any, value: Any) -> None:
        self._syncing = True
        try:
            if isinstance(control, ipw.Checkbox):
                control.value = bool(value)
            elif any(v == value for _label, v in control.options):
                control.value = value
        finally:
            self._syncing = False

    def _sync_values(self) -> None:
        """Every control shows the handle's current value again (after a rejection or a remote change)."""
        for option in self.handle.config_options:
            control = self.option_controls.get(option.id)
            if control is None:
                continue
            if isinstance(control, ipw.Checkbox):
                self._set_control(control, bool(option.current_value))
            elif any(v == option.current_value for _label, v in control.options):
                self._set_control(control, option.current_value)
            else:
                self._syncing = True
                try:
                    control.value = None
                finally:
                    self._syncing = False

    def _report(self, text: str | None) -> None:
        self.message.value = _error_html(text) if text else ""

    # -- status and background activity -----------------------------------------------------------

    def _on_state(self, _state: list[AgentInfo]) -> None:
        self._render_status()

    def _render_status(self) -> None:
        if self._closed:
            return
        info = self.info
        activity = info.activity if info is not None else "dead"
        self.background.set_working(activity in _TICKING)
        elapsed = seconds_since(info.working_since) if info is not None and activity in _TICKING else None
        self.badge.value = status_badge_html(activity, elapsed=elapsed)
        if activity in _TICKING:
            self._ticker.start()
        else:
            self._ticker.stop()
        name = f"<b>{esc(self.handle.agent_name)}</b>"
        if info is not None and info.title and info.title != self.handle.agent_name:
            name += f" · {esc(info.title)}"
        self.name_html.value = name
        session_id = self.handle.session_id
        session = (
            f'<span style="{styles.SMALL};{styles.FAINT_TEXT}">session <code>{esc(session_id)}</code></span>'
            if session_id
            else ""
        )
        problem = info.journal_problem if info is not None else None
        warning = (
            f'<span style="{styles.SMALL};{styles.ERROR_TEXT}">⚠ journal: {esc(problem)}</span> '
            if problem
            else ""
        )
        self.session_html.value = warning + session

    def _on_update(self, update: AgentSessionUpdate) -> None:
        self.sign_in.observe_update(update)
        if not self.turn_active and not self._closed:
            self.background.transcript.apply(update)
