"""The vendor agents' own MCP clients start the kernel tools' server at ``session/new`` and list its tools,
offline (item 4 of issue 19).

- Each pinned agent of ``tests/node`` is connected with the "notebook" server in ``mcpServers``, behind a
  tap (``tests/kernel_tools/mcp_tap.py``) that logs the MCP lines both ways; the agent starts it, its MCP
  client (Claude Code's, gemini-cli's, Codex's) initializes it and asks ``tools/list``, and the relay
  answers with the five tools — no prompt, no network, no real key.
- What each needs offline: the dummies of ``vendor_agents.VENDORS``, and gemini
  ``GEMINI_CLI_TRUST_WORKSPACE=true`` (an untrusted folder gets no MCP servers); each agent has its own
  HOME (``vendor_homes``) and runs on Node 24 (``agent_environment``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from silo_nb.kernel_tools import KernelNamespace, KernelToolServer
from silo_nb.kernel_tools.wire import TOOL_NAMES
from silo_nb.sessions.mcp_servers import McpServerConfig
from tests.conftest import ROOT, Workspace
from tests.integration.conftest import VendorHomes
from tests.integration.vendor_agents import VENDORS, agent_environment, processes_with_home, profile

TAP = ROOT / "tests" / "kernel_tools" / "mcp_tap.py"
OFFLINE: dict[str, dict[str, str]] = {
    "claude": {},
    "gemini": {"GEMINI_CLI_TRUST_WORKSPACE": "true"},
    "codex": {},
}
CLIENTS = {"claude": "claude-code", "gemini": "gemini-cli-mcp-client", "codex": "codex-mcp-client"}


def logged(log: Path, prefix: str) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    lines = log.read_text().splitlines()
    return [json.loads(line[len(prefix) :]) for line in lines if line.startswith(prefix)]


def client_name(request: dict[str, Any]) -> str | None:
    params = request.get("params") or {}
    info = params.get("clientInfo") or (params.get("_meta") or {}).get("io.modelcontextprotocol/clientInfo")
    return info.get("name") if isinstance(info, dict) else None


@pytest.mark.parametrize("agent", sorted(OFFLINE))
async def test_the_agent_s_own_mcp_client_starts_the_server_and_lists_its_tools(
    agent: str,
    workspace: Workspace,
    vendor_homes: VendorHomes,
    tmp_path: Path,
) -> None:
    home = vendor_homes[agent]
    spec = profile(VENDORS[agent], home)
    spec["env"].update(OFFLINE[agent])
    workspace.add_profiles(spec)
    server = await KernelToolServer(KernelNamespace({})).start()
    log = tmp_path / "mcp.log"
    config = server.server_config
    tapped = McpServerConfig(
        name="notebook",
        command=sys.executable,
        args=(str(TAP), str(log), config.command or "", *config.args),
        env=config.env,
    )
    with agent_environment():
        await _connect_and_list(workspace, agent, tapped, log, server)
    assert processes_with_home(home) == [], "the agent or its MCP child was left behind"
    requests = logged(log, ">> ")
    answered = [a for a in logged(log, "<< ") if a.get("id") == _tools_list(log)[0]["id"]]
    opening = [r for r in requests if r.get("method") in ("initialize", "server/discover")]
    assert opening and client_name(opening[0]) == CLIENTS[agent]
    assert sorted(tool["name"] for tool in answered[0]["result"]["tools"]) == sorted(TOOL_NAMES)
    assert server.served == 0  # it only listed them: no tool ran outside a turn


def _tools_list(log: Path) -> list[dict[str, Any]]:
    return [r for r in logged(log, ">> ") if r.get("method") == "tools/list"]


async def _connect_and_list(
    workspace: Workspace, agent: str, tapped: McpServerConfig, log: Path, server: KernelToolServer
) -> None:
    handle = await workspace.service(subprocess=True).sessions.connect(agent, mcp_servers=[tapped])
    try:
        with anyio.fail_after(60):
            while True:
                asked = _tools_list(log)
                answered = [a for a in logged(log, "<< ") if asked and a.get("id") == asked[0]["id"]]
                if answered:
                    break
                await anyio.sleep(0.2)
    finally:
        await handle.aclose()
        await server.aclose()
