"""``AgentProcess.spawn(sandbox=Sandbox("bwrap"))``: a real tree in bubblewrap is killed whole, its private
tmpfs is bounded, and what the sandbox shows of an npm-installed agent is its install."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import anyio
import pytest

from silo_nb.acp import AgentProcess, Sandbox, SubprocessTransport, sandbox_problem
from silo_nb.acp import process as acp_process
from tests.conftest import AGENTS

pytestmark = pytest.mark.skipif(
    anyio.run(sandbox_problem, "bwrap") is not None,
    reason="bubblewrap cannot run here (.ci/setup installs it)",
)


def marked(mark: str) -> list[int]:
    """Live processes (not zombies) whose environment holds ``mark``: seen from outside the sandbox."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (
                mark.encode() in (entry / "environ").read_bytes()
                and ") Z " not in (entry / "stat").read_text()
            ):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def test_a_sandboxed_tree_ignoring_eof_and_sigterm_is_killed_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(acp_process, "STDIN_CLOSE_GRACE_SECONDS", 0.2)
    monkeypatch.setattr(acp_process, "TERM_GRACE_SECONDS", 0.3)
    mark = f"SANDBOX_TEST_{uuid.uuid4().hex}"
    box = Sandbox("bwrap").bound([tmp_path])
    args = [str(AGENTS / "tree_agent.py"), "--ignore-eof", "--ignore-term"]
    transport = await SubprocessTransport.spawn(
        sys.executable, args, env={mark: "1"}, cwd=str(tmp_path), sandbox=box
    )
    line = b""
    with anyio.fail_after(30):  # a hang guard, not a figure
        while not line.endswith(b"\n"):
            line += await transport.receive.receive(1)
    pids = json.loads(line)["params"]
    assert pids["agent"] != transport.process.pid  # its own pid namespace: the agent is not bwrap
    assert len(marked(mark)) >= 4  # bwrap, the agent, its child, its setsid grandchild
    with anyio.fail_after(30):
        await transport.aclose()
    left: list[int] = []
    for _ in range(100):  # the supervisor's sweep is asynchronous to us: give it a bounded while
        left = marked(mark)
        if not left:
            break
        await anyio.sleep(0.05)
    assert left == []


async def test_the_private_tmp_is_bounded(tmp_path: Path) -> None:
    box = Sandbox("bwrap", tmpfs_bytes=1 << 20).bound([tmp_path])
    code = "open('/tmp/fill', 'wb').write(b'0' * (4 << 20))"
    process = await AgentProcess.spawn(sys.executable, ["-c", code], cwd=str(tmp_path), sandbox=box)
    async with anyio.create_task_group() as group:
        group.start_soon(process.drain_stderr)
        with anyio.fail_after(30):
            assert await process.wait() == 1
    await process.terminate(stdin_grace=0)
    assert any("No space left on device" in line for line in process.stderr_tail(20)), process.stderr_tail(20)


async def test_a_command_path_through_a_hidden_folder_still_starts(tmp_path: Path) -> None:
    """``.../benchmarks/../.venv/bin/python`` (a script run from a subfolder): inside only the runtime is
    shown, so the path is normalized before it is run (a cell of benchmarks/grid.py once failed so)."""
    hidden = Path(__file__).parent  # a folder the sandbox does not show, walked through and back
    command = os.path.join(hidden, os.path.relpath(sys.executable, hidden))
    assert ".." in command
    box = Sandbox("bwrap").bound([tmp_path])
    assert box.wrap([command, "-c", "pass"], env={}, cwd=str(tmp_path))[-3] == os.path.abspath(command)
    process = await AgentProcess.spawn(command, ["-c", "print('ran')"], cwd=str(tmp_path), sandbox=box)
    async with anyio.create_task_group() as group:
        group.start_soon(process.drain_stderr)
        with anyio.fail_after(30):
            assert await process.wait() == 0, process.stderr_tail(20)
    await process.terminate(stdin_grace=0)


def test_an_npm_installed_agent_shows_its_install_and_not_its_neighbours(tmp_path: Path) -> None:
    install = tmp_path / "agents" / "claude-agent-acp@0.1.0"
    dist = install / "node_modules" / "@scope" / "agent" / "dist"
    dist.mkdir(parents=True)
    (dist / "index.js").write_text("")
    (install / "node_modules" / ".bin").mkdir()
    (install / "node_modules" / ".bin" / "agent").symlink_to(dist / "index.js")
    other = tmp_path / "agents" / "other@1.0.0"
    other.mkdir()
    box = Sandbox("bwrap").bound([tmp_path / "work"])
    for argv in (
        [str(install / "node_modules" / ".bin" / "agent")],
        ["/usr/bin/node", str(dist / "index.js")],
    ):
        paths = box.runtime_paths(argv, {})
        assert str(install) in paths and str(other) not in paths and str(tmp_path / "agents") not in paths
    assert str(install) not in box.for_terminals().runtime_paths(argv, {})
    argv = box.wrap(
        ["/usr/bin/node", str(dist / "index.js")], env={"HOME": "/root"}, cwd=str(tmp_path / "work")
    )
    assert around(argv, str(install), 1, 2) == ["--ro-bind", str(install), str(install)]
    assert around(argv, "--bind", 0, 3) == ["--bind", str(tmp_path / "work"), str(tmp_path / "work")]
    assert around(argv, "/root", 3, 1) == ["--size", str(1 << 30), "--tmpfs", "/root"]
    assert around(argv, "--cap-drop", 0, 2) == ["--cap-drop", "ALL"]


def around(argv: list[str], token: str, before: int, after: int) -> list[str]:
    """The ``before`` parts ahead of ``token``'s first place in ``argv``, and ``after`` from it on."""
    at = argv.index(token)
    return argv[at - before : at + after]


def test_a_terminal_sees_what_its_agent_sees_and_finds_its_command_there(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text("")
    hidden_bin = tmp_path / "home" / ".pyenv" / "shims"
    env = {"PATH": f"{hidden_bin}:/usr/bin", "HOME": str(tmp_path / "home")}
    box = Sandbox("bwrap").bound([tmp_path / "work"])
    terminals = box.for_terminals([sys.executable, str(script)], env)
    assert str(script) in terminals.read_only  # the agent's own script: the agent sees it anyway
    assert terminals.search_path(env) == "/usr/bin"  # a shim under the hidden home could not start
    assert box.search_path(env) == env["PATH"]  # the agent's command: looked up as the profile says
    assert str(tmp_path / "other.py") not in terminals.runtime_paths(["cat", str(tmp_path / "other.py")], env)
