"""Claude's adapter (claude-agent-acp 0.101.0) with the ACP v1.25 capabilities silo_nb advertises (issue 31):
a notice arrives as a ``notice`` update — a banner in the turn — where, for a client that does not advertise
``session.notices``, the same adapter folds it into the agent's message text as a bold label.

The notice: a client-given MCP server that fails to start (a stdio command that exits at once), reported
by the adapter when the first prompt's query starts (the model call then fails at the closed port and the
turn is stopped). Both runs use the same profile, HOME and prompt; only the advertised capabilities differ.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.acp.client import background_closes, client_capabilities
from silo_nb.notebook.render import transcript_html
from silo_nb.sessions.connecting import handshake
from silo_nb.updates.transcript import fold_all
from tests.integration.conftest import VendorHomes
from tests.integration.vendor_agents import VENDORS, agent_environment, profile

BROKEN = {"name": "broken", "command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}
TITLE = 'MCP server "broken" failed to start'
WAIT = 90.0  # seconds for the adapter to start its query and report (2 cores, Node start-up included)


async def _turn(root: Path, home: Path, caps: Any) -> list[silo_nb.AgentSessionUpdate]:
    (root / "config" / "silo").mkdir(parents=True)
    spec = profile(VENDORS["claude"], home, mcp_servers=[BROKEN], cancel_timeout=3.0)
    (root / "config" / "silo" / "profiles.json").write_text(json.dumps({"profiles": [spec]}))
    (root / "project").mkdir()
    svc = silo_nb.AgentsService(
        workspace_dir=root / "project", config_dirs=[root / "config"], data_dir=root / "data"
    )
    seen: list[silo_nb.AgentSessionUpdate] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(handshake, "client_capabilities", caps)
        handle = await svc.sessions.connect("claude")
    try:
        handle.on_transcript(seen.append)
        async with anyio.create_task_group() as tg:

            async def prompt() -> None:
                with contextlib.suppress(silo_nb.AgentSessionError):  # the model call fails offline
                    await handle.prompt([{"type": "text", "text": "hi"}])

            tg.start_soon(prompt)
            with anyio.move_on_after(WAIT):
                while not any(TITLE in (u.text or str(u.raw.get("title"))) for u in seen):
                    await anyio.sleep(0.2)
            handle.cancel()
            with anyio.move_on_after(10):
                while handle.core.turns.prompts_in_flight:
                    await anyio.sleep(0.1)
            tg.cancel_scope.cancel()
    finally:
        await handle.aclose()
        await background_closes()
    return seen


def _without_notices(**flags: Any) -> dict[str, Any]:
    """The capabilities of a client from before v1.25: no ``session.notices``/``compaction``, no plans."""
    caps = client_capabilities(**flags)
    caps.pop("plan", None)
    caps["session"] = {"configOptions": caps["session"]["configOptions"]}
    return caps


def test_claude_sends_a_notice_where_it_folded_it_into_message_text(
    tmp_path: Path, vendor_homes: VendorHomes
) -> None:
    home = vendor_homes["claude"]
    with agent_environment():
        now = anyio.run(_turn, tmp_path / "now", home, client_capabilities)
        before = anyio.run(_turn, tmp_path / "before", home, _without_notices)
    notices = [u for u in now if u.kind == "notice"]
    assert [(u.raw.get("severity"), u.raw.get("title")) for u in notices] == [("warning", TITLE)]
    assert not any(TITLE in (u.text or "") for u in now if u.kind == "agent_message_chunk")
    html = transcript_html(fold_all(now))
    assert 'class="silo-notice" data-severity="warning"' in html and TITLE.replace('"', "&quot;") in html
    # The same adapter, to a client that does not say it takes notices: a bold label in the reply.
    assert not any(u.kind == "notice" for u in before)
    folded = "".join(u.text or "" for u in before if u.kind == "agent_message_chunk")
    assert TITLE in folded, [(u.kind, u.text) for u in before]
