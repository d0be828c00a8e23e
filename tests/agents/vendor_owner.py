"""A stand-in kernel for the vendor-agent orphan test: connects a session to the profile named in argv
(``SILO_NB_PROFILES`` points at the file), prints ``ready <session id>``, then waits to be SIGKILLed."""

from __future__ import annotations

import sys
import tempfile

import anyio

import silo_nb


async def main() -> None:
    workspace, profile = sys.argv[1], sys.argv[2]
    service = silo_nb.AgentsService(workspace_dir=workspace, config_dirs=[], data_dir=tempfile.mkdtemp())
    handle = await service.sessions.connect(profile)
    print(f"ready {handle.session_id}", flush=True)
    await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main)
