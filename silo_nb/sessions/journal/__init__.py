"""The transcript journal: one ``AgentSessionUpdate`` per line, Silo's camelCase JSON, one file per session.

- ``files.py``: :class:`JournalFiles`, the journals of one data dir and the writers open on them; it owns
  their locks (``locks.py``: one process writes a journal at a time).
- ``writer.py``: :class:`JournalWriter` (append-only, debounced, nothing accepted is ever dropped), with
  ``disk.py`` (its low-level writes) — ``reader.py``: files and lines to updates — ``lines.py``: one
  update as a line and back (the envelope; the fields are read by ``parse/fields.py``) —
  ``reconcile.py``: a prior journal against a ``session/load`` replay.
"""

from __future__ import annotations

from silo_nb.sessions.journal.files import JournalFiles
from silo_nb.sessions.journal.lines import encode_line, journal_line_to_update, update_json
from silo_nb.sessions.journal.reader import (
    BIG_JOURNAL_BYTES,
    MAX_LINE_BYTES,
    ReadCounts,
    iter_blocks,
    iter_lines,
    journal_profile,
    open_journal,
    parse_blob,
    parse_lines,
    read_lines,
    read_updates,
)
from silo_nb.sessions.journal.writer import FLUSH_DELAY_SECONDS, JournalWriter

__all__ = [
    "BIG_JOURNAL_BYTES",
    "FLUSH_DELAY_SECONDS",
    "MAX_LINE_BYTES",
    "JournalFiles",
    "JournalWriter",
    "ReadCounts",
    "encode_line",
    "iter_blocks",
    "iter_lines",
    "journal_line_to_update",
    "journal_profile",
    "open_journal",
    "parse_blob",
    "parse_lines",
    "read_lines",
    "read_updates",
    "update_json",
]
