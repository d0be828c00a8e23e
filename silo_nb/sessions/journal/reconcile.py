"""Reading a prior journal when a session is restored: is there a conversation, what was its title, and
how a ``session/load`` replay is reconciled with it (Silo §3.5). Written once, used by ``connect`` and
by the in-place resume."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterable
from typing import Any

from silo_nb.model import (
    RESUME_METADATA_KINDS,
    TURN_END_KIND,
    USER_PROMPT_KIND,
)
from silo_nb.sessions.journal.reader import parse_lines
from silo_nb.sessions.journal.writer import JournalWriter
from silo_nb.updates import (
    session_title,
)

__all__ = [
    "backfill_user_prompt_timestamps",
    "has_conversation_content",
    "last_commands",
    "last_title",
    "reconcile_load",
]

log = logging.getLogger("silo_nb.sessions")


def has_conversation_content(lines: Iterable[str]) -> bool:
    """True when some line is more than metadata (commands, titles, modes): Silo's rule. Lines are parsed
    one at a time until the first such line (usually the first: the prompt); a stream is read no further."""
    return any(update.kind not in RESUME_METADATA_KINDS for line in lines for update in parse_lines([line]))


def last_title(lines: Iterable[str]) -> str | None:
    """The most recent title an agent volunteered in a journal (the same rule as a live session). Only
    lines that can hold one are parsed: a long journal costs a substring scan (streamed), not a parse."""
    found = None
    for line in lines:
        if '"session_info_update"' not in line:
            continue
        for update in parse_lines([line]):
            if update.child_session_id is None:  # a subagent's title is its own
                found = session_title(update) or found
    return found


def last_commands(lines: Iterable[str]) -> Any:
    """The ``availableCommands`` of a journal's last ``available_commands_update`` (None: there is none),
    found as :func:`last_title` finds the title (streamed, only lines that can hold them parsed): a resumed
    session has them before the agent says them again, so ``%silo commands`` and the panel after a restart
    show what they showed before."""
    found = None
    for line in lines:
        if '"available_commands_update"' not in line:
            continue
        for update in parse_lines([line]):
            if update.kind == "available_commands_update":
                found = update.raw.get("availableCommands")
    return found


def reconcile_load(writer: JournalWriter, mark: int) -> None:
    """After a ``session/load`` replay (the lines ``writer`` accepted since ``mark``): the replay is
    authoritative; the prior lines only lend their prompt timestamps (and silo_nb's cell ids) by
    position. One atomic rewrite.

    A replay with no conversation in it never replaces a journal that has one (an agent that loads but
    replays nothing would otherwise wipe the transcript): the prior lines stay, the replay's metadata
    is appended after them."""
    prior, replayed = writer.lines_since(mark)
    if has_conversation_content(prior) and not has_conversation_content(replayed):
        log.info(
            "%s: the agent's load replayed no conversation; keeping the journal's %d lines",
            writer.path.name,
            len(prior),
        )
        return
    writer.replace_lines(backfill_user_prompt_timestamps(prior, replayed))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def backfill_user_prompt_timestamps(prior: list[str], replayed: list[str]) -> list[str]:
    """Copy prior user-prompt timestamps onto the replay's user chunks, matched by position.

    silo_nb also carries the notebook cell a prompt came from (``raw.cellId``), so a restored notebook
    still finds each cell's turn after an agent's replay replaced the journal, and each turn's journaled
    outcome (``turn_end``), put back before the next prompt. Lines that gain nothing
    pass through as the exact original string.
    """
    stamps: list[str | None] = []
    cells: list[str | None] = []
    # silo_nb's turn outcomes (``turn_end``) are not in any agent's replay: carried after the same turn.
    ends: dict[int, list[str]] = {}
    for line in prior:
        with contextlib.suppress(json.JSONDecodeError):
            value = json.loads(line)
            if isinstance(value, dict) and value.get("kind") == TURN_END_KIND:
                ends.setdefault(len(stamps), []).append(line)
            if isinstance(value, dict) and value.get("kind") == USER_PROMPT_KIND:
                stamp = value.get("timestamp")
                stamps.append(stamp if isinstance(stamp, str) else None)
                raw = value.get("raw")
                cell = raw.get("cellId") if isinstance(raw, dict) else None
                cells.append(cell if isinstance(cell, str) else None)
    out: list[str] = []
    position = 0
    for line in replayed:
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            out.append(line)
            continue
        if not (isinstance(value, dict) and value.get("kind") == USER_PROMPT_KIND):
            out.append(line)
            continue
        out += ends.pop(position, [])
        stamp = stamps[position] if position < len(stamps) else None
        cell = cells[position] if position < len(cells) else None
        position += 1
        raw = value.get("raw")
        changed = False
        if cell is not None and isinstance(raw, dict) and "cellId" not in raw:
            value["raw"] = {**raw, "cellId": cell}
            changed = True
        if stamp is not None and "timestamp" not in value:
            # Silo's key order: timestamp goes before toolCall/plan/usage/raw.
            ordered: dict[str, Any] = {}
            for key, item in value.items():
                if key in ("toolCall", "plan", "usage", "raw") and "timestamp" not in ordered:
                    ordered["timestamp"] = stamp
                ordered[key] = item
            ordered.setdefault("timestamp", stamp)
            value, changed = ordered, True
        out.append(_dumps(value) if changed else line)
    return out + [end for position in sorted(ends) for end in ends[position]]
