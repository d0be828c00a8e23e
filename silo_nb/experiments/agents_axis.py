"""``run_grid(agents=[...])``: the agent axis — profile ids or pinned specs, each spec installed once.

The axis replaces ``profiles=`` (giving both is refused: which would the cells use?). Each spec is parsed
(and an ``acp:`` one resolved) before the run's folder exists, so a bad one is one line and leaves nothing;
on this loop each is installed here, once, before any cell starts — 1,000 cells of three agents make three
installs. Cells on Dask workers install on their machine (the entry's lock makes that once per machine).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from silo_nb.sessions import check_agent_spec, install_agent, is_agent_spec

__all__ = ["axis_slug", "pin_agents"]


async def pin_agents(agents: Sequence[str] | None, profiles: Sequence[str], *, local: bool) -> Sequence[str]:
    """The profile axis the grid runs: ``agents`` when given (specs checked, and installed if ``local``)."""
    if agents is None:
        return profiles
    if isinstance(agents, str) or not agents or not all(isinstance(a, str) and a for a in agents):
        raise ValueError(
            "agents= takes a non-empty list of profile ids or pinned specs, e.g. "
            "['demo', 'npm:@agentclientprotocol/claude-agent-acp@0.101.0']."
        )
    if tuple(profiles) != ("demo",):
        raise ValueError(
            "give the agents either as profiles= or as agents=, not both (agents= takes ids too)."
        )
    for agent in agents:
        if is_agent_spec(agent):
            check_agent_spec(agent)  # a bad spec or registry entry: one line, before the run's folder
    if local:
        for agent in dict.fromkeys(a for a in agents if is_agent_spec(a)):
            await install_agent(agent)
    return list(agents)


def axis_slug(profile: str, slug: Callable[[str], str]) -> str:
    """A cell id's part for ``profile``: a spec's slug ends with a hash, as two versions of one long package
    name would otherwise cut to the same 40 characters."""
    if not is_agent_spec(profile):
        return slug(profile)
    return f"{slug(profile)[:30].rstrip('-')}-{hashlib.sha256(profile.encode()).hexdigest()[:8]}"
