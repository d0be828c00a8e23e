"""Small pure helpers of the journal writer (``journal.py``): its encoding, its torn-tail check, its wording.

Writes stay in ``journal.py`` (its tests replace that module's ``os`` to script short and failed writes).
"""

from __future__ import annotations

import os

__all__ = ["encode_text", "ends_torn", "reason"]


def encode_text(text: str) -> bytes:
    # A lone surrogate (valid JSON: "\ud800") cannot be UTF-8; it only occurs inside a JSON string, where
    # backslashreplace's "\ud800" is the same character's JSON escape. The handler only runs on a
    # character that fails, so text UTF-8 can encode costs nothing extra and is byte-identical.
    return text.encode("utf-8", "backslashreplace")


def ends_torn(fd: int) -> bool:
    """Whether the file ends in a partial line (not empty, no final newline)."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def reason(exc: OSError) -> str:
    return exc.strerror or str(exc)
