"""What the snapshots of the session panel and the agents list say (pure functions: state → html, text).

- The same box and header row as a turn's transcript (``styles.BOX``, ``styles.HEADER_ROW``): a saved
  notebook shows the connect cell and the turns under it in one visual language.
- Only what a reader of a saved notebook needs: the agent and its status, the session id, the values
  of its controls, its commands, and (below) the background activity and the palette's turns. Nothing
  interactive: no buttons, no inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

from silo_nb.model import (
    AgentCommand,
    AgentInfo,
    AgentSessionConfigOption,
)
from silo_nb.notebook.render import saved_part, status_badge_html, styles, transcript_html, transcript_text
from silo_nb.notebook.render.labels import short_title, title_html
from silo_nb.notebook.widgets._common import esc, local_clock, parse_iso
from silo_nb.sessions import (
    DormantSession,
)
from silo_nb.updates import (
    TranscriptState,
    with_status,
)

__all__ = ["agents_snapshot", "dormant_state", "option_values", "panel_snapshot"]


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
        done = with_status(saved_part(background), "finished")  # bounded like a turn's saved output
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


def dormant_state(dormant: DormantSession) -> str:
    """``dormant · idle since 2026-05-01 14:03 · 3 turns`` (local time), or why it is stale."""
    if dormant.open_in is not None:
        parts = [f"open in another kernel (pid {dormant.open_in})"]
    elif dormant.agent_status == "unknown":
        parts = ["stale — the agent no longer knows it"]
    else:
        parts = ["stale — the agent can neither resume nor load it" if dormant.stale else "dormant"]
    since = parse_iso(dormant.idle_since)
    if since is not None:
        parts.append(f"idle since {since.astimezone().strftime('%Y-%m-%d %H:%M')}")
    if dormant.turns:
        parts.append(f"{dormant.turns} turn{'s' if dormant.turns != 1 else ''}")
    return " · ".join(parts)


def agents_snapshot(
    infos: Sequence[AgentInfo],
    dormant: Sequence[DormantSession] = (),
    resumed: Sequence[tuple[str, str]] = (),
) -> tuple[str, str]:
    """The agents list: live sessions, then the dormant ones of this workspace, then the snapshots of the
    panels its Resume buttons opened."""
    rows: list[str] = []
    lines = ["Agent sessions"]
    for info in infos:
        attention = _attention(info)
        note = f' <span style="{styles.WARNING_TEXT}">● {esc(attention)}</span>' if attention else ""
        rows.append(
            f"<tr><td>{title_html(info.title)}</td><td>{esc(info.agent_name or '')}</td>"
            f"<td>{status_badge_html(info.activity)}{note}</td></tr>"
        )
        extra = f" · {attention}" if attention else ""
        lines.append(f"{short_title(info.title)} · {info.agent_name or ''} · {info.activity}{extra}")
    if not rows:
        empty = "No live sessions." if dormant else "No agent sessions."
        rows.append(f'<tr><td style="{styles.FAINT_TEXT}">{empty}</td></tr>')
        lines.append(empty)
    if dormant:
        rows.append(f'<tr><td colspan="3" style="{styles.SMALL};font-weight:600">Earlier sessions</td></tr>')
        lines.append("Earlier sessions")
    for row in dormant:
        state = dormant_state(row)
        rows.append(
            f'<tr style="{styles.MUTED}"><td>{title_html(row.title)}</td><td>{esc(row.agent_name or "")}</td>'
            f"<td>{esc(state)}</td></tr>"
        )
        lines.append(f"{short_title(row.title)} · {row.agent_name or ''} · {state}")
    table = f'<table style="{styles.SMALL}">{"".join(rows)}</table>'
    heading = '<div style="font-weight:600">Agent sessions</div>'
    html = f'<div class="silo-agents" style="{styles.BOX}">{heading}{table}</div>'
    for panel_html, panel_text in resumed:
        html += panel_html
        lines.append(panel_text)
    return html, "\n".join(lines)
