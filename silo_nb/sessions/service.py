"""``AgentSessionsService`` (``agents.sessions``): ``connect`` and ``read_journal``.

- ``connect`` validates what the user passed and hands over to ``sessions/connecting/connector.py``, which
  owns the routing (new / resume / load / journal-only / start fresh) and returns a finished handle.
- ``doctor`` starts a profile's agent and initializes it, without a session (``doctor.py``); ``forget``
  (``session/delete``) and ``logout`` do the same for a session that is not live here and for sign-in.
- ``read_journal`` reads a session's journal from disk without any agent (a live session's buffered
  lines are flushed first).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from silo_nb.model import (
    AgentSessionError,
    AgentSessionInputError,
    AgentSessionRestore,
    AgentSessionUpdate,
)
from silo_nb.sessions.connecting.bare_agent import agent_request, bare_agent
from silo_nb.sessions.connecting.connector import Connector
from silo_nb.sessions.doctor import AgentCheck, check_agent
from silo_nb.sessions.host import ConnectHost
from silo_nb.sessions.journal import JournalFiles, journal_profile
from silo_nb.sessions.mcp_servers import McpServerConfig
from silo_nb.sessions.profiles import AgentProfile
from silo_nb.sessions.session.handle import AgentSessionHandle

__all__ = ["AgentSessionsService"]


class AgentSessionsService:
    """``agents.sessions``: connect to chat agents and read their journals."""

    def __init__(self, host: ConnectHost, journals: JournalFiles) -> None:
        self._host = host
        self.journals = journals
        self._connector = Connector(host, journals)

    async def read_journal(
        self, session_id: str, *, workspace_id: str | None = None
    ) -> list[AgentSessionUpdate]:
        """The journal of ``session_id`` without connecting; ``[]`` when there is none."""
        if not isinstance(session_id, str) or not session_id:
            return []
        path = self.journals.path(workspace_id or self._host.workspace_id, session_id)
        return self.journals.read_updates(path)

    async def connect(
        self,
        profile_id: str,
        *,
        cwd: str | os.PathLike[str] | None = None,
        workspace_id: str | None = None,
        title: str | None = None,
        resume: AgentSessionRestore | Mapping[str, Any] | None = None,
        auth_method: str | None = None,
        mcp_servers: Iterable[McpServerConfig | Mapping[str, Any]] = (),
        system_prompt: str | None = None,
        system_prompt_mode: str | None = None,
        notebook_guidance: bool = False,
    ) -> AgentSessionHandle:
        """Spawn the profile's agent, initialize it and open (or restore) a session.

        ``auth_method`` (an id from the agent's ``authMethods``) signs in with that method first, as the
        profile's ``auth_method`` does; ``%silo login`` uses it. ``mcp_servers`` are offered to the
        agent besides the profile's (each like a profile's ``mcp_servers`` entry).

        ``system_prompt`` (and ``system_prompt_mode``, ``"append"`` or ``"override"``) replace the
        profile's: sent as ACP's ``systemPrompt`` to agents that take it (``system_prompt.py``; ``""``:
        none). ``notebook_guidance``: this is a kernel session, so silo_nb's guidance on the notebook
        tools is appended (unless the profile's ``notebook_guidance`` is false)."""
        restore = AgentSessionRestore.model_validate(dict(resume)) if isinstance(resume, Mapping) else resume
        servers = [
            s if isinstance(s, McpServerConfig) else McpServerConfig.model_validate(s) for s in mcp_servers
        ]
        return await self._connector.connect(
            profile_id,
            cwd=os.fspath(cwd) if cwd is not None else None,
            workspace_id=workspace_id,
            title=title,
            restore=restore,
            auth_method=auth_method,
            mcp_servers=servers,
            system_prompt=system_prompt,
            system_prompt_mode=system_prompt_mode,
            notebook_guidance=notebook_guidance,
        )

    async def doctor(self, profile_id: str, *, cwd: str | os.PathLike[str] | None = None) -> AgentCheck:
        """Start the profile's agent and ``initialize`` it — no session — and report what it offers and
        what is missing to sign in (``%silo doctor``). Unknown profiles raise ``AgentSessionError``."""
        profile = self._connector.resolve_profile(profile_id)
        work_dir = self._connector.work_dir(os.fspath(cwd) if cwd is not None else None)
        check = await check_agent(profile, str(work_dir), self._host.transport_factory)
        origin = self._host.profiles.origin(profile_id)
        return check if origin is None else dataclasses.replace(check, source=str(origin))

    async def forget(
        self,
        session_id: str,
        *,
        profile_id: str | None = None,
        journal: bool = False,
        cwd: str | os.PathLike[str] | None = None,
    ) -> bool:
        """Forget a session of this workspace (``%silo forget``): a live one here is deleted through its
        handle (:meth:`AgentSessionHandle.delete`); a dormant one's agent (``profile_id``, else the
        profile its journal names) is started for ``session/delete`` where it takes it. The journal is
        removed only with ``journal=True``. True when the agent deleted the session."""
        if not isinstance(session_id, str) or not session_id:
            raise AgentSessionInputError("forget() takes a session id, e.g. the one %silo agents lists.")
        handle = self._host.board.handle("chat:" + session_id)
        if isinstance(handle, AgentSessionHandle) and not handle.disposed:
            return await handle.delete(journal=journal)
        path = self.journals.path(self._host.workspace_id, session_id)
        profile_id = profile_id or journal_profile(self.journals.read_updates(path))
        if profile_id is None:
            raise AgentSessionInputError(
                f"Session {session_id}: no journal names its agent — pass profile_id (%silo forget "
                f"{session_id} --profile PROFILE)."
            )
        profile = self._connector.resolve_profile(profile_id)
        work_dir = str(self._connector.work_dir(os.fspath(cwd) if cwd is not None else None))
        with self.journals.holding(path, session_id):  # refused while another kernel has it open
            return await self._forget_dormant(session_id, profile, work_dir, path, journal=journal)

    async def _forget_dormant(
        self, session_id: str, profile: AgentProfile, work_dir: str, path: Path, *, journal: bool
    ) -> bool:
        deleted = False
        async with bare_agent(profile, work_dir, self._host.transport_factory, "session forgotten") as (
            connection,
            caps,
        ):
            if caps.can_delete:
                refused = f"{profile.display_label} would not delete session {session_id}"
                await agent_request(connection, "session/delete", {"sessionId": session_id}, refused, profile)
                deleted = True
        if journal:
            self.journals.remove(path, session_id)
        return deleted

    async def logout(self, profile_id: str, *, cwd: str | os.PathLike[str] | None = None) -> None:
        """ACP ``logout`` on the profile's agent (``%silo logout``): it forgets its sign-in. Raises
        ``AgentSessionError`` when the agent does not offer logout (its ``agentCapabilities.auth``)."""
        profile = self._connector.resolve_profile(profile_id)
        work_dir = str(self._connector.work_dir(os.fspath(cwd) if cwd is not None else None))
        async with bare_agent(profile, work_dir, self._host.transport_factory, "logged out") as (
            connection,
            caps,
        ):
            if not caps.can_logout:
                raise AgentSessionError(
                    f"{profile.display_label} does not offer logout (its agentCapabilities.auth) — sign out "
                    "with the agent's own command."
                )
            await agent_request(
                connection, "logout", {}, f"{profile.display_label} would not log out", profile
            )

    async def resume_in_place(self, handle: AgentSessionHandle) -> None:
        """A new agent process resumes (or loads) the live session and is swapped in
        (``AgentsService.resume``)."""
        await self._connector.resume_in_place(handle)
