"""The files the demo agent really edits: ``notes.md`` in the session's working directory (and, for a
``fix`` turn, the Python file it fixes: fixes.py uses :func:`read_small_text` and :func:`apply_text_edit`).

- An edit turn reads ``notes.md`` (or finds it missing), proposes appending one line made from the prompt
  (the text after its first ``:``, else the whole prompt), and writes it only once the client allowed it.
  So a permission has a visible effect: allowed, the file changes; rejected, it does not.
- Only a small (≤ 64 KiB) regular UTF-8 file is touched, never through a symbolic link, and the write
  is an append (or an exclusive create) after checking that the file still holds what was read, so a file
  the user changed meanwhile is left alone and the agent says so.
- Plain blocking file calls, kept out of the async turn script: they are a few small reads and writes.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Final

NOTES_FILE: Final = "notes.md"
MAX_BYTES: Final = 64 * 1024
NEW_FILE_HEADER: Final = "# Notes\n\n"
MAX_NOTE_CHARS: Final = 100


@dataclass(frozen=True)
class NotesEdit:
    """What an edit turn found and proposes. ``old_text`` None: the file does not exist yet."""

    path: str
    old_text: str | None
    new_text: str
    problem: str | None = None  # why the file cannot be edited (then no edit is proposed)


def note_line(prompt: str) -> str:
    """The line an edit appends: the prompt on one line, after its first ``:`` when there is one."""
    text = " ".join(prompt.split())
    _, colon, after = text.partition(":")
    note = after.strip() if colon and after.strip() else text
    if len(note) > MAX_NOTE_CHARS:
        note = note[: MAX_NOTE_CHARS - 1] + "…"
    return f"- {note or '(an empty prompt)'}\n"


def read_small_text(path: str, name: str = NOTES_FILE) -> tuple[str | None, str | None]:
    """(text, problem): text None when the file is missing; problem says why ``name`` cannot be edited."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read {name}: {exc.strerror or exc}"
    if stat.S_ISLNK(info.st_mode):
        return None, f"{name} is a symbolic link; the demo agent edits only plain files"
    if not stat.S_ISREG(info.st_mode):
        return None, f"{name} is not a regular file; the demo agent edits only plain files"
    if info.st_size > MAX_BYTES:
        return None, f"{name} is over {MAX_BYTES // 1024} KiB; the demo agent edits only small files"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        return None, f"cannot read {name}: {exc.strerror or exc}"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, f"{name} is not UTF-8 text; the demo agent edits only text files"


def plan_edit(cwd: str, prompt: str) -> NotesEdit:
    """Read ``notes.md`` in ``cwd`` and propose the edit (nothing is written here)."""
    path = os.path.join(cwd, NOTES_FILE)
    text, problem = read_small_text(path)
    return edit_from(path, text, prompt, problem)


def edit_from(path: str, text: str | None, prompt: str, problem: str | None = None) -> NotesEdit:
    """The edit of ``notes.md`` at ``path`` whose text is ``text`` (None: missing), however it was read."""
    if problem is not None:
        return NotesEdit(path, None, "", problem)
    line = note_line(prompt)
    if text is None:
        return NotesEdit(path, None, NEW_FILE_HEADER + line)
    separator = "" if text == "" or text.endswith("\n") else "\n"
    return NotesEdit(path, text, text + separator + line)


def apply_edit(edit: NotesEdit) -> str | None:
    """Write an allowed edit; None when done, else why nothing was written (one line)."""
    current, problem = read_small_text(edit.path)
    if problem is not None:
        return problem
    if current != edit.old_text:
        return f"{NOTES_FILE} changed since it was read, so nothing was written; ask again"
    try:
        if edit.old_text is None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            data = edit.new_text
        else:
            flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW
            data = edit.new_text[len(edit.old_text) :]
        fd = os.open(edit.path, flags, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
    except OSError as exc:
        return f"cannot write {NOTES_FILE}: {exc.strerror or exc}"
    return None


def apply_text_edit(path: str, old_text: str | None, new_text: str, name: str) -> str | None:
    """Replace a small file's whole text (fixes.py); None when done, else why nothing was written.

    The same checks as :func:`apply_edit`: a plain small UTF-8 file that still holds ``old_text``.
    """
    current, problem = read_small_text(path, name)
    if problem is not None:
        return problem
    if current is None or current != old_text:
        return f"{name} changed since it was read, so nothing was written; ask again"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(new_text)
    except OSError as exc:
        return f"cannot write {name}: {exc.strerror or exc}"
    return None
