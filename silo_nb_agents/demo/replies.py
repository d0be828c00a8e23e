"""What the demo agent says back to a prompt: it follows the prompt instead of one fixed block.

- It has no model, so it says so once, repeats what it understood (the prompt, shortened), and then
  names what it will do for each keyword the prompt holds (the same keywords that pick the turn's steps in
  ``scripted_turns.py``), in the order they run.
- A prompt with none of its keywords gets the list of what it can do and which word asks for it, with a
  suggestion that fits the prompt when one does (a question about data: ``look into NAME``).
- A small Python example (the ``greet`` function) comes only when code is asked for.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["KEYWORDS", "matched_keywords", "reply_markdown"]

# (the word a prompt holds, what the agent does for it): the order is the order the turn's steps run in.
KEYWORDS: Final[tuple[tuple[str, str], ...]] = (
    ("plan", "show a plan and tick its three steps off as I go"),
    ("code", "write a small Python example"),
    ("slow", "answer slowly, so the Stop button has something to stop"),
    ("run the tests", "run the tests in a terminal silo_nb starts for me"),
    ("risky", "ask you a question before a risky step"),
    ("subagent", "hand a part of the turn to a subagent (a child session with its own transcript)"),
    ("edit", "propose an edit to `notes.md`, written only once you allow it"),
    ("run in the kernel", "run the code after *run in the kernel:* in your kernel, once you allow it"),
    ("look into NAME", "look into a variable of your kernel with the notebook's tools, then offer code"),
    (
        "add a cell",
        "add a cell below your prompt (one that plots NAME: *add a cell that plots NAME*), then run it",
    ),
    ("fix", "fix a function in a Python file of this folder (the smart model does it better)"),
    ("mode", "say which mode and model this session uses"),
    ("fail", "fail on purpose, to show an agent error"),
    ("refuse", "refuse the turn"),
)
_ALIASES: Final = {
    "code": ("code", "function", "example"),
    "run the tests": ("run the tests", "terminal"),
    "edit": ("edit", "tool"),
}
_DATA_WORDS: Final = re.compile(r"\b(data|dataframe|df|summari[sz]e|column|table|plot|variable)", re.I)
_QUOTED_CHARS: Final = 80


def _has(lowered: str, word: str) -> bool:
    if " " in word:
        return word in lowered
    return re.search(r"\b" + re.escape(word), lowered) is not None


def matched_keywords(text: str, *, looked_into: str | None) -> list[str]:
    """The keywords ``text`` holds, in :data:`KEYWORDS`' order (``look into NAME`` given as found)."""
    lowered = text.lower()
    found = []
    for word, _ in KEYWORDS:
        if word == "look into NAME":
            if looked_into is not None:
                found.append(word)
        elif any(_has(lowered, alias) for alias in _ALIASES.get(word, (word,))):
            found.append(word)
    return found


def _also(word: str) -> str:
    others = [alias for alias in _ALIASES.get(word, ()) if alias != word]
    return f" (or *{'*, *'.join(others)}*)" if others else ""


def _quoted(text: str) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= _QUOTED_CHARS else one_line[: _QUOTED_CHARS - 1] + "…"


def reply_markdown(
    text: str,
    *,
    attachments: list[str],
    looked_into: str | None,
    mode_line: str,
) -> str:
    """The reply's Markdown for ``text`` (``mode_line``: the current mode and model, said when asked)."""
    matched = matched_keywords(text, looked_into=looked_into)
    doing = dict(KEYWORDS)
    lines = [f"You asked: **{_quoted(text) or '(no text)'}**", ""]
    if attachments:
        noun = "attachment" if len(attachments) == 1 else "attachments"
        lines += [f"I see {len(attachments)} {noun}: {', '.join(attachments)}.", ""]
    if matched:
        lines.append("I'm the scripted demo agent (no model, no network). From your prompt, I'll:")
        for word in matched:
            said = (
                doing[word].replace("a variable", f"`{looked_into}`")
                if word == "look into NAME"
                else doing[word]
            )
            lines.append(f"- {said} (*{word.replace('NAME', looked_into or 'NAME')}*)")
        if "mode" in matched:
            lines += ["", mode_line]
    else:
        lines.append(
            "I'm the scripted demo agent (no model, no network), so I can't answer that myself; I show what "
            "an agent's turn looks like. Put one of these words in a prompt:"
        )
        lines += [f"- *{word}*: {what}{_also(word)}" for word, what in KEYWORDS]
        if _DATA_WORDS.search(text):
            lines += ["", "For your data, try: `look into df` (with your variable's name)."]
    if "code" in matched:
        lines += ["", "```python", "def greet(name: str) -> str:", '    return f"Hello, {name}!"', "```"]
    return "\n".join(lines) + "\n"
