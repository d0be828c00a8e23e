"""``%silo agents``' dormant sessions: which ones to list, and the name a Resume reconnects one under.

- :func:`dormant_sessions` asks ``sessions.dormant`` for this workspace's sessions from earlier kernels,
  minus the ones connected now (in this kernel, any workspace of the service), with the profiles' labels
  as title fallback. Where a live connection of a session's profile offers ``session/status`` (ACP v1.25),
  the agent is asked about it (no side effects; the first :data:`STATUS_ASKED` sessions, within
  :data:`STATUS_SECONDS` in all): one it no longer knows is marked stale (Continue, not Resume).
- :func:`resume_target` checks a dormant session can be reconnected from here (its profile is known and
  still exists) and picks the connection NAME: the one it had in its notebook, or, when that is taken by a
  live connection or is not a Python identifier, a fresh ``NAME_2``, ``NAME_3``… The connect itself is
  ``%silo connect``'s (``magics/silo.py``), so a resumed session behaves exactly like one connected there.
"""

from __future__ import annotations

import dataclasses
import logging

import anyio
from IPython.core.error import UsageError

from silo_nb.model import AgentSessionError
from silo_nb.notebook.magics.connections import NotebookSession
from silo_nb.sessions import AgentSessionHandle, DormantSession, scan_dormant

__all__ = ["STATUS_ASKED", "STATUS_SECONDS", "dormant_sessions", "resume_target"]

log = logging.getLogger("silo_nb.notebook")

STATUS_ASKED = 20  # dormant sessions whose agent is asked session/status, most recent first
STATUS_SECONDS = 2.0  # for all of them: the list never waits longer on the agents


async def dormant_sessions(session: NotebookSession) -> list[DormantSession]:
    service = session.service
    live = {info.session_id for info in service.get_state(all_workspaces=True) if info.session_id}
    live |= {c.handle.session_id for c in session.connections.values() if c.handle is not None}
    labels = {profile.id: profile.label for profile in service.profiles.list()}
    found = await scan_dormant(
        service.data_dir,
        service.workspace_id,
        live_ids=live,
        profile_labels=labels,
        summaries=service.journal_summaries,
    )
    return await _asked_status(session, found)


async def _asked_status(session: NotebookSession, found: list[DormantSession]) -> list[DormantSession]:
    """``found``, with what a live connection of each one's profile says of it (``session/status``)."""
    askers: dict[str, AgentSessionHandle] = {}
    for connection in session.connections.values():
        handle = connection.handle
        if handle is not None and handle.is_live and handle.can_status:
            askers.setdefault(connection.profile_id, handle)
    if not askers:
        return found
    answered = list(found)
    with anyio.move_on_after(STATUS_SECONDS):
        for index, dormant in enumerate(found[:STATUS_ASKED]):
            handle = askers.get(dormant.profile_id or "")
            if handle is None:
                continue
            try:
                status = await handle.session_status(dormant.session_id)
            except AgentSessionError as exc:
                log.info("session/status of %s: %s", dormant.session_id, exc)
                continue
            answered[index] = dataclasses.replace(dormant, agent_status=status)
    return answered


def resume_target(session: NotebookSession, dormant: DormantSession) -> tuple[str, str]:
    """``(NAME, profile id)`` to reconnect ``dormant`` under, or a one-line ``UsageError``."""
    profile = dormant.profile_id
    sid = dormant.session_id
    if profile is None:
        raise UsageError(
            f"Session {sid} recorded no profile — run %silo connect PROFILE --resume {sid} "
            "with its agent's profile."
        )
    known = [p.id for p in session.service.profiles.list()]
    if profile not in known:
        raise UsageError(
            f'Session {sid} was connected with profile "{profile}", which no longer exists '
            f"(profiles: {', '.join(known) or 'none'}) — run %silo connect PROFILE --resume {sid}."
        )
    base = dormant.name if dormant.name and dormant.name.isidentifier() else profile.replace("-", "_")
    if not base.isidentifier():
        base = "agent"
    name, n = base, 1
    while name in session.connections:
        n += 1
        name = f"{base}_{n}"
    return name, profile
