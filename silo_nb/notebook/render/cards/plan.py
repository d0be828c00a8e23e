"""The card of the agent's plan (``PlanView``): one step a line, its status as a glyph, notes beside it."""

from __future__ import annotations

from silo_nb.notebook.render import labels, styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_inert import md_escape
from silo_nb.updates import (
    PlanView,
)

__all__ = ["CARD", "plan_html", "plan_markdown", "plan_text"]


def plan_html(plan: PlanView) -> str:
    rows = []
    for step in plan.entries:
        status = step.status or "pending"
        glyph = labels.PLAN_GLYPHS.get(status, "•")
        style = {"completed": ' style="opacity:.65"', "in_progress": ' style="font-weight:600"'}.get(
            status, ""
        )
        notes = labels.plan_notes(step.status, step.priority)
        note = f' <span style="font-size:.8em;opacity:.55">{esc(" · ".join(notes))}</span>' if notes else ""
        rows.append(f"<div{style}>{glyph} {esc(step.content)}{note}</div>")
    if not rows:
        rows.append('<div style="opacity:.6">(empty)</div>')
    return (
        f'<div class="silo-plan" style="margin:4px 0;padding:4px 8px;'
        f'border:1px solid {styles.rgba(styles.GREY, 0.3)};border-radius:4px">'
        f'<div style="font-size:.8em;font-weight:600;{styles.MUTED}">Plan</div>{"".join(rows)}</div>'
    )


def plan_markdown(plan: PlanView) -> str:
    lines = ["**Plan**", ""]
    for step in plan.entries:
        box = "[x]" if step.status == "completed" else "[ ]"
        notes = labels.plan_notes(step.status, step.priority)
        note = f" _({md_escape(', '.join(notes))})_" if notes else ""
        lines.append(f"- {box} {md_escape(step.content)}{note}")
    return "\n".join(lines if plan.entries else [*lines[:1], "", "_(empty)_"])


def plan_text(entry: PlanView) -> list[str]:
    lines = ["plan:"]
    for step in entry.entries:
        notes = labels.plan_notes(step.status, step.priority)
        note = f" ({', '.join(notes)})" if notes else ""
        glyph = labels.PLAN_TEXT_GLYPHS.get(step.status or "pending", "[?]")
        lines.append(f"  {glyph} {step.content}{note}")
    return lines


CARD = Card(PlanView, plan_html, plan_markdown, plan_text)
