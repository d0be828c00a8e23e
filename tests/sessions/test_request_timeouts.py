"""Issue 21, item 3 (the sessions side): every request silo_nb sends has a timeout. Requests outside a
connect and a turn (``session/set_config_option`` and its legacy fallbacks, ``session/list``,
``session/delete``, ``logout``) are bounded by the profile's ``request_timeout`` (default 30 s); before,
``set_config_option`` on an agent that never answers waited forever. Real subprocess agent:
``tests/agents/raw_agent.py mute-setter``.
"""

from __future__ import annotations

import anyio
import pytest

import silo_nb
from tests.conftest import Workspace, raw_agent


def mute(workspace: Workspace) -> silo_nb.AgentsService:
    workspace.add_profiles(raw_agent("mute-setter", request_timeout=0.5))
    return workspace.service()


async def test_a_config_option_the_agent_never_sets_fails_at_the_request_timeout(
    workspace: Workspace,
) -> None:
    svc = mute(workspace)
    async with await svc.sessions.connect("raw-mute-setter") as handle:
        with anyio.fail_after(20), pytest.raises(silo_nb.AgentSessionError) as caught:
            await handle.set_config_option("mode", "code")
        message = str(caught.value)
        assert "did not answer session/set_config_option within 0.5 s" in message
        assert "request_timeout" in message and "\n" not in message
        assert handle.is_live  # the session carries on
        with (
            anyio.fail_after(20),
            pytest.raises(silo_nb.AgentSessionError, match=r"session/list within 0\.5 s"),
        ):
            await handle.list_sessions()


async def test_a_dormant_delete_the_agent_never_answers_fails_at_the_request_timeout(
    workspace: Workspace,
) -> None:
    svc = mute(workspace)
    with anyio.fail_after(20), pytest.raises(silo_nb.AgentSessionError) as caught:
        await svc.sessions.forget("gone-1", profile_id="raw-mute-setter")
    assert "session/delete within 0.5 s" in str(caught.value)
