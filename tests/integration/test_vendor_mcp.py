"""Which vendor agents start a stdio MCP server given in ``session/new``'s ``mcpServers`` (for the kernel
tools): each agent that opens a session offline gets ``tests/agents/mcp_probe.py`` (which notes its start
and every message, and answers like a server with no tools) at ``session/new``, driven on the ACP layer
(``AgentConnection``) with the same dummies as the other vendor tests, concurrently.

Seen with these versions: claude-agent-acp (via its ``claude`` child), codex-acp (its native child, with
only HOME/LANG/PATH/TERM of the environment), opencode and qwen-code start it and send MCP
``initialize``; gemini-cli skips it in an untrusted folder (its default), silently; pi-acp ignores
stdio servers (it has no MCP support). copilot opens no session offline, so it is not known.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from silo_nb.acp import PROTOCOL_VERSION, AcpRpcError, AgentConnection, client_capabilities
from silo_nb.acp.client import background_closes
from tests.conftest import AGENTS
from tests.integration.conftest import VendorHomes
from tests.integration.vendor_agents import VENDORS, agent_environment, processes_with_home, profile

STARTS_MCP = {"claude": True, "codex": True, "gemini": False, "opencode": True, "pi": False, "qwen": True}
AFTER_SESSION = 5.0  # seconds to wait after session/new for a server the agent starts lazily


async def _probe(name: str, home: Path, folder: Path, seen: dict[str, list[str]]) -> None:
    vendor = VENDORS[name]
    spec = profile(vendor, home)
    log = folder / f"{name}.log"
    log.touch()
    cwd = folder / name
    cwd.mkdir()
    connection = await AgentConnection.start(spec["command"], spec["args"], env=spec["env"], cwd=str(cwd))
    try:
        with anyio.fail_after(90):
            init = await connection.rpc.request(
                "initialize",
                {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": client_capabilities()},
            )
            for method in init.get("authMethods") or []:  # a provider key that is set: sign in with it
                if (method.get("_meta") or {}).get("api-key"):
                    try:
                        await connection.rpc.request("authenticate", {"methodId": method["id"]})
                    except AcpRpcError:
                        continue
                    break
            server = {
                "name": "probe",
                "command": sys.executable,
                "args": [str(AGENTS / "mcp_probe.py"), str(log)],
            }
            await connection.rpc.request(
                "session/new", {"cwd": str(cwd), "mcpServers": [{**server, "env": []}]}
            )
        with anyio.move_on_after(AFTER_SESSION):
            while "initialize" not in log.read_text():
                await anyio.sleep(0.1)
    finally:
        await connection.aclose()
    seen[name] = log.read_text().splitlines()


async def test_which_agents_start_a_stdio_mcp_server_from_mcp_servers(
    tmp_path: Path, vendor_homes: VendorHomes
) -> None:
    seen: dict[str, list[str]] = {}
    with agent_environment():
        async with anyio.create_task_group() as tg:
            for name in STARTS_MCP:
                tg.start_soon(_probe, name, vendor_homes[name], tmp_path, seen)
        await background_closes()
    started = {name: any(line.startswith("start ") for line in lines) for name, lines in seen.items()}
    assert started == STARTS_MCP, seen
    for name, lines in seen.items():
        if started[name]:
            assert any(line.startswith("initialize") for line in lines), (name, lines)
    for name in STARTS_MCP:  # the server went with its agent
        assert processes_with_home(vendor_homes[name]) == [], name
