"""The real npm path of a pinned agent (issue 33): ``npm:@agentclientprotocol/claude-agent-acp@0.101.0``
installed by silo_nb with Node 24's npm into a cache that persists between runs (``tests/node/pinned``,
gitignored: CI pays the install once; npm's own cache makes even that offline after ``.ci/setup``), checked
file by file, then started from the cache by a profile naming only the spec: its ``initialize`` gives the
pinned version in ``agentInfo`` (claude-agent-acp answers offline with the dummy settings)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from silo_nb.sessions.agent_pins import MANIFEST, ensure_installed, install_agent, installed_agents
from tests.conftest import ROOT, Workspace
from tests.integration.conftest import VendorHomes
from tests.integration.vendor_agents import VENDORS, agent_environment, processes_with_home, profile

CLAUDE = "npm:@agentclientprotocol/claude-agent-acp@0.101.0"
CACHE = ROOT / "tests" / "node" / "pinned"


async def test_a_pinned_npm_agent_installs_once_and_starts_from_the_cache_with_its_version(
    workspace: Workspace, vendor_homes: VendorHomes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SILO_NB_DATA_DIR", str(CACHE))
    monkeypatch.delenv("SILO_NB_AGENT_NPM", raising=False)
    entries = sorted((CACHE / "agents").glob("npm-agentclientprotocol-claude-agent-acp-0.101.0-*"))
    before = {str(e): (e / MANIFEST).stat().st_mtime_ns for e in entries if (e / MANIFEST).exists()}
    with anyio.fail_after(600):
        agent = await install_agent(CLAUDE)
        again = await install_agent(CLAUDE)
    entry = Path(agent.path)
    assert again == agent and entry.parent == CACHE / "agents"
    manifest_mtime = (entry / MANIFEST).stat().st_mtime_ns
    if str(entry) in before:  # installed by an earlier run: used as it is, npm not run again
        assert manifest_mtime == before[str(entry)]
    assert ensure_installed(CLAUDE) == agent  # the full file-by-file check of the real tree passes
    package = json.loads(
        (entry / "node_modules/@agentclientprotocol/claude-agent-acp/package.json").read_text()
    )
    assert package["version"] == "0.101.0"
    assert agent.integrity is not None and agent.integrity.startswith("sha512-")  # npm's registry hash
    assert agent.args[0].startswith(str(entry)) and os.path.basename(agent.command) == "node"
    assert [(a.spec, state) for a, _, state in installed_agents() if a and a.path == agent.path] == [
        (CLAUDE, "ok")
    ]

    home = vendor_homes["claude"]
    with agent_environment():
        monkeypatch.setenv("SILO_NB_DATA_DIR", str(CACHE))
        entry_profile = profile(
            VENDORS["claude"], home, id="claude-pinned", command=CLAUDE, args=[], agent=CLAUDE
        )
        workspace.add_profiles(entry_profile)
        service = workspace.service()
        with anyio.fail_after(90):
            handle = await service.sessions.connect("claude-pinned")
        try:
            info = handle.init_result["agentInfo"]
            assert (info["name"], info["version"]) == ("@agentclientprotocol/claude-agent-acp", "0.101.0")
        finally:
            await handle.aclose()
    assert processes_with_home(home) == []
    assert (entry / MANIFEST).stat().st_mtime_ns == manifest_mtime  # the connect installed nothing
