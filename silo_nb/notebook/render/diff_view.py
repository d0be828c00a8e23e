"""A diff as every format shows it (a tool call's ``diff`` content, a file the agent wrote): added and
removed lines coloured, the counts in the summary, at most ``labels.DIFF_LINE_LIMIT`` lines."""

from __future__ import annotations

from silo_nb.notebook.render import labels, styles
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.md_inert import md_escape, md_fence
from silo_nb.notebook.render.paths import path_html, shown_path

__all__ = ["diff_html", "diff_markdown", "diff_text"]

_OPEN_DIFF_LINES = 40  # diffs up to this long start expanded


# The marker of each line in a gutter of its own: a context line whose text starts with "- " (a Markdown
# bullet) must not read as a deletion, which it did with the marker as the first character of the text.
_GUTTER = (
    "display:inline-block;width:1.6em;text-align:center;user-select:none;"
    f"border-right:1px solid {styles.rgba(styles.GREY, 0.3)};margin-right:6px"
)
_MARKERS = {"+": ("+", styles.GREEN), "-": ("−", styles.RED)}


def _row_html(line: str) -> str:
    """One line of a diff: its marker in the gutter (none for context), its text after it."""
    if line.startswith("@@"):
        return f'<div style="white-space:pre;padding:0 6px;{styles.MUTED}">{esc(line)}</div>'
    marker, rgb = _MARKERS.get(line[:1], ("", ""))
    background = f"background:{styles.rgba(rgb, 0.18)}" if rgb else ""
    colour = f";color:rgb({rgb});font-weight:600" if rgb else ""
    text = line[1:] if line[:1] in ("+", "-", " ") else line
    return (
        f'<div class="silo-diff-line" style="white-space:pre;padding:0 6px 0 0;{background}">'
        f'<span class="silo-diff-gutter" style="{_GUTTER}{colour}">{marker}</span>{esc(text) or " "}</div>'
    )


WRITTEN = "written"  # a tool call's proposed diff that silo_nb then wrote as it was
_WRITTEN_HTML = f'<span class="silo-written" style="color:rgb({styles.GREEN})">{WRITTEN}</span>'


def diff_html(
    path: str | None, old: str | None, new: str | None, *, cwd: str | None = None, written: bool = False
) -> str:
    """A collapsible diff of ``old`` → ``new`` (``old`` None: a new file), expanded when short; the path
    relative to ``cwd`` (absolute on hover); ``written``: it was written as shown."""
    shown = labels.diff(old, new)
    added, removed = shown.added, shown.removed
    new_file = " · new file" if old is None else ""
    if written:
        new_file += f" · {_WRITTEN_HTML}"
    rows = []
    if shown.truncated:
        rows.append(
            f'<div style="padding:0 6px;{styles.MUTED};font-style:italic">{esc(shown.truncated)}</div>'
        )
    for line in shown.shown:
        rows.append(_row_html(line))
    if shown.total > len(shown.shown):
        more = shown.total - len(shown.shown)
        rows.append(f'<div style="padding:0 6px;{styles.MUTED}">… {more:,} more lines</div>')
    if not shown.total:
        rows.append(f'<div style="padding:0 6px;{styles.MUTED}">(no changes)</div>')
    summary = (
        f'<summary style="cursor:pointer;{styles.MONO}">{path_html(path, cwd) if path else "diff"} '
        f'<span style="color:rgb({styles.GREEN})">+{added}</span> '
        f'<span style="color:rgb({styles.RED})">−{removed}</span>{new_file}</summary>'
    )
    box = (
        f'<div style="{styles.MONO};line-height:1.4;overflow-x:auto;margin-top:2px;padding:2px 0;'
        f'border:1px solid {styles.rgba(styles.GREY, 0.3)};border-radius:4px">{"".join(rows)}</div>'
    )
    is_open = " open" if shown.total <= _OPEN_DIFF_LINES else ""
    return f'<details class="silo-diff"{is_open} style="margin:3px 0">{summary}{box}</details>'


def diff_markdown(
    path: str | None, old: str | None, new: str | None, *, cwd: str | None = None, written: bool = False
) -> list[str]:
    """The diff as a fenced ``diff`` block (lines of Markdown)."""
    diff = labels.diff(old, new)
    name = shown_path(path, cwd) if path else "diff"
    header = ["--- /dev/null" if old is None else f"--- {name}", f"+++ {name}"]
    shown = list(diff.shown)
    if diff.total > len(diff.shown):
        shown.append(f"… {diff.total - len(diff.shown):,} more lines")
    note = [f"- _{md_escape(diff.truncated)}_"] if diff.truncated else []
    note += [f"- _{WRITTEN}_"] if written else []
    return [*note, *md_fence("\n".join(header + shown), "diff")]


def diff_text(
    path: str | None, old: str | None, new: str | None, *, cwd: str | None = None, written: bool = False
) -> list[str]:
    """The diff as plain lines (``---``/``+++`` header, hunks)."""
    diff = labels.diff(old, new)
    name = shown_path(path, cwd) if path else "diff"
    lines = [diff.truncated] if diff.truncated else []
    lines += [WRITTEN] if written else []
    lines += [f"--- {'/dev/null' if old is None else name}", f"+++ {name}", *diff.shown]
    if diff.total > len(diff.shown):
        lines.append(f"… {diff.total - len(diff.shown):,} more lines")
    return lines
