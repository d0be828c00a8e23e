"""``AgentsList``: what ``%silo agents`` shows — every session of ``AgentsService``, live.

- One row per ``AgentInfo`` in ``service.get_state()`` order: title, agent name, activity badge (with the
  time since ``working_since`` while working or blocked), and — when ``needs_attention`` — a marker
  with ``attention_since`` and an Acknowledge button. Its Python twin :meth:`acknowledge` calls
  ``service.acknowledge``; the service's own change notification then repaints the row.
- Rows are kept per session id and updated in place (only changed traits are sent); rows of sessions
  that went away are closed. A 1 s ticker on the kernel loop keeps elapsed times current while some
  session works, and stops when none does.
- Under them, this workspace's **earlier sessions** (``sessions.dormant``: title, agent, idle since;
  stale when the agent can neither resume nor load; "open in another kernel", with no button, when another
  process holds its journal), each with a Resume button (Continue for a stale
  one: a new session carrying the transcript). Its Python twin :meth:`resume` calls ``on_resume`` (the
  ``%silo connect`` path), which shows "connecting…" and then the error in the row, or the session panel
  below the list. A resumed session leaves the earlier list (it is live now, in the rows above).
  A click runs no cell, so the panel goes here, not into a cell's output; the list's snapshot includes it.
- :meth:`close_all` unsubscribes and closes every widget (not the resumed panels: their connections own
  them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from silo_nb.model import (
    AgentInfo,
)
from silo_nb.notebook.render import status_badge_html, styles
from silo_nb.notebook.render.labels import title_html
from silo_nb.notebook.widgets._common import close_tree, esc, ipw, local_clock, seconds_since, set_children
from silo_nb.notebook.widgets.snapshot import SnapshotMixin
from silo_nb.notebook.widgets.snapshot_views import agents_snapshot, dormant_state
from silo_nb.notebook.widgets.throttle import Ticker
from silo_nb.sessions import (
    AgentsService,
    DormantSession,
)

__all__ = ["AgentRow", "AgentsList", "DormantRow", "Resume"]

# on_resume(dormant, show): reconnect it; ``show`` gets bundles (connecting…, an error) and the panel.
Resume = Callable[[DormantSession, Callable[[Any], None]], Awaitable[None]]
_ROW = {"align_items": "center", "flex_flow": "row wrap"}
# ipywidgets gives an HTML widget a fixed inline width (300px), which clipped a title with no "…": each
# part is as wide as its text, and a title is cut by ``labels.short_title`` with the whole in a tooltip.
_FIT = {"width": "auto", "max_width": "100%"}

_TICKING = frozenset({"working", "blocked"})
EMPTY_TEXT = "No agent sessions."


@dataclass
class AgentRow:
    """The widgets of one session's row (``box`` is what is displayed)."""

    session_id: str
    box: Any
    title: Any
    agent: Any
    badge: Any
    attention: Any
    acknowledge_button: Any

    @property
    def shows_acknowledge(self) -> bool:
        return any(child is self.acknowledge_button for child in self.box.children)


@dataclass
class DormantRow:
    """The widgets of one earlier session's row."""

    dormant: DormantSession
    box: Any
    note: Any
    button: Any  # None for a session open in another kernel

    @property
    def label(self) -> str:
        return "Continue" if self.dormant.stale else "Resume"


def _attention_html(info: AgentInfo) -> str:
    if not info.needs_attention:
        return ""
    since = local_clock(info.attention_since)
    suffix = f" since {esc(since)}" if since else ""
    title = f' title="{esc(info.attention_since)}"' if info.attention_since else ""
    return f'<span style="{styles.WARNING_TEXT}"{title}>● needs attention{suffix}</span>'


class AgentsList(SnapshotMixin, ipw.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A live table of the agent sessions, with acknowledge buttons for those needing attention."""

    def __init__(
        self,
        service: AgentsService,
        *,
        all_workspaces: bool = False,
        dormant: Sequence[DormantSession] = (),
        on_resume: Resume | None = None,
    ) -> None:
        self.service = service
        self.all_workspaces = all_workspaces
        self.rows: dict[str, AgentRow] = {}
        self._closed = False
        self._infos: list[AgentInfo] = []
        self.heading: Any = ipw.HTML(value="<b>Agent sessions</b>")
        self.empty: Any = ipw.HTML(value=f'<span style="{styles.FAINT_TEXT}">{EMPTY_TEXT}</span>')
        self.on_resume = on_resume
        self.dormant_heading: Any = ipw.HTML(value=f'<b style="{styles.SMALL}">Earlier sessions</b>')
        self.dormant_rows = {d.session_id: self._new_dormant_row(d) for d in dormant}
        self.resumed: list[Any] = []  # the panels this list's Resume buttons opened
        self._gone: set[str] = set()  # resumed from here (a fresh continue has a new id: not in the rows)
        self._tasks: set[asyncio.Task[None]] = set()
        super().__init__(children=[self.heading, self.empty])
        self._ticker = Ticker(1.0, self._tick)
        self._render(service.get_state(all_workspaces=all_workspaces))
        self._subscription = service.subscribe(self._render, all_workspaces=all_workspaces)

    def snapshot(self) -> tuple[str, str]:
        """The list now, as static ``(html, text)``."""
        resumed = [panel.snapshot() for panel in self.resumed if hasattr(panel, "snapshot")]
        return agents_snapshot(self._infos, [row.dormant for row in self._shown_dormant()], resumed)

    def acknowledge(self, session_id: str) -> None:
        """The Acknowledge button's twin: clear the session's ``needs_attention``."""
        self.service.acknowledge(session_id)

    def resume(self, session_id: str) -> asyncio.Task[None]:
        """The Resume button's twin: reconnect an earlier session (a task; its row shows how it went)."""
        row = self.dormant_rows.get(session_id)
        if row is None or self.on_resume is None:
            raise ValueError(f"{session_id!r} is not an earlier session in this list — see %silo agents.")
        if row.dormant.open_in is not None or row.button is None:
            raise ValueError(
                f"{session_id} is open in another kernel (pid {row.dormant.open_in}) — "
                "disconnect it there first."
            )
        row.button.disabled = True
        row.button.description = "Resuming…"
        task = asyncio.get_running_loop().create_task(self._resume(row))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _resume(self, row: DormantRow) -> None:
        assert self.on_resume is not None

        def show(shown: Any) -> None:
            if isinstance(shown, dict):  # "connecting…", or the error
                row.note.value = shown.get("text/html", esc(shown.get("text/plain", "")))
                return
            row.note.value = ""
            if not any(panel is shown for panel in self.resumed):
                self.resumed.append(shown)
            self._gone.add(row.dormant.session_id)
            self._render(self._infos)

        try:
            await self.on_resume(row.dormant, show)
        except Exception as exc:  # a UsageError line (or anything): said in the row, never raised at a click
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            row.note.value = f'<span style="{styles.ERROR_TEXT}">✗ {esc(message)}</span>'
        finally:
            row.button.disabled = False
            row.button.description = row.label

    def close_all(self) -> None:
        """Unsubscribe, stop the ticker and close every widget."""
        if self._closed:
            return
        self._closed = True
        self._subscription.dispose()
        self._ticker.stop()
        # Widgets not shown right now are not children of anything: close them explicitly.
        for row in self.rows.values():
            close_tree(row.acknowledge_button)
        for dormant_row in self.dormant_rows.values():
            close_tree(dormant_row.box)
        close_tree(self.empty)
        close_tree(self.dormant_heading)
        set_children(self, tuple(c for c in self.children if not any(c is p for p in self.resumed)))
        close_tree(self)
        self.rows.clear()

    # -- rendering --------------------------------------------------------------------------------

    def _new_row(self, session_id: str) -> AgentRow:
        button = ipw.Button(
            description="Acknowledge",
            icon="check",
            tooltip="Mark this session as seen",
            layout=ipw.Layout(width="auto"),
        )
        button.on_click(lambda _button: self.acknowledge(session_id))
        title, agent, badge, attention = (ipw.HTML(value="", layout=_FIT) for _ in range(4))
        box = ipw.HBox(
            children=[title, agent, badge, attention],
            layout=ipw.Layout(align_items="center", flex_flow="row wrap"),
        )
        return AgentRow(session_id, box, title, agent, badge, attention, button)

    def _new_dormant_row(self, dormant: DormantSession) -> DormantRow:
        title = ipw.HTML(value=f"{title_html(dormant.title)}&nbsp;", layout=_FIT)
        agent = ipw.HTML(
            value=f'<span style="{styles.FAINT_TEXT}">{esc(dormant.agent_name or "")}</span>&nbsp;'
        )
        state = ipw.HTML(
            value=f'<span style="{styles.FAINT_TEXT}">{esc(dormant_state(dormant))}</span>&nbsp;'
        )
        note = ipw.HTML(value="")
        if dormant.open_in is not None:
            # Open in another kernel: that kernel writes its journal, so there is nothing to resume here.
            return DormantRow(
                dormant, ipw.HBox(children=[title, agent, state, note], layout=_ROW), note, None
            )
        button = ipw.Button(
            description="Continue" if dormant.stale else "Resume",
            icon="play",
            tooltip=(
                "Continue in a new session carrying this transcript"
                if dormant.stale
                else f"Reconnect session {dormant.session_id}"
            ),
            layout=ipw.Layout(width="auto"),
            disabled=self.on_resume is None,
        )
        button.on_click(lambda _button: self.resume(dormant.session_id))
        shown = [title, agent, state, button, note]
        box = ipw.HBox(children=shown, layout=_ROW)
        return DormantRow(dormant, box, note, button)

    def _shown_dormant(self) -> list[DormantRow]:
        live = {info.session_id for info in self._infos if info.session_id}
        return [row for sid, row in self.dormant_rows.items() if sid not in live and sid not in self._gone]

    def _paint(self, row: AgentRow, info: AgentInfo) -> None:
        row.title.value = f"{title_html(info.title)}&nbsp;"
        row.agent.value = f'<span style="{styles.FAINT_TEXT}">{esc(info.agent_name or "")}</span>&nbsp;'
        elapsed = seconds_since(info.working_since) if info.activity in _TICKING else None
        row.badge.value = status_badge_html(info.activity, elapsed=elapsed)
        row.attention.value = _attention_html(info)
        base = (row.title, row.agent, row.badge, row.attention)
        children = (*base, row.acknowledge_button) if info.needs_attention else base
        set_children(row.box, children)

    def _render(self, infos: list[AgentInfo]) -> None:
        if self._closed:
            return
        self._infos = list(infos)
        fresh: dict[str, AgentRow] = {}
        for info in infos:
            row = self.rows.get(info.id) or self._new_row(info.id)
            self._paint(row, info)
            fresh[info.id] = row
        for session_id, row in self.rows.items():
            if session_id not in fresh:
                close_tree(row.acknowledge_button)
                close_tree(row.box)
        self.rows = fresh
        children = (
            (self.heading, *(row.box for row in fresh.values())) if fresh else (self.heading, self.empty)
        )
        earlier = tuple(row.box for row in self._shown_dormant())
        if earlier:
            children += (self.dormant_heading, *earlier)
        set_children(self, children + tuple(self.resumed))
        if any(info.activity in _TICKING for info in infos):
            self._ticker.start()
        else:
            self._ticker.stop()

    def _tick(self) -> None:
        if self._closed:
            return
        for info in self._infos:
            row = self.rows.get(info.id)
            if row is not None and info.activity in _TICKING:
                row.badge.value = status_badge_html(info.activity, elapsed=seconds_since(info.working_since))
