"""Stale answers in a real ``InteractiveShell`` (issue 32, step 3): the demo agent looks into ``df`` through
the kernel tools (``list_variables``, ``inspect_variable``); a later cell changes ``df`` and the turn's
badge says so, ``handle.stale_turns()`` lists it; a turn that read something else stays fresh; a deleted
name; a value whose repr hangs; **Re-ask** on a fork (the demo agent offers ``session/fork``) and, for an
agent that does not fork, in the same session. Also the badge widget alone."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd
from IPython.core.interactiveshell import InteractiveShell

import silo_nb
from silo_nb.model import StaleTurn
from silo_nb.notebook.magics import NotebookSession, session_of, use_session
from silo_nb.notebook.magics.stale_watch import StaleWatch
from silo_nb.notebook.widgets.stale_badge import StaleBadge
from tests.conftest import Workspace, demo_agent
from tests.support.shell import run, shell

__all__ = ["shell"]  # the fixture


class Switch:
    """Fine while the agent looks; its repr hangs once ``hang`` is set."""

    hang = False
    calls = 0  # reprs asked while hanging

    def __repr__(self) -> str:
        if self.hang:
            Switch.calls += 1
        while self.hang:
            pass
        return "Switch()"


def badges(shell: InteractiveShell) -> list[StaleBadge]:
    return [w for w in session_of(shell).shown.widgets() if isinstance(w, StaleBadge)]


async def cell(shell: InteractiveShell, source: str, cell_id: str | None = None) -> Any:
    """A user's cell as ipykernel runs it: ``run_cell_async``, then the ``post_run_cell`` event. Each check
    here checks every name (a loaded test machine may pass the few ms a check takes before the rest wait
    for the next cell: tests/kernel_tools/test_stale_answers.py shows that)."""
    for connection in session_of(shell).connections.values():
        if isinstance(connection.stale, StaleWatch):
            connection.stale.stale.check_seconds = 1.0
    result = await shell.run_cell_async(
        source, store_history=True, transformed_cell=shell.transform_cell(source), cell_id=cell_id
    )
    shell.events.trigger("post_run_cell", result)
    assert result.success, result.error_in_exec
    return result


def frames() -> dict[str, pd.DataFrame]:
    return {
        "df": pd.DataFrame({"a": [1, 2, 3], "kind": ["x", "y", "x"]}),
        "sales": pd.DataFrame({"region": ["n", "s"], "amount": [1.5, 2.5]}),
    }


async def test_an_answer_about_df_goes_stale_when_a_cell_changes_df(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    shell.user_ns.update(frames())
    await run(shell, "%silo connect demo")
    handle: silo_nb.AgentSessionHandle = shell.user_ns["demo"]
    handle.on_permission(lambda request: request.respond("skip"))  # look, run nothing
    _, result = await run(shell, "%%prompt\nlook into df")
    assert result.success, result.error_in_exec
    first = handle.current_turn
    _, result = await run(shell, "%%prompt\nlook into sales")
    assert result.success, result.error_in_exec
    about_df, about_sales = badges(shell)
    assert (about_df.turn, about_sales.turn) == (first, first + 1)
    assert about_df.layout.display == "none" and about_df.snapshot() == ("", "")
    assert handle.stale_turns() == []

    await cell(shell, 'df.loc[0, "a"] = 99')
    assert about_df.layout.display == "flex"
    assert about_df.text == "df changed since this answer"
    assert "stale" in about_df.snapshot()[1] and "df changed since this answer" in about_df.snapshot()[0]
    assert about_sales.layout.display == "none"  # it listed df (3 × 2 still): fresh
    assert handle.stale_turns() == [StaleTurn(first, ("df changed",))]

    await cell(shell, "del sales")
    assert about_sales.text == "sales was deleted since this answer"
    assert handle.stale_turns() == [
        StaleTurn(first, ("df changed", "sales was deleted")),  # its list showed sales
        StaleTurn(first + 1, ("sales was deleted",)),
    ]


async def test_a_hanging_repr_after_the_turn_costs_one_bound_then_nothing(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    shell.user_ns["weird"] = Switch()
    shell.user_ns.pop("unrelated", None)  # the process's one shell: names other tests left are listed too
    await run(shell, "%silo connect demo")
    handle: silo_nb.AgentSessionHandle = shell.user_ns["demo"]
    handle.on_permission(lambda request: request.respond("skip"))
    await run(shell, "%%prompt\nlook into weird")
    connection = session_of(shell).connections["demo"]
    assert connection.kernel_tools is not None
    stale = connection.kernel_tools.stale_answers
    assert stale.read_by(handle.current_turn)
    start = time.perf_counter()
    await cell(shell, "weird.hang = True")  # the check after it: stopped at its bound
    assert time.perf_counter() - start < 5
    assert "weird" in stale.unwatched
    asked = Switch.calls
    assert asked >= 1  # it was asked, and given up on
    await cell(shell, "unrelated = 1")
    assert Switch.calls == asked  # not tried again
    assert handle.stale_turns() == []
    Switch.hang = False
    shell.user_ns.pop("weird", None)


async def test_reask_sends_the_prompt_again_on_a_fork(shell: InteractiveShell, workspace: Workspace) -> None:
    shell.user_ns.update(frames())
    await run(shell, "%silo connect demo")
    handle: silo_nb.AgentSessionHandle = shell.user_ns["demo"]
    handle.on_permission(lambda request: request.respond("skip"))
    await run(shell, "%%prompt\nlook into df")
    (badge,) = badges(shell)
    await cell(shell, "df = df.head(1)")
    assert badge.changed == ("df changed",) and badge.forks
    said = await badge.reask()
    session = session_of(shell)
    assert said == f"Re-asked on a fork of demo, as the connection demo_reask{badge.turn}."
    assert session.last_name == "demo"  # the fork is no new default
    fork = session.connections[f"demo_reask{badge.turn}"].handle
    assert fork is not None and fork.session_id != handle.session_id
    fork.on_permission(lambda request: request.respond("skip"))
    await session.background.wait()
    assert await badge.reask() == said  # once
    assert badge.button.layout.display == "none"
    shown = "".join(str(o.get("data", {}).get("text/html", "")) for o in badge.output.outputs)
    assert "look into df" in shown and "inspect_variable" in shown
    prompts = [u.text for u in fork.journal_updates() if u.kind == "user_message_chunk"]
    assert prompts == ["look into df", "look into df"]  # the parent's turn, then the re-ask
    inspected = [u.raw for u in fork.journal_updates() if u.kind == "kernel_tool"]
    assert any("shape: 1 rows" in str(line) for line in inspected)  # df as it is now
    assert said in badge.snapshot()[1]


async def test_reask_without_fork_asks_in_the_same_session(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    workspace.add_profiles(demo_agent("plain", "--no-fork"))
    use_session(shell, NotebookSession(shell, workspace.service()))
    shell.user_ns.update(frames())
    await run(shell, "%silo connect plain")
    handle: silo_nb.AgentSessionHandle = shell.user_ns["plain"]
    handle.on_permission(lambda request: request.respond("skip"))
    await run(shell, "%%prompt\nlook into df\n@sales")
    (badge,) = badges(shell)
    assert not badge.forks
    sales = shell.user_ns["sales"]
    await cell(shell, "sales.loc[0, 'amount'] = 0.0")  # only @sales: listed by shape, attached by value
    assert badge.changed == ("sales changed",)
    said = await badge.reask()
    assert "does not fork sessions" in said and "same session" in said
    await session_of(shell).background.wait()
    prompts = [u.text for u in handle.journal_updates() if u.kind == "user_message_chunk"]
    assert prompts[-1].startswith("look into df") and len(prompts) == 2
    assert sales is shell.user_ns["sales"]


def watches(shell: InteractiveShell, handle: Any) -> list[StaleWatch]:
    hooks = [getattr(hook, "__self__", None) for hook in shell.events.callbacks["post_run_cell"]]
    return [w for w in hooks if isinstance(w, StaleWatch) and w.handle is handle]


async def test_the_connection_s_end_unregisters_the_hook(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    await run(shell, "%silo connect demo --no-kernel-tools")
    handle = shell.user_ns["demo"]
    (watch,) = watches(shell, handle)
    await run(shell, "%silo disconnect demo")
    assert watches(shell, handle) == [] and watch.closed


async def test_a_disposed_session_s_hook_goes_at_the_next_cell(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    await run(shell, "%silo connect demo --no-kernel-tools")
    handle = shell.user_ns["demo"]
    await handle.aclose()
    assert len(watches(shell, handle)) == 1
    await cell(shell, "y = 2")
    assert watches(shell, handle) == []


async def test_the_hook_tells_the_tracker_which_cell_ran(
    shell: InteractiveShell, workspace: Workspace
) -> None:
    await run(shell, "%silo connect demo --no-kernel-tools")
    handle = shell.user_ns["demo"]
    (watch,) = watches(shell, handle)
    first = await cell(shell, "a = 1", cell_id="cell-a")
    await cell(shell, "b = a + 1", cell_id="cell-b")
    watch.stale.tool_read("read_cells", {"last": 2})  # as the agent's read_cells would, in a turn
    watch.stale.seal(7)
    await cell(shell, "c = 3", cell_id="cell-c")
    assert handle.stale_turns() == []
    await cell(shell, "a = 2", cell_id="cell-a")
    assert handle.stale_turns() == [StaleTurn(7, (f"cell In [{first.execution_count}] changed",))]


# -- the widget alone ---------------------------------------------------------------------------------


async def test_the_badge_widget_and_its_python_twin(comms: list[Any]) -> None:
    asked: list[int] = []

    async def reask(badge: StaleBadge) -> str:
        asked.append(badge.turn)
        return "Re-asked on a fork."

    badge = StaleBadge(3, reask=reask, forks=True)
    assert badge.layout.display == "none" and badge.text == "" and badge.snapshot() == ("", "")
    badge.mark_stale(["df changed", "cell 2 changed"])
    assert badge.text == "df changed, cell 2 changed since this answer"
    assert badge.layout.display == "flex" and "stale" in badge.badge.value
    assert await badge.reask() == "Re-asked on a fork." and await badge.reask() == "Re-asked on a fork."
    assert asked == [3] and badge.button.layout.display == "none"
    html, text = badge.snapshot()
    assert text == "stale: df changed, cell 2 changed since this answer — Re-asked on a fork."
    assert "Re-asked on a fork." in html

    async def broken(_badge: StaleBadge) -> str:
        raise silo_nb.AgentSessionError("the agent is gone")

    other = StaleBadge(4, reask=broken, forks=False)
    assert await other.reask() == "Re-ask failed: the agent is gone"
    assert "in this session" in other.button.tooltip
