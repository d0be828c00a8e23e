"""``%silo export``: a session's journal as one self-contained page, ``.html`` or ``.md``.

- The journal is cut into turns (``split_turns``) and each turn is rendered by the same functions as a
  cell's output (``transcript_html`` / ``transcript_markdown`` with a header row), so an export looks
  like the notebook: the same inline styles from ``styles``, the same status markers (✓ finished,
  ■ cancelled, ✗ failed) and footers (stop reason, error, usage).
- A turn's outcome is the reducer's (``TranscriptState.status`` once it folds the turn's first
  ``turn_end`` line). A turn with no ``turn_end`` (Silo's journals, older ones, a load replay) is marked
  "restored": its outcome was never recorded.
- The HTML page adds what a standalone file needs and a notebook provides: ``<!doctype>``, UTF-8, the
  page font and width, light and dark colour schemes (``color-scheme``; every tint is translucent), a
  heading with the session's title, agent, id and a count of cancelled/failed turns, and a list of turns
  linking to each. No script, no external resource: it opens anywhere, offline.
- Every string from the journal is escaped (HTML) or backslash-escaped (Markdown heading lines); the turn
  bodies come from the renderers, which already are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from silo_nb.model import (
    AgentSessionUpdate,
    TurnEndLine,
)
from silo_nb.notebook.render import labels, styles
from silo_nb.notebook.render.html import pill_html, transcript_html
from silo_nb.notebook.render.labels import esc
from silo_nb.notebook.render.markdown import transcript_markdown
from silo_nb.updates import (
    MessageEntry,
    TranscriptState,
    fold_all,
    split_turns,
    with_status,
)

__all__ = ["ExportTurn", "export_turns", "page_html", "page_markdown"]

_MD_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")

# The page around the transcripts: what an output area gets from JupyterLab. Fonts from ``styles.BOX``.
PAGE_CSS = (
    ":root{color-scheme:light dark}"
    "body{margin:0;padding:24px 16px;font-family:var(--jp-content-font-family,system-ui,sans-serif);"
    "font-size:14px;line-height:1.45}"
    "main{max-width:60em;margin:0 auto}"
    "h1{font-size:1.5em;font-weight:600;margin:0 0 .3em;overflow-wrap:anywhere}"
    f".silo-page-meta{{{styles.SMALL};{styles.MUTED};margin-bottom:.8em;overflow-wrap:anywhere}}"
    f".silo-toc{{{styles.SMALL};margin:0 0 1.2em;padding-left:1.8em}}"
    ".silo-toc li{margin:.15em 0}"
    ".silo-toc a{color:inherit;text-decoration:none}"
    ".silo-toc a:hover{text-decoration:underline}"
    "section{margin:0 0 12px;scroll-margin-top:12px}"
)


@dataclass(frozen=True)
class ExportTurn:
    """One turn of the page: its number (``None``: what came before the first prompt) and transcript."""

    number: int | None
    state: TranscriptState
    duration_ms: float | None = None

    @property
    def label(self) -> str:
        return f"Turn {self.number}" if self.number is not None else "Before the first prompt"

    @property
    def anchor(self) -> str:
        return f"turn-{self.number}" if self.number is not None else "turn-0"


def _duration(turn: Sequence[AgentSessionUpdate]) -> float | None:
    end = next((line for u in reversed(turn) if (line := TurnEndLine.read(u)) is not None), None)
    return end.duration_ms if end is not None else None


def export_turns(updates: Sequence[AgentSessionUpdate]) -> list[ExportTurn]:
    """The journal's turns, each folded and given its outcome."""
    turns: list[ExportTurn] = []
    for turn in split_turns(updates):
        # The outcome is the first turn_end's (the turn as it ended live); agent work after it is shown
        # too, but its own turn_end (an agent-initiated turn) does not replace that outcome.
        head, late_part = turn.head, turn.late
        state = fold_all(head)
        if late_part:
            late = fold_all(late_part, state)
            state = replace(late, status=state.status, stop_reason=state.stop_reason, error=state.error)
        if state.status == "running":  # no turn_end: the outcome was never recorded
            state = with_status(state, "restored")
        turns.append(ExportTurn(turn.number, state, _duration(head)))
    return turns


def _turn_meta(turn: ExportTurn) -> str | None:
    if turn.duration_ms is None:
        return None
    return (
        f"took {labels.elapsed_text(turn.duration_ms / 1000)}" if turn.duration_ms >= 1000 else "took < 1 s"
    )


def _counts(turns: Sequence[ExportTurn]) -> list[tuple[str, str]]:
    """(label, rgb) of the outcomes worth counting at the top: cancelled and failed turns."""
    counts = Counter(turn.state.status for turn in turns if turn.number is not None)
    shown: list[tuple[str, str]] = []
    for status in ("cancelled", "failed"):
        if counts.get(status):
            text, rgb = labels.TURN_STATUS[status]
            shown.append((f"{text} ×{counts[status]}", rgb))
    return shown


def _summary(turns: Sequence[ExportTurn], meta: str | None) -> str:
    prompts = sum(1 for turn in turns if turn.number is not None)
    parts = [meta] if meta else []
    parts.append(f"{prompts} turn{'s' if prompts != 1 else ''}")
    return " · ".join(parts)


def _toc_line(turn: ExportTurn) -> str:
    first = next((e.text for e in turn.state.entries if isinstance(e, MessageEntry) and e.role == "user"), "")
    words = " ".join(first.split())
    gist = words[:80] + ("…" if len(words) > 80 else "")
    status, rgb = labels.turn_status(turn.state)
    return (
        f'<li><a href="#{turn.anchor}">{esc(turn.label)}</a> {pill_html(status, rgb)} '
        f'<span style="{styles.MUTED}">{esc(gist)}</span></li>'
    )


def page_html(
    updates: Sequence[AgentSessionUpdate], *, title: str, meta: str | None = None, label: str | None = None
) -> str:
    """A standalone HTML page of the whole journal (see the module notes)."""
    turns = export_turns(updates)
    counts = "".join(f" {pill_html(text, rgb)}" for text, rgb in _counts(turns))
    sections = []
    for turn in turns:
        heading = f"{turn.label} · {label}" if label else turn.label
        body = transcript_html(turn.state, title="", meta=_turn_meta(turn), label=heading)
        sections.append(f'<section id="{turn.anchor}">{body}</section>')
    toc = f'<ol class="silo-toc">{"".join(map(_toc_line, turns))}</ol>' if len(turns) > 1 else ""
    if not sections:
        sections.append(f'<p style="{styles.MUTED}">No turns in this journal.</p>')
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        f"<title>{esc(title)}</title><style>{PAGE_CSS}</style></head>\n"
        f'<body><main class="silo-export"><h1>{esc(title)}</h1>'
        f'<div class="silo-page-meta">{esc(_summary(turns, meta))}{counts}</div>{toc}\n'
        + "\n".join(sections)
        + "\n</main></body></html>\n"
    )


def _md_inline(text: str) -> str:
    """One line of plain text made inert in Markdown: every ASCII punctuation backslash-escaped."""
    return "".join(f"\\{c}" if c in _MD_PUNCTUATION else c for c in " ".join(text.split()))


def page_markdown(
    updates: Sequence[AgentSessionUpdate], *, title: str, meta: str | None = None, label: str | None = None
) -> str:
    """The whole journal as one Markdown document: a heading, then each turn under its header line."""
    turns = export_turns(updates)
    counts = [text for text, _ in _counts(turns)]
    parts = [f"# {_md_inline(title)}", _md_inline(" · ".join([_summary(turns, meta), *counts]))]
    for turn in turns:
        heading = f"{turn.label} · {label}" if label else turn.label
        parts += [
            "---",
            transcript_markdown(turn.state, title="", meta=_turn_meta(turn), label=heading).strip(),
        ]
    return "\n\n".join(parts) + "\n"
