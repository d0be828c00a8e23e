"""The process's default ``AgentsService`` (Silo's ``ctx.agents``): ``silo_nb.agents`` and the notebook
extension use it. Made on first use, so importing silo_nb reads no files and starts nothing.

It lives here, in the sessions layer, so the notebook front end asks for it without climbing to the
package root. It is the one deliberately process-wide object of the layer: one workspace, one kernel.
"""

from __future__ import annotations

from silo_nb.sessions.agents import AgentsService

__all__ = ["default_agents", "has_default_agents"]


class _Default:
    service: AgentsService | None = None


def default_agents() -> AgentsService:
    if _Default.service is None:
        _Default.service = AgentsService()
    return _Default.service


def has_default_agents() -> bool:
    """Whether the default service was made yet (importing silo_nb must not make it)."""
    return _Default.service is not None
