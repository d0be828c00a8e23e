"""``silo_nb.promote``: a ``fork_grid`` cell's fork becomes the notebook's session — its connection drives
the fork, a prompt continues the fork's conversation, and after a restart ``%silo connect`` resumes it (a
real ``InteractiveShell`` against the demo agent)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from IPython.core.interactiveshell import InteractiveShell

import silo_nb
from silo_nb.notebook.magics import session_of
from tests.conftest import Workspace
from tests.support.shell import final_bundle, restart, run, shell

__all__ = ["shell"]  # the fixture


def user_texts(handle: silo_nb.AgentSessionHandle) -> list[str]:
    return [u.text for u in handle.journal_updates() if u.kind == "user_message_chunk"]


async def test_promote_makes_the_fork_the_notebook_s_session(
    shell: InteractiveShell, workspace: Workspace, tmp_path: Path
) -> None:
    await run(shell, "%silo connect demo")
    await run(shell, "%%prompt demo\nthe parent question")
    parent = shell.user_ns["demo"]
    df = await silo_nb.fork_grid(
        parent,
        prompts=["a fork question"],
        configs=[{"model": "demo-fast"}, {"model": "demo-smart"}],
        repeats=2,
        scorers={"answered": lambda r: "a fork question" in r.final_text},
        folder=tmp_path / "runs",
        progress=False,
    )
    assert set(df["cell_status"]) == {"finished"} and df["score.answered"].all()
    chosen = df.set_index("cell").loc["p0-demo-c1-r1"]
    with pytest.raises(ValueError, match='No connection named "ghost"'):
        await silo_nb.promote(df, "p0-demo-c1-r1", name="ghost")

    promoted = await silo_nb.promote(df, "p0-demo-c1-r1")
    assert promoted.session_id == chosen["session"] != parent.session_id
    assert shell.user_ns["demo"] is promoted and promoted.is_live and not parent.is_live
    assert user_texts(promoted) == ["the parent question", "a fork question"]
    # Another cell of the run: refused in one line (it would drop the promoted conversation); the same
    # cell again (Run All): the promoted session, nothing done.
    with pytest.raises(ValueError, match=r"was promoted already \(cell 'p0-demo-c1-r1'\)"):
        await silo_nb.promote(df, "p0-demo-c0-r0")
    assert await silo_nb.promote(df, "p0-demo-c1-r1") is promoted
    assert shell.user_ns["demo"] is promoted

    # The connection's next prompt goes on from the fork's turns.
    captured, result = await run(shell, "%%prompt demo\nand then")
    assert result.success, captured.stderr + captured.stdout
    assert "and then" in final_bundle(captured).data["text/markdown"]
    assert user_texts(promoted) == ["the parent question", "a fork question", "and then"]

    # After a restart the same connect cell resumes the promoted fork, its transcript restored.
    restart(shell, workspace)
    captured, result = await run(shell, "%silo connect demo")
    assert result.success, captured.stderr + captured.stdout
    back = shell.user_ns["demo"]
    assert back.session_id == promoted.session_id and back.resume_outcome == "resumed"
    assert user_texts(back) == ["the parent question", "a fork question", "and then"]
    assert session_of(shell).records.get("demo")["session_id"] == promoted.session_id  # type: ignore[index]
    # Run All goes on: the same fork_grid call (now on the promoted fork) is the run it made, no fork of
    # the fork; the same promote is the session already there.
    again = await silo_nb.fork_grid(
        back,
        prompts=["a fork question"],
        configs=[{"model": "demo-fast"}, {"model": "demo-smart"}],
        repeats=2,
        scorers={"answered": lambda r: "a fork question" in r.final_text},
        folder=tmp_path / "runs",
        progress=False,
    )
    assert again.attrs["run_folder"] == df.attrs["run_folder"]
    assert sorted(again["session"]) == sorted(df["session"])
    assert await silo_nb.promote(again, "p0-demo-c1-r1") is back
    assert user_texts(back) == ["the parent question", "a fork question", "and then"]


async def test_promote_refuses_in_one_line(shell: InteractiveShell, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    await run(shell, "%silo connect demo")
    parent = shell.user_ns["demo"]
    df = await silo_nb.fork_grid(parent, prompts=["hi"], timeout=0.001, folder=runs, progress=False)
    assert df["cell_status"].tolist() == ["failed"]
    with pytest.raises(ValueError, match=r"failed .* promote a finished cell") as caught:
        await silo_nb.promote(df, "p0-demo-c0-r0")
    assert "\n" not in str(caught.value)
    captured, result = await run(shell, f"%silo promote {df.attrs['run_folder']} p0-demo-c0-r0")
    message = captured.stderr + captured.stdout
    assert not result.success and "UsageError: %silo promote: Cell 'p0-demo-c0-r0'" in message, message
    assert "Traceback" not in message
    ok = await silo_nb.fork_grid(parent, prompts=["hi"], name="ok", folder=runs, progress=False)
    other = await silo_nb.fork_grid(parent, prompts=["hi"], name="other", folder=runs, progress=False)
    async with anyio.create_task_group() as group:  # a turn running on the connection: not now
        group.start_soon(parent.prompt, [{"type": "text", "text": "slow"}])
        with anyio.fail_after(30):
            while not parent.turn_running:
                await anyio.sleep(0.01)
        with pytest.raises(ValueError, match="has a turn running — await it"):
            await silo_nb.promote(ok, "p0-demo-c0-r0")
        parent.cancel()
    assert shell.user_ns["demo"] is parent and parent.is_live
    # The magic promotes by the run's name; the connection then drives the fork, not the parent.
    captured, result = await run(shell, f"%silo promote ok p0-demo-c0-r0 --folder {runs}")
    assert result.success, captured.stderr + captured.stdout
    assert shell.user_ns["demo"].session_id == ok.set_index("cell").loc["p0-demo-c0-r0", "session"]
    with pytest.raises(ValueError, match="No connection of this notebook drives session"):
        await silo_nb.promote(other, "p0-demo-c0-r0")
