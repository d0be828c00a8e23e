"""``fork_grid`` on real demo-agent subprocesses: each cell a fork of a live session that remembers the
parent's conversation, scored like ``run_grid``'s; and the inputs it refuses in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

import silo_nb
from silo_nb.experiments import expand_grid, forked_cell
from tests.conftest import Workspace, demo_agent

CONFIGS = [{"model": "demo-fast"}, {"model": "demo-smart"}]


def user_texts(lines: list[Any]) -> list[str]:
    return [u.text for u in lines if u.kind == "user_message_chunk"]


def summary(updates: Any) -> str:
    """The demo's /compact summary (it names how many things the user asked before, and the last)."""
    chunks = [u.raw["content"]["text"] for u in updates if u.kind == "compaction_summary_chunk"]
    return "".join(chunks)


def remembers(run: silo_nb.GridRun) -> bool:
    """The fork carries the parent's conversation: its /compact names the parent's question."""
    return summary(run.updates()) == "The user asked 1 thing(s) before this; the last: 'the parent question'."


def configured(run: silo_nb.GridRun) -> bool:
    """The fork runs with its cell's config (the demo's reply names its model)."""
    return f"current model: `{run.config['model']}`" in run.final_text


async def test_fork_grid_scores_forks_that_continue_the_parent(workspace: Workspace, tmp_path: Path) -> None:
    service = workspace.service(subprocess=True)
    handle = await service.sessions.connect("demo")
    grid = {"prompts": [["/compact", "which mode"]], "configs": CONFIGS, "repeats": 2, "progress": False}
    try:
        await handle.prompt([{"type": "text", "text": "the parent question"}])
        scorers = {"remembers": remembers, "configured": configured}
        df = await silo_nb.fork_grid(handle, scorers=scorers, folder=tmp_path / "runs", **grid)
        names = ["p0-demo-c0-r0", "p0-demo-c0-r1", "p0-demo-c1-r0", "p0-demo-c1-r1"]
        assert list(dict.fromkeys(df["cell"])) == names
        assert set(df["cell_status"]) == {"finished"}, df[["cell", "cell_status", "error"]]
        cells = df.drop_duplicates("cell")  # a row per turn: two each
        assert cells["score.remembers"].all() and cells["score.configured"].all()
        assert (
            df["prompt"].tolist() == ["/compact", "which mode"] * 4
        )  # the fork's turns only, not the parent's
        assert set(df["model"]) == {"demo-fast", "demo-smart"}
        forks = set(df["session"])
        assert len(forks) == 4 and handle.session_id not in forks
        # The parent's conversation is untouched by its forks.
        assert user_texts(list(handle.journal_updates())) == ["the parent question"]
        # The same call again finds its run: nothing runs twice.
        again = await silo_nb.fork_grid(handle, folder=tmp_path / "runs", **grid)
        assert set(again["session"]) == forks
        # A fork resumed (what promote does) goes on from the fork's turns, not the parent's.
        fork = forked_cell(df, "p0-demo-c1-r0")
        assert fork.parent_session_id == handle.session_id and fork.promoted is None
        resumed = await service.sessions.connect("demo", resume={"session_id": fork.session_id})
        try:
            answer = await resumed.prompt([{"type": "text", "text": "/compact"}])
            assert answer.stop_reason == "end_turn"
            texts = ["the parent question", "/compact", "which mode", "/compact"]
            assert user_texts(list(resumed.journal_updates())) == texts
            last = summary(resumed.journal_updates()).rpartition("The user")[2]
            assert last == " asked 3 thing(s) before this; the last: 'which mode'.", last
        finally:
            await resumed.aclose()
        # The system prompt axis: each fork is given its own (None: the parent's — here none).
        prompted = await silo_nb.fork_grid(
            handle, prompts=["which mode"], system_prompts=[None, "Be brief."], folder=tmp_path / "runs"
        )
        replies = dict(zip(prompted["cell"], prompted["text"], strict=True))
        assert "System prompt" not in replies["p0-demo-c0-s0-r0"]
        assert "“Be brief.”" in replies["p0-demo-c0-s1-r0"]
    finally:
        await handle.aclose()


async def test_fork_grid_refuses_in_one_line(workspace: Workspace, tmp_path: Path) -> None:
    workspace.add_profiles(demo_agent("plain", "--no-fork"))
    service = workspace.service(subprocess=True)
    plain = await service.sessions.connect("plain")
    try:
        with pytest.raises(silo_nb.AgentSessionError, match=r"does not offer session/fork") as caught:
            await silo_nb.fork_grid(plain, prompts=["hi"], folder=tmp_path / "runs", progress=False)
        assert "\n" not in str(caught.value)
        assert not (tmp_path / "runs").exists(), "a refused fork_grid leaves no run behind"
    finally:
        await plain.aclose()
    with pytest.raises(silo_nb.AgentSessionError, match="is closed"):
        await silo_nb.fork_grid(plain, prompts=["hi"], folder=tmp_path, progress=False)
    with pytest.raises(TypeError, match="takes a session handle"):
        await silo_nb.fork_grid("demo", prompts=["hi"])  # type: ignore[arg-type]
    handle = await service.sessions.connect("demo")
    try:
        for option in ("executor", "profiles", "agents", "sandbox", "cache"):
            with pytest.raises(TypeError, match=f"does not take {option}= — "):
                await silo_nb.fork_grid(handle, prompts=["hi"], folder=tmp_path, **{option: object()})
        # A running turn: forking it now would copy half a turn.
        async with anyio.create_task_group() as group:
            group.start_soon(handle.prompt, [{"type": "text", "text": "slow"}])
            with anyio.fail_after(30):
                while not handle.turn_running:
                    await anyio.sleep(0.01)
            with pytest.raises(silo_nb.AgentSessionError, match="has a turn running — await it"):
                await silo_nb.fork_grid(handle, prompts=["hi"], folder=tmp_path / "runs", progress=False)
            handle.cancel()
        assert not handle.turn_running and not (tmp_path / "runs").exists()
        # A cell whose fork cannot start in its time fails; it cannot be promoted.
        df = await silo_nb.fork_grid(
            handle, prompts=["hi"], timeout=0.001, folder=tmp_path / "runs", progress=False
        )
        assert df["cell_status"].tolist() == ["failed"] and "timed out" in df["error"][0]
        with pytest.raises(ValueError, match=r"failed \(timed out.*promote a finished cell"):
            forked_cell(df, "p0-demo-c0-r0")
        with pytest.raises(ValueError, match="No cell 'p9' in the run"):
            forked_cell(df, "p9")
        with pytest.raises(ValueError, match="is not a silo_nb run description"):
            forked_cell(tmp_path, "p0")
    finally:
        await handle.aclose()


def test_the_system_prompt_axis_names_its_cells_and_keeps_old_ids() -> None:
    plain = expand_grid(["a"], profiles=["demo"], configs=[{}], repeats=1)
    assert [c["cell"] for c in plain] == ["p0-demo-c0-r0"] and "system_prompt" not in plain[0]
    cells = expand_grid(["a"], profiles=["demo"], configs=[{}], repeats=1, system_prompts=[None, "Be brief."])
    assert [(c["cell"], c["system_prompt"]) for c in cells] == [
        ("p0-demo-c0-s0-r0", None),
        ("p0-demo-c0-s1-r0", "Be brief."),
    ]
    assert cells[1]["variant"] == "defaults, system prompt 1"
    with pytest.raises(ValueError, match="system_prompts= takes a non-empty list"):
        expand_grid(["a"], profiles=["demo"], configs=[{}], repeats=1, system_prompts="Be brief.")
