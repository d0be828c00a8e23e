"""``AgentsList``: what ``%silo agents`` shows — every session of ``AgentsService``, live.

- One row per ``AgentInfo`` in ``service.get_state()`` order: title, agent name, activity badge (with the
  time since ``working_since`` while working or blocked), and — when ``needs_attention`` — a marker
  with ``attention_since`` and an Acknowledge button. Its Python twin :meth:`acknowledge` calls
  ``service.acknowledge``; the service's own change notification then repaints the row.
- Rows are kept per session id and updated in place (only changed traits are sent); rows of sessions
  that went away are closed. A 1 s ticker on the kernel loop keeps elapsed times current while some
  session works, and stops when none does.
- :meth:`close_all` unsubscribes and closes every widget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from silo_nb.notebook.render import status_badge_html, styles
from silo_nb.notebook.widgets._common import close_tree, esc, ipw, local_clock, seconds_since, set_children
from silo_nb.notebook.widgets.snapshot import SnapshotMixin
from silo_nb.notebook.widgets.snapshot_views import agents_snapshot
from silo_nb.notebook.widgets.throttle import Ticker
from silo_nb.sessions.agents import AgentsService
from silo_nb.sessions.models import AgentInfo

__all__ = ["AgentRow", "AgentsList"]

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


def _attention_html(info: AgentInfo) -> str:
    if not info.needs_attention:
        return ""
    since = local_clock(info.attention_since)
    suffix = f" since {esc(since)}" if since else ""
    title = f' title="{esc(info.attention_since)}"' if info.attention_since else ""
    return f'<span style="{styles.WARNING_TEXT}"{title}>● needs attention{suffix}</span>'


class AgentsList(SnapshotMixin, ipw.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A live table of the agent sessions, with acknowledge buttons for those needing attention."""

    def __init__(self, service: AgentsService, *, all_workspaces: bool = False) -> None:
        self.service = service
        self.all_workspaces = all_workspaces
        self.rows: dict[str, AgentRow] = {}
        self._closed = False
        self._infos: list[AgentInfo] = []
        self.heading: Any = ipw.HTML(value="<b>Agent sessions</b>")
        self.empty: Any = ipw.HTML(value=f'<span style="{styles.FAINT_TEXT}">{EMPTY_TEXT}</span>')
        super().__init__(children=[self.heading, self.empty])
        self._ticker = Ticker(1.0, self._tick)
        self._render(service.get_state(all_workspaces=all_workspaces))
        self._subscription = service.subscribe(self._render, all_workspaces=all_workspaces)

    def snapshot(self) -> tuple[str, str]:
        """The list now, as static ``(html, text)``."""
        return agents_snapshot(self._infos)

    def acknowledge(self, session_id: str) -> None:
        """The Acknowledge button's twin: clear the session's ``needs_attention``."""
        self.service.acknowledge(session_id)

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
        close_tree(self.empty)
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
        title, agent, badge, attention = (ipw.HTML(value="") for _ in range(4))
        box = ipw.HBox(
            children=[title, agent, badge, attention],
            layout=ipw.Layout(align_items="center", flex_flow="row wrap"),
        )
        return AgentRow(session_id, box, title, agent, badge, attention, button)

    def _paint(self, row: AgentRow, info: AgentInfo) -> None:
        row.title.value = f"<b>{esc(info.title)}</b>&nbsp;"
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
        set_children(self, children)
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
