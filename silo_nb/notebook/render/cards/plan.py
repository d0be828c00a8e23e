"""The card of the agent's plan (``PlanView``): one step a line, its status as a glyph, notes beside it."""

from __future__ import annotations

from silo_nb.notebook.render import labels, styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_html import agent_markdown_html
from silo_nb.notebook.render.md_inert import md_balanced, md_code, md_escape
from silo_nb.updates import (
    PlanView,
)

__all__ = ["CARD", "plan_html", "plan_markdown", "plan_text"]


def _named(plan: PlanView) -> str:
    """``Plan``, or ``Plan plan-2`` for a named one (``removed`` when the agent took it back)."""
    name = "Plan" if plan.plan_id is None else f"Plan {plan.plan_id}"
    return f"{name} (removed)" if plan.removed else name


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
    if plan.markdown is not None:
        rows.append(agent_markdown_html(plan.markdown))
    if plan.uri is not None:
        rows.append(f'<div style="{styles.MONO}">📄 {esc(plan.uri)}</div>')
    if not rows:
        rows.append('<div style="opacity:.6">(empty)</div>')
    struck = ";text-decoration:line-through;opacity:.6" if plan.removed else ""
    return (
        f'<div class="silo-plan" style="margin:4px 0;padding:4px 8px;'
        f'border:1px solid {styles.rgba(styles.GREY, 0.3)};border-radius:4px">'
        f'<div style="font-size:.8em;font-weight:600;{styles.MUTED}">{esc(_named(plan))}</div>'
        f'<div style="{struck}">{"".join(rows)}</div></div>'
    )


def plan_markdown(plan: PlanView) -> str:
    lines = [f"**{md_escape(_named(plan))}**", ""]
    for step in plan.entries:
        box = "[x]" if step.status == "completed" else "[ ]"
        notes = labels.plan_notes(step.status, step.priority)
        note = f" _({md_escape(', '.join(notes))})_" if notes else ""
        lines.append(f"- {box} {md_escape(step.content)}{note}")
    if plan.markdown is not None:
        lines += md_balanced(plan.markdown).splitlines()
    if plan.uri is not None:
        lines.append(f"📄 {md_code(plan.uri)}")
    return "\n".join(lines if len(lines) > 2 else [*lines[:1], "", "_(empty)_"])


def plan_text(entry: PlanView) -> list[str]:
    lines = [f"{_named(entry).lower()}:"]
    for step in entry.entries:
        notes = labels.plan_notes(step.status, step.priority)
        note = f" ({', '.join(notes)})" if notes else ""
        glyph = labels.PLAN_TEXT_GLYPHS.get(step.status or "pending", "[?]")
        lines.append(f"  {glyph} {step.content}{note}")
    lines += [f"  {line}" for line in (entry.markdown or "").splitlines()]
    return [*lines, f"  file: {entry.uri}"] if entry.uri is not None else lines


CARD = Card(PlanView, plan_html, plan_markdown, plan_text)
