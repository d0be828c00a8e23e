"""``%silo connect --replay SESSION_ID|JOURNAL``: which journal a replay plays, as a profile of its own.

A session id of this workspace names its journal; anything else is a journal file (relative to the
workspace folder). The profile runs silo_nb's replay agent on it (``sessions.profiles.replay_profile``),
never a command the notebook chose, so a notebook may ask for it.
"""

from __future__ import annotations

from pathlib import Path

from IPython.core.error import UsageError

from silo_nb.notebook.magics.connections import NotebookSession

__all__ = ["replay_profile_id"]


def replay_profile_id(session: NotebookSession, target: str, speed: float) -> str:
    """The id of a profile that plays ``target`` back at ``speed``, or a one-line ``UsageError``."""
    if speed < 0:
        raise UsageError(f"%silo connect: --speed {speed} — give 0 (no pauses) or more (1: as recorded).")
    service = session.service
    journals = service.sessions.journals
    try:
        by_id = journals.path(service.workspace_id, target)
    except ValueError:
        by_id = None
    as_file = Path(target).expanduser()
    as_file = as_file if as_file.is_absolute() else service.workspace_folder / as_file
    journal = by_id if by_id is not None and by_id.is_file() else as_file
    if not journal.is_file():
        raise UsageError(
            f"%silo connect --replay: {target!r} is neither a session of this workspace (see %silo agents) "
            "nor a journal file."
        )
    return service.profiles.add_replay(journal.resolve(), speed)
