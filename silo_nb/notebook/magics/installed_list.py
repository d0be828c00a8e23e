"""``%silo agents --installed``: the pinned agents' cache (``sessions/agent_pins.py``), one line each.

Each entry is checked as before a start (file by file), so a tampered one shows as refused here, with the
folder to remove; an install that never finished shows as such (the next use installs it again).
"""

from __future__ import annotations

import anyio.to_thread

from silo_nb.sessions import data_dir, installed_agents

__all__ = ["installed_lines"]


async def installed_lines() -> list[str]:
    """The lines ``%silo agents --installed`` prints (the check reads every file: off the loop)."""
    entries = await anyio.to_thread.run_sync(installed_agents)
    if not entries:
        return [
            f"No pinned agents installed in {data_dir() / 'agents'} — name one in a profile "
            '(agent = "npm:PACKAGE@X.Y.Z") or in run_grid(agents=[...]); it is installed at its first use.'
        ]
    lines = [f"Pinned agents in {data_dir() / 'agents'}:"]
    for agent, folder, state in entries:
        if agent is None:
            lines.append(f"  {folder}: {state}")
        else:
            lines.append(f"  {agent.spec}  ({agent.kind} {agent.name} {agent.version})  {folder}  {state}")
    return lines
