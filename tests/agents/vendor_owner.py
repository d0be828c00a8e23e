"""A stand-in kernel for the vendor-agent orphan test: ``vendor_owner.py WORKSPACE PROFILE [MODE]`` starts
the agent of the profile named (``SILO_NB_PROFILES`` points at the file) — ``session`` (the default):
connects a session; ``initialize``: only initializes it (an agent that opens no session offline) — prints
``ready <what>``, then waits to be SIGKILLed."""

from __future__ import annotations

import sys
import tempfile

import anyio

import silo_nb
from silo_nb.acp import PROTOCOL_VERSION, AgentConnection, client_capabilities


async def main() -> None:
    workspace, profile_id = sys.argv[1], sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "session"
    service = silo_nb.AgentsService(workspace_dir=workspace, config_dirs=[], data_dir=tempfile.mkdtemp())
    if mode == "session":
        handle = await service.sessions.connect(profile_id)
        print(f"ready {handle.session_id}", flush=True)
    else:
        profile = service.profiles.get(profile_id)
        assert profile is not None, profile_id
        connection = await AgentConnection.start(profile.command, profile.args, env=profile.spawn_env)
        params = {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": client_capabilities()}
        await connection.rpc.request("initialize", params)
        print(f"ready {profile_id}", flush=True)
    await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main)
