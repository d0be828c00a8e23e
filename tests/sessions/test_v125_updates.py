"""Every ACP v1.25 kind silo_nb reads (issue 31), sent by an agent through a real session: a scripted agent
sends a notice, a compaction with its summary, named plans, a kind silo_nb does not know and a prompt
answer with usage; each reaches ``on_update``, the journal keeps it, and the cell restored from the journal
shows what the live cell showed. The demo agent's ``/compact`` sends a notice and a compaction to a client
that advertises them (silo_nb), as a quickstart shows."""

from __future__ import annotations

from typing import Any

from silo_nb.notebook.render import transcript_html, transcript_text
from silo_nb.updates.transcript import fold_all
from tests.agents.scripted import Peer, scripted_service
from tests.conftest import Workspace

SENT: list[dict[str, Any]] = [
    {"sessionUpdate": "notice", "severity": "warning", "title": "Context 90% full"},
    {"sessionUpdate": "compaction_update", "compactionId": "k1", "status": "in_progress"},
    {
        "sessionUpdate": "compaction_summary_chunk",
        "compactionId": "k1",
        "content": {"type": "text", "text": "Kept"},
    },
    {"sessionUpdate": "compaction_update", "compactionId": "k1", "status": "completed"},
    {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p1", "content": "1. plot"}},
    {"sessionUpdate": "plan_removed", "planId": "p1"},
    {"sessionUpdate": "shell_output", "toolCallId": "t1", "output": "ok"},
]


async def every_kind(peer: Peer, _prompt: str) -> dict[str, Any]:
    for update in SENT:
        await peer.update(update)
    return {"stopReason": "end_turn", "usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}}


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


def one_turn(updates: list[Any]) -> list[Any]:
    kinds = [u.kind for u in updates]
    return updates[kinds.index("user_message_chunk") : kinds.index("turn_end") + 1]


async def test_every_new_kind_reaches_listeners_the_journal_and_the_restored_cell(
    workspace: Workspace,
) -> None:
    svc = scripted_service(workspace, every_kind)
    async with await svc.sessions.connect("scripted") as handle:
        heard: list[Any] = []
        shown: list[Any] = []
        handle.on_update(heard.append)
        handle.on_transcript(shown.append)
        await handle.prompt(text("go"))
        journal = list(handle.journal_updates())
    sent_kinds = [u["sessionUpdate"] for u in SENT]
    assert [u.kind for u in heard if u.kind in sent_kinds] == sent_kinds
    assert [u.kind for u in journal if u.kind in sent_kinds] == sent_kinds
    live = transcript_html(fold_all(one_turn(shown)))
    assert transcript_html(fold_all(one_turn(journal))) == live
    plain = transcript_text(fold_all(one_turn(journal)))
    for expected in (
        "notice [warning]> Context 90% full",
        "compaction> context compacted",
        "plan p1 (removed):",
        "? unknown update shell_output",
        "10 in · 2 out tokens",
    ):
        assert expected in plain, plain


async def test_the_demo_agent_compacts_with_a_notice(workspace: Workspace) -> None:
    async with await workspace.service().sessions.connect("demo") as handle:
        await handle.prompt(text("Plot the sales by region"))
        shown: list[Any] = []
        handle.on_transcript(shown.append)
        await handle.prompt(text("/compact"))
    plain = transcript_text(fold_all(shown))
    assert "notice [info]> Compacting the conversation" in plain
    assert "compaction> context compacted" in plain and "'Plot the sales by region'" in plain
    assert "**Compacting" not in plain  # a notice, not a bold line in the reply
