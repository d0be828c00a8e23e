"""One grid cell as HTML: how it went, its scores (with each command's output), its diff, its transcript.

- The transcript is the ``%%prompt`` cell's: the journal cut into turns and each rendered by
  ``transcript_html`` (``render/page.py``'s ``export_turns`` folds them with the one reducer), so a cell
  opened here looks like the notebook's own turns.
- The diff is highlighted by Pygments' diff lexer (``render/code.py``), cut at :data:`DIFF_SHOWN`
  characters with a line naming the file that has it all.
- Inline styles only, every string escaped: the same fragment serves the live view, the saved snapshot
  and the report page.
"""

from __future__ import annotations

import math
from typing import Any

from silo_nb.notebook.render import styles
from silo_nb.notebook.render.code import code_block_html, lexer_for_language
from silo_nb.notebook.render.html import transcript_html
from silo_nb.notebook.render.html_parts import pill_html
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.page import export_turns
from silo_nb.notebook.results.loaded_run import LoadedRun

__all__ = ["DIFF_SHOWN", "cell_html", "diff_html", "score_value_html", "status_html"]

DIFF_SHOWN = 200_000
_STATUS = {
    "finished": ("✓ finished", styles.GREEN),
    "failed": ("✗ failed", styles.RED),
    "not_run": ("○ not run", styles.GREY),
}
_SECTION = "font-weight:600;margin:.8em 0 .3em"


def status_html(status: str) -> str:
    text, rgb = _STATUS.get(status, (status, styles.GREY))
    return pill_html(text, rgb)


def score_value_html(value: Any) -> str:
    """A score as a cell shows it: a ✓/✗ pill for a bool, the number, or a muted "—" for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or str(value) == "<NA>":
        return f'<span style="{styles.MUTED}">—</span>'
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return pill_html("✓ pass", styles.GREEN) if value else pill_html("✗ fail", styles.RED)
    if isinstance(value, float):
        return esc(f"{value:.4g}")
    return esc(value)


def diff_html(diff: str, *, where: str = "") -> str:
    """A unified diff, highlighted; a note when there is none or it is cut."""
    if not diff.strip():
        return f'<div style="{styles.MUTED}">No changes.</div>'
    shown = diff if len(diff) <= DIFF_SHOWN else diff[: diff.rfind("\n", 0, DIFF_SHOWN) + 1]
    note = ""
    if len(shown) < len(diff):
        note = (
            f'<div style="{styles.SMALL};{styles.MUTED}">… cut here; the whole diff is in {esc(where)}</div>'
        )
    return code_block_html(shown, lexer_for_language("diff"), language="diff") + note


def _facts(loaded: LoadedRun, cell: str, record: dict[str, Any]) -> str:
    parts = [status_html(str(record.get("status", "not_run")))]
    budget = record.get("budget") or {}
    if budget:
        parts.append(pill_html(f"budget: {budget.get('limit')}", styles.AMBER))
    if int(record.get("attempts") or 1) > 1:
        parts.append(pill_html(f"attempts: {record['attempts']}", styles.AMBER))
    usage = record.get("usage") or {}
    words = [
        f"{record.get('seconds', 0):g} s" if record.get("seconds") is not None else "",
        f"{usage['tokens']:,.0f} tokens" if usage.get("tokens") is not None else "",
        f"cost {usage['cost']:.4g} {usage.get('currency') or ''}".rstrip()
        if usage.get("cost") is not None
        else "",
        f"on {record.get('executor')}" if record.get("executor") else "",
    ]
    text = " · ".join(word for word in words if word)
    error = record.get("error")
    line = f'<span style="{styles.SMALL};{styles.MUTED}">{esc(text)}</span>' if text else ""
    shown_error = f'<div style="{styles.ERROR_TEXT};{styles.SMALL}">{esc(error)}</div>' if error else ""
    row = '<div style="display:flex;flex-wrap:wrap;gap:.4em;align-items:baseline">'
    return f"{row}{''.join(parts)}{line}</div>{shown_error}"


def _scores(scores: dict[str, Any]) -> str:
    values = scores.get("values") or {}
    errors = scores.get("errors") or {}
    outputs = scores.get("outputs") or {}
    if not values and not errors:
        return f'<div style="{styles.MUTED}">No scores (run_grid(scorers=…) or silo_nb.rescore).</div>'
    rows = []
    for name in dict.fromkeys([*values, *errors]):
        error = errors.get(name)
        error_html = f'<span style="{styles.ERROR_TEXT}">{esc(error)}</span>' if error else ""
        pad = "padding:2px 10px 2px 0"
        rows.append(
            f'<tr><td style="{pad}"><code>{esc(name)}</code></td>'
            f'<td style="{pad}">{score_value_html(values.get(name))}</td><td>{error_html}</td></tr>'
        )
    table = f'<table style="border-collapse:collapse;{styles.SMALL}">{"".join(rows)}</table>'
    shown = []
    for name, output in outputs.items():
        code = output.get("exit_code")
        what = (
            "timed out" if output.get("timed_out") else f"exit {code}" if code is not None else "did not run"
        )
        size = f"{int(output.get('output_bytes') or 0):,} bytes" + (
            ", cut" if output.get("output_cut") else ""
        )
        argv = " ".join(str(part) for part in output.get("argv") or [])
        text = str(output.get("output") or "")
        shown.append(
            f'<details style="{styles.SMALL};margin-top:.3em"><summary>output of <code>{esc(name)}</code>: '
            f"{esc(what)}, {esc(size)}</summary>"
            f'<div style="{styles.MUTED}"><code>{esc(argv)}</code></div>'
            f'<pre style="{styles.CODE_PRE};max-height:24em;overflow:auto">{esc(text)}</pre></details>'
        )
    return table + "".join(shown)


def cell_html(loaded: LoadedRun, cell: str) -> str:
    """The whole page of one cell (see the module docstring)."""
    entry = loaded.cell(cell)
    record = loaded.record(cell)
    heading = f"{cell} · {entry.get('variant', '')}"
    parts = [
        f'<div style="font-weight:600;font-size:1.1em;overflow-wrap:anywhere">{esc(heading)}</div>',
        _facts(loaded, cell, record),
        f'<div style="{_SECTION}">Scores</div>',
        _scores(loaded.scores(cell)),
    ]
    changes = record.get("diff") or {}
    files = int(changes.get("files_changed") or 0)
    counts = (
        f" — {files} file{'s' if files != 1 else ''}, +{changes.get('lines_added', 0)} "
        f"−{changes.get('lines_removed', 0)}"
        if changes
        else ""
    )
    parts += [
        f'<div style="{_SECTION}">Changes{esc(counts)}</div>',
        diff_html(loaded.diff(cell), where=str(loaded.run.diff_path(cell))),
        f'<div style="{_SECTION}">Transcript</div>',
    ]
    updates = loaded.updates(cell) if record else []
    turns = [turn for turn in export_turns(updates) if turn.number is not None or turn.state.entries]
    if not turns:
        parts.append(f'<div style="{styles.MUTED}">No turns.</div>')
    for turn in turns:
        parts.append(transcript_html(turn.state, title="", label=turn.label))
    return f'<div class="silo-grid-cell" data-cell="{esc(cell)}">{"".join(parts)}</div>'
