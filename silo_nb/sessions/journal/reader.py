"""Reading journals: a file or its lines to ``AgentSessionUpdate`` models (each line by ``lines.py``).

- The bytes are split once and each line decoded by orjson (:func:`silo_nb.acp.framing.has_long_number`
  checks the whole file in one C-speed pass first: lines that may hold an integer beyond 64 bits, which
  orjson would turn into a float, go to the stdlib's parser instead, as do lines orjson refuses: a lone
  surrogate's escape, invalid UTF-8 (decoded with replacement characters, as the stdlib path always did)).
- The collector is paused while the models are built: 100,000 updates allocate millions of containers,
  and its passes over them (none of which is garbage yet) were most of a restore's time; what a read of
  over ``BIG_JOURNAL_BYTES`` built goes to the oldest generation without a pass (``gc_paused``).
- A line that does not parse, or is not an update, is skipped (logged at debug); nothing here raises.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from silo_nb.acp.framing import has_long_number
from silo_nb.sessions.journal.lines import journal_line_to_update
from silo_nb.sessions.kinds import TURN_END_KIND
from silo_nb.sessions.models import AgentSessionUpdate
from silo_nb.util import gc_paused

__all__ = ["BIG_JOURNAL_BYTES", "journal_profile", "parse_blob", "parse_lines", "read_lines", "read_updates"]

log = logging.getLogger("silo_nb.journal")

_SKIP = object()
BIG_JOURNAL_BYTES = 1 << 20  # from here on a read's objects are promoted (``util.gc_paused``)


def read_lines(path: Path) -> list[str]:
    """Every non-blank line of a journal; ``[]`` when it is missing or unreadable. Never raises."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    text = data.decode("utf-8", "replace")
    return [line for line in text.split("\n") if line and not line.isspace()]


def parse_lines(lines: Iterable[str]) -> list[AgentSessionUpdate]:
    """Lines to updates, skipping any that do not parse or lack a string ``kind``."""
    lines = lines if isinstance(lines, list) else list(lines)
    if any("\n" in line for line in lines):  # JSON texts over several lines: a newline is only whitespace
        lines = [line.replace("\n", " ") for line in lines]
    # Text a journal line holds that UTF-8 cannot (a lone surrogate) is its JSON escape, as on disk.
    return parse_blob("\n".join(lines).encode("utf-8", "backslashreplace"))


def read_updates(path: Path) -> list[AgentSessionUpdate]:
    """``parse_lines(read_lines(path))`` without building the lines in between. Never raises."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    return parse_blob(data)


def _stdlib(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        log.debug("skipped a journal line that is not JSON: %.120r", line)
        return _SKIP


def parse_blob(data: bytes) -> list[AgentSessionUpdate]:
    """The updates of a journal's bytes (newline-separated JSON lines), in order."""
    careful = has_long_number(data)
    loads = orjson.loads
    updates: list[AgentSessionUpdate] = []
    with gc_paused(promote=len(data) >= BIG_JOURNAL_BYTES):
        for line in data.split(b"\n"):
            if not line or line.isspace():
                continue
            if careful and has_long_number(line):
                value = _stdlib(line)
            else:
                try:
                    value = loads(line)
                except orjson.JSONDecodeError:
                    value = _stdlib(line)
            if value is _SKIP:
                continue
            update = journal_line_to_update(value)
            if update is not None:
                updates.append(update)
    return updates


def journal_profile(updates: Iterable[AgentSessionUpdate]) -> str | None:
    """The profile id the journal's last turn end names (``raw.profile``), or None."""
    found = None
    for update in updates:
        if update.kind == TURN_END_KIND and isinstance(update.raw.get("profile"), str):
            found = update.raw["profile"]
    return found
