"""A command for a connection whose connect is still running waits for it (issue 28, item 1).

The README's first cell loads the extension and connects in one go; the blocking transform is installed
only while that cell runs, so its ``%silo connect`` runs in the background. A ``%%prompt`` right after
it ("Run All") must wait for that connect — bounded by the profile's ``connect_timeout`` — say "still
connecting" when interrupted meanwhile, and say why when the connect really failed.

The agent here starts only when the test opens a gate (its transport factory waits for it): a start as
slow as the test needs, with no clock in the assertions. Magics run in a real ``InteractiveShell``.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Iterator
from typing import Any

import anyio
import comm
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import silo_nb
from silo_nb.acp import Transport
from silo_nb.notebook.magics import NotebookSession, session_of, use_session
from silo_nb.sessions.profiles import AgentProfile
from tests.conftest import Workspace, demo_agent, in_process_demo
from tests.support.shell import RecordingComm, final_bundle, run, said

README_PROMPT = "Make a plan for cleaning the penguin measurements in {path}"


class Gate:
    """A transport factory whose agents start only once the test opens the gate."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.asked = asyncio.Event()  # a connect is under way, waiting for its agent

    async def factory(self, profile: AgentProfile, cwd: str) -> Transport:
        self.asked.set()
        await self.opened.wait()
        return await in_process_demo(profile, cwd)


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def shell(workspace: Workspace, monkeypatch: pytest.MonkeyPatch, gate: Gate) -> Iterator[InteractiveShell]:
    RecordingComm.sent = []
    monkeypatch.setattr(comm, "create_comm", RecordingComm)
    workspace.add_profiles(
        demo_agent("slow"),
        demo_agent("stuck", connect_timeout=0.3),
        demo_agent("broken", "--auth-required"),
    )
    ip = InteractiveShell.instance()
    if "silo_nb" in ip.extension_manager.loaded:  # the README's first cell loads it itself
        ip.extension_manager.unload_extension("silo_nb")
    service = silo_nb.AgentsService(
        workspace_dir=workspace.folder,
        config_dirs=[workspace.config],
        data_dir=workspace.data,
        transport_factory=gate.factory,
    )
    use_session(ip, NotebookSession(ip, service))
    yield ip
    ip.extension_manager.load_extension("silo_nb")  # as the other notebook tests expect the shell
    for connection in list(session_of(ip).connections.values()):
        session_of(ip).drop(connection)  # a connect still waiting at the gate is cancelled
    use_session(ip, None)


async def readme_first_cell(ip: InteractiveShell, profile: str, gate: Gate, flags: str = "") -> None:
    """The README's first cell: load the extension and connect in one cell. It returns with the connect
    in the background; the loop turns before the next cell comes (in a kernel: the reply, then the next
    request), so the connect is under way, waiting for its agent."""
    captured, result = await run(ip, f"%load_ext silo_nb\n%silo connect {profile}{flags}")
    assert result.success, said(captured)
    with anyio.fail_after(30):
        await gate.asked.wait()


def parked(task: asyncio.Task[Any]) -> bool:
    """The cell's task waits on a future (not merely yielding a turn of the loop): the innermost thing
    its chain of coroutines awaits is no coroutine."""
    awaited: Any = task.get_coro()
    while isinstance(awaited, types.CoroutineType | types.GeneratorType):
        awaited = awaited.cr_await if isinstance(awaited, types.CoroutineType) else awaited.gi_yieldfrom
    return awaited is not None


async def start_cell(ip: InteractiveShell, cell: str, gate: Gate) -> asyncio.Task[Any]:
    """Run ``cell`` as a task and return once it waits (or ended), with the agent still not started."""
    task = asyncio.get_running_loop().create_task(run(ip, cell))
    with anyio.fail_after(30):
        while not parked(task) and not task.done():
            await asyncio.sleep(0)
    assert not gate.opened.is_set()
    return task


async def test_readme_prompt_after_the_connect_cell_waits_for_the_connect(
    shell: InteractiveShell, gate: Gate
) -> None:
    await readme_first_cell(shell, "slow", gate)
    assert session_of(shell).connections["slow"].handle is None  # the connect is still running
    task = await start_cell(shell, f"%%prompt\n{README_PROMPT}", gate)
    assert not task.done(), said(task.result()[0])  # it waits; before the fix: "connect failed" at once
    gate.opened.set()
    with anyio.fail_after(60):
        captured, result = await task
    assert result.success, said(captured)
    assert README_PROMPT in final_bundle(captured).data["text/markdown"]


async def test_the_wait_is_bounded_by_connect_timeout_and_says_so(
    shell: InteractiveShell, gate: Gate
) -> None:
    await readme_first_cell(shell, "stuck", gate)
    with anyio.fail_after(30):  # the profile's connect_timeout is 0.3 s: the cell ends by it
        captured, result = await run(shell, "%%prompt stuck\nhello")
    assert not result.success and isinstance(result.error_in_exec, UsageError)
    assert said(captured).strip().splitlines() == [
        'UsageError: "stuck" is still connecting after 0.3 s (its profile\'s connect_timeout): '
        "nothing was sent — run this cell again once its panel shows."
    ]
    assert session_of(shell).connections["stuck"].task is not None  # the connect itself goes on


async def test_an_interrupt_while_waiting_says_still_connecting_and_the_connect_goes_on(
    shell: InteractiveShell, gate: Gate
) -> None:
    await readme_first_cell(shell, "slow", gate)
    task = await start_cell(shell, "%%prompt slow\nhello", gate)
    task.cancel()  # what ipykernel does to an awaiting cell on the stop button
    with anyio.fail_after(30):
        captured, result = await task
    assert not result.success and isinstance(result.error_in_exec, UsageError)
    assert said(captured).strip().splitlines() == [
        'UsageError: "slow" is still connecting: nothing was sent — run this cell again once its panel shows.'
    ]
    gate.opened.set()  # the connect was not disturbed: it ends, and the prompt then goes through
    captured, result = await run(shell, "%%prompt slow\nhello again")
    assert result.success, said(captured)
    assert "hello again" in final_bundle(captured).data["text/markdown"]


async def test_a_connect_that_failed_meanwhile_says_why(shell: InteractiveShell, gate: Gate) -> None:
    await readme_first_cell(shell, "broken", gate)
    task = await start_cell(shell, "%%prompt broken\nhello", gate)
    gate.opened.set()
    with anyio.fail_after(30):
        captured, result = await task
    assert not result.success and isinstance(result.error_in_exec, UsageError)
    lines = said(captured).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('UsageError: "broken" is not connected: '), lines
    assert "connect failed" not in lines[0] and "sign" in lines[0].lower(), lines  # the agent's reason
    assert "broken" not in session_of(shell).connections  # a failed connect leaves nothing behind


async def test_a_background_connect_is_waited_for_too(shell: InteractiveShell, gate: Gate) -> None:
    await readme_first_cell(shell, "slow", gate, " --bg")
    task = await start_cell(shell, "%%prompt slow\nhello", gate)
    gate.opened.set()
    with anyio.fail_after(60):
        captured, result = await task
    assert result.success, said(captured)
    assert "hello" in final_bundle(captured).data["text/markdown"]
