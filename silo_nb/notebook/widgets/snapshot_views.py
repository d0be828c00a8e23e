"""What the snapshots of the session panel and the agents list say (pure functions: state → html, text).

- The same box and header row as a turn's transcript (``styles.BOX``, ``styles.HEADER_ROW``): a saved
  notebook shows the connect cell and the turns under it in one visual language.
- Only what a reader of a saved notebook needs: the agent and its status, the session id, the values
  of its controls, its commands, and (below) the background activity and the palette's turns. Nothing
  interactive: no buttons, no inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from silo_nb.notebook.render import status_badge_html, styles, transcript_html, transcript_text
from silo_nb.notebook.transcript import TranscriptState, with_status
from silo_nb.notebook.widgets._common import esc, local_clock
from silo_nb.sessions.models import AgentCommand, AgentInfo, AgentSessionConfigOption

__all__ = ["DormantRow", "agents_snapshot", "option_values", "panel_snapshot"]


@dataclass(frozen=True)
class DormantRow:
    """A session of this workspace from an earlier kernel (its journal and connection record)."""

    session_id: str
    title: str
    agent: str
    profile_id: str | None
    name: str | None
    idle_since: str | None
    stale: bool
    stale_reason: str = ""


def option_values(options: Sequence[AgentSessionConfigOption]) -> list[tuple[str, str]]:
    """``(name, shown value)`` of each control: a choice by its name, a boolean as on/off."""
    shown = []
    for option in options:
        if option.type == "boolean":
            value = "on" if option.current_value else "off"
        else:
            value = next(
                (c.name for c in option.options if c.value == option.current_value), str(option.current_value)
            )
        shown.append((option.name, value))
    return shown


def _header(left: str, right: str) -> str:
    return f'<div class="silo-header" style="{styles.HEADER_ROW}">{left}{right}</div>'


def panel_snapshot(
    *,
    agent_name: str,
    title: str | None,
    activity: str,
    session_id: str,
    options: Sequence[AgentSessionConfigOption],
    commands: Sequence[AgentCommand],
    background: TranscriptState,
) -> tuple[str, str]:
    """The session panel as the last turn left it."""
    name = f"<b>{esc(agent_name)}</b>" + (f" · {esc(title)}" if title and title != agent_name else "")
    parts = [_header(f'<span style="overflow-wrap:anywhere">{name}</span>', status_badge_html(activity))]
    lines = [f"{agent_name}" + (f" · {title}" if title and title != agent_name else "") + f" — {activity}"]
    values = option_values(options)
    if values:
        shown = " · ".join(f"{esc(n)}: <b>{esc(v)}</b>" for n, v in values)
        parts.append(f'<div style="{styles.SMALL}">{shown}</div>')
        lines.append(" · ".join(f"{n}: {v}" for n, v in values))
    if commands:
        names = ", ".join(f"<code>/{esc(c.name)}</code>" for c in commands)
        parts.append(f'<div style="{styles.SMALL};{styles.MUTED}">commands: {names}</div>')
        lines.append("commands: " + ", ".join(f"/{c.name}" for c in commands))
    if session_id:
        small = f"{styles.SMALL};{styles.MUTED}"
        parts.append(f'<div style="{small}">session <code>{esc(session_id)}</code></div>')
        lines.append(f"session {session_id}")
    if background.entries:
        done = with_status(background, "finished")
        parts.append(
            f'<details style="margin-top:4px"><summary style="cursor:pointer;{styles.SMALL}">'
            f"Background activity ({len(background.entries)})</summary>"
            f"{transcript_html(done, title='')}</details>"
        )
        lines.append("background activity:\n" + transcript_text(done, title=""))
    return f'<div class="silo-panel" style="{styles.BOX}">{"".join(parts)}</div>', "\n".join(lines)


def _attention(info: AgentInfo) -> str:
    if not info.needs_attention:
        return ""
    since = local_clock(info.attention_since)
    return f"needs attention{' since ' + since if since else ''}"


def agents_snapshot(infos: Sequence[AgentInfo], dormant: Sequence[DormantRow] = ()) -> tuple[str, str]:
    """The agents list: live sessions, then the dormant ones of this workspace."""
    rows: list[str] = []
    lines = ["Agent sessions"]
    for info in infos:
        attention = _attention(info)
        note = f' <span style="{styles.WARNING_TEXT}">● {esc(attention)}</span>' if attention else ""
        rows.append(
            f"<tr><td><b>{esc(info.title)}</b></td><td>{esc(info.agent_name or '')}</td>"
            f"<td>{status_badge_html(info.activity)}{note}</td></tr>"
        )
        extra = f" · {attention}" if attention else ""
        lines.append(f"{info.title} · {info.agent_name or ''} · {info.activity}{extra}")
    for row in dormant:
        state = "stale" if row.stale else "dormant"
        since = f" since {local_clock(row.idle_since)}" if row.idle_since else ""
        rows.append(
            f'<tr style="{styles.MUTED}"><td><b>{esc(row.title)}</b></td><td>{esc(row.agent)}</td>'
            f"<td>{state}{esc(since)}</td></tr>"
        )
        lines.append(f"{row.title} · {row.agent} · {state}{since}")
    if not rows:
        rows.append(f'<tr><td style="{styles.FAINT_TEXT}">No agent sessions.</td></tr>')
        lines.append("No agent sessions.")
    table = f'<table style="{styles.SMALL}">{"".join(rows)}</table>'
    heading = '<div style="font-weight:600">Agent sessions</div>'
    html = f'<div class="silo-agents" style="{styles.BOX}">{heading}{table}</div>'
    return html, "\n".join(lines)
