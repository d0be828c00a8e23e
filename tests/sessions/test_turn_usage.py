"""A turn's usage (issue 31 item 5): the prompt answer's token counts and the turn's duration are journaled
on its ``turn_end`` line, shown in the turn's footer live and restored, and are columns of ``frame`` rows
(and so of grid rows); odd counts from an agent are dropped, never shown as numbers."""

from __future__ import annotations

from typing import Any

import silo_nb
from silo_nb.experiments.rows import turn_rows
from silo_nb.model import TurnEndLine
from silo_nb.notebook.render import transcript_text
from silo_nb.updates.transcript import fold_all
from tests.agents.scripted import Peer, scripted_service
from tests.conftest import Workspace

USAGE = {
    "totalTokens": 1_900,
    "inputTokens": 1_234,
    "outputTokens": 567,
    "thoughtTokens": 99,
    "cachedReadTokens": 1_000,
    "cachedWriteTokens": 20,
}


async def answer_with_usage(peer: Peer, prompt: str) -> dict[str, Any]:
    await peer.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}})
    await peer.update({"sessionUpdate": "usage_update", "used": 5_000, "size": 200_000})
    if prompt == "odd":
        return {"stopReason": "end_turn", "usage": {"inputTokens": -3, "outputTokens": True, "x": 1}}
    return {"stopReason": "end_turn", "usage": USAGE}


async def test_the_turn_usage_is_journaled_shown_and_a_frame_column(workspace: Workspace) -> None:
    svc = scripted_service(workspace, answer_with_usage)
    async with await svc.sessions.connect("scripted") as handle:
        live: list[Any] = []
        handle.on_transcript(live.append)
        result = await handle.prompt([{"type": "text", "text": "go"}])
        assert result.usage == USAGE
        await handle.prompt([{"type": "text", "text": "odd"}])
        journal = handle.journal_updates()
        frame = silo_nb.frame(handle)
    ends = [line for line in map(TurnEndLine.read, journal) if line is not None]
    assert [end.usage for end in ends] == [USAGE, None]  # odd counts are not counts: not kept
    assert all(end.duration_ms is not None and end.duration_ms >= 0 for end in ends)
    first_turn = live[: [u.kind for u in live].index("turn_end") + 1]
    footer = transcript_text(fold_all(first_turn))
    assert "1,234 in · 567 out · 99 thought tokens" in footer
    assert "cache 1,000 read · 20 write" in footer and "5,000 / 200,000 tokens (2%)" in footer
    kinds = [u.kind for u in journal]
    from_journal = journal[kinds.index("user_message_chunk") : kinds.index("turn_end") + 1]
    assert transcript_text(fold_all(from_journal)) == footer  # restored as shown live
    first, second = turn_rows(journal)
    assert (first["tokens_in"], first["tokens_out"], first["tokens_thought"]) == (1_234, 567, 99)
    assert (first["tokens_cached_read"], first["tokens_cached_write"]) == (1_000, 20)
    assert second["tokens_in"] is None and second["tokens_out"] is None
    assert isinstance(first["duration_s"], float)
    assert frame["tokens_in"].iloc[0] == 1_234
