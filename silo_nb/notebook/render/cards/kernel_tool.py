"""The card of a kernel tool call (``KernelToolEntry``): the agent used the notebook's MCP server.

- The header names the tool, what it was asked (``inspect_variable``'s name…) and its status, coloured:
  amber while waiting for the user's answer ("waiting for you") or running, green when done, red when it
  failed or stopped, grey when refused ("not run"). ``run_code``'s code is shown highlighted (Pygments),
  as the permission row showed it.
- The output: the reading tools' Markdown (their tables) rendered, ``run_code``'s text as it came; long
  output is collapsed. Figures are shown as images (HTML), counted in Markdown and text.
- Only base64 PNGs reach an ``<img>`` (``entry_lines.kernel_tool_entry`` checked them).
"""

from __future__ import annotations

from silo_nb.notebook.render import labels, styles
from silo_nb.notebook.render.card import Card
from silo_nb.notebook.render.code import code_block_html, lexer_for_language
from silo_nb.notebook.render.diff_view import diff_html, diff_markdown, diff_text
from silo_nb.notebook.render.html_parts import muted_html, pill_html
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_html import markdown_to_html, too_costly
from silo_nb.notebook.render.md_inert import md_code, md_escape, md_fence, md_indent
from silo_nb.updates import (
    KernelToolEntry,
)

__all__ = ["CARD", "kernel_tool_html", "kernel_tool_markdown", "kernel_tool_text"]

_STATUS = {
    "waiting": ("waiting for you", styles.AMBER),
    "running": ("running", styles.AMBER),
    "completed": ("done", styles.GREEN),
    "error": ("raised an error", styles.RED),
    "failed": ("failed", styles.RED),
    "timed_out": ("stopped: time limit", styles.RED),
    "interrupted": ("interrupted", styles.RED),
    "refused": ("not run", styles.GREY),
}
_COLLAPSE_LINES = 16


def _status(entry: KernelToolEntry) -> tuple[str, str]:
    if entry.status == "refused" and entry.cell_diff is not None:
        return "skipped", styles.GREY  # a cell change the user did not apply
    return _STATUS.get(entry.status, (entry.status, styles.GREY))


def _asked(entry: KernelToolEntry) -> str:
    """What the call was asked, besides ``run_code``'s code (shown whole): ``name='df', rows=5``."""
    hidden = ("code", "source", "old", "new") if entry.cell_diff is not None else ("code",)
    shown = [f"{key}={value!r}" for key, value in entry.arguments if key not in hidden and value is not None]
    return labels.cut(", ".join(shown), 200)


def _figures_line(entry: KernelToolEntry) -> str:
    count = len(entry.images) + entry.images_left_out
    if not count:
        return ""
    kept = f" ({entry.images_left_out} not kept)" if entry.images_left_out else ""
    return f"{count} figure{'s' if count != 1 else ''}{kept}"


def _cell_diff(entry: KernelToolEntry) -> tuple[str, str, str, bool] | None:
    """A cell tool's change as (label, old — empty for a new cell —, new, made)."""
    if entry.cell_diff is None:
        return None
    old, new = entry.cell_diff
    label = f"cell {entry.cell_id}" if entry.cell_id else "new cell"
    return label, old, new, entry.status == "completed"


def _output_html(entry: KernelToolEntry) -> str:
    text = labels.cut(entry.output, labels.TOOL_TEXT_LIMIT)
    if not text:
        return ""
    if entry.code is None and not too_costly(text, labels.TOOL_TEXT_LIMIT):
        body = markdown_to_html(text, styled=True)
    else:
        body = f'<pre style="{styles.CODE_PRE};white-space:pre-wrap">{esc(text)}</pre>'
    lines = text.count("\n") + 1
    if lines <= _COLLAPSE_LINES:
        return f"<div>{body}</div>"
    return (
        f'<details style="margin:2px 0"><summary style="cursor:pointer;{styles.SMALL};{styles.MUTED}">'
        f"Output ({lines:,} lines)</summary>{body}</details>"
    )


def kernel_tool_html(entry: KernelToolEntry) -> str:
    label, rgb = _status(entry)
    asked = f' <span style="{styles.MONO}">{esc(_asked(entry))}</span>' if _asked(entry) else ""
    head = (
        f'<div><span style="{styles.MUTED}">{labels.TOOL_ICON} notebook ·</span> '
        f'<span style="{styles.MONO};font-weight:600">{esc(entry.tool)}</span>{asked} '
        f"{pill_html(label, rgb)}</div>"
    )
    code = code_block_html(entry.code, lexer_for_language("python")) if entry.code is not None else ""
    if change := _cell_diff(entry):
        code += diff_html(change[0], change[1], change[2], written=change[3])
    images = "".join(
        f'<div><img class="silo-kernel-figure" src="data:image/png;base64,{image}" alt="figure" '
        'style="max-width:100%;height:auto"></div>'
        for image in entry.images
    )
    left_out = muted_html(f"+ {entry.images_left_out} figure(s) not kept") if entry.images_left_out else ""
    return (
        f'<div class="silo-kernel-tool" style="margin:4px 0;padding:3px 8px;'
        f"border-left:3px solid {styles.rgba(rgb, 0.7)};background:{styles.rgba(styles.GREY, 0.06)};"
        f'border-radius:0 4px 4px 0">{head}{code}{_output_html(entry)}{images}{left_out}</div>'
    )


def kernel_tool_markdown(entry: KernelToolEntry) -> str:
    label, _ = _status(entry)
    asked = f" {md_code(_asked(entry))}" if _asked(entry) else ""
    lines = [f"* {labels.TOOL_ICON} notebook · {md_code(entry.tool)}{asked} — _{md_escape(label)}_"]
    if entry.code is not None:
        lines += md_indent(md_fence(entry.code, "python"))
    if change := _cell_diff(entry):
        lines += md_indent(diff_markdown(change[0], change[1], change[2], written=change[3]))
    if entry.output:
        lines += md_indent(md_fence(labels.cut(entry.output, labels.TOOL_TEXT_LIMIT)))
    if figures := _figures_line(entry):
        lines.append(f"  _{figures} (in the HTML view)_")
    return "\n".join(lines)


def kernel_tool_text(entry: KernelToolEntry) -> list[str]:
    label, _ = _status(entry)
    asked = f" {_asked(entry)}" if _asked(entry) else ""
    lines = [f"kernel> {entry.tool}{asked} · {label}"]
    if entry.code is not None:
        lines += [f"    >>> {line}".rstrip() for line in entry.code.splitlines()]
    if change := _cell_diff(entry):
        lines += [
            f"    {line}".rstrip() for line in diff_text(change[0], change[1], change[2], written=change[3])
        ]
    lines += [
        f"    {line}".rstrip() for line in labels.cut(entry.output, labels.TEXT_TOOL_LIMIT).splitlines()
    ]
    if figures := _figures_line(entry):
        lines.append(f"    [{figures}]")
    return lines


CARD = Card(KernelToolEntry, kernel_tool_html, kernel_tool_markdown, kernel_tool_text)
