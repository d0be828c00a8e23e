"""The order of a table's columns as people read them: what a row is (the cell and its prompt), what was
varied, how it ended and how it scored first; the counts and the rest after (issue 35: a 1,400 px window
cut the scores off on the right)."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["PROMPT_CHARS", "reading_order", "short_prompt"]

FIRST = ("cell", "session", "turn", "prompt", "variant", "cell_status", "status", "stop_reason")
PROMPT_CHARS = 48  # a prompt beside an opaque cell id (p1-demo-c0-r0): enough to tell the prompts apart


def reading_order(columns: Iterable[str], *, scores: str = "score.") -> list[str]:
    """``columns`` reordered: :data:`FIRST` (those present, in that order), then the scores (``score.*``),
    then the others as they were."""
    given = list(columns)
    first = [name for name in FIRST if name in given]
    scored = [name for name in given if name.startswith(scores) and name not in first]
    return first + scored + [name for name in given if name not in first and name not in scored]


def short_prompt(text: object, limit: int = PROMPT_CHARS) -> str:
    """A prompt on one line, cut at ``limit`` characters with "…"."""
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
