"""Shared fixtures: an isolated workspace (config dir, data dir, demo state) and fake-agent profiles."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import silo_nb
from silo_nb.acp import InProcessTransport, SubprocessTransport, Transport
from silo_nb.acp.client import background_closes
from silo_nb.demo_agent import serve
from silo_nb.sessions.profiles import AgentProfile

ROOT = Path(__file__).resolve().parent.parent
AGENTS = Path(__file__).resolve().parent / "agents"
TS_EXAMPLE_AGENT = (
    ROOT
    / "tests"
    / "node"
    / "node_modules"
    / "@agentclientprotocol"
    / "sdk"
    / "dist"
    / "examples"
    / "agent.js"
)

os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")


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
        "args": ["-m", "silo_nb.demo_agent", *flags],
        **extra,
    }


def ts_agent() -> dict[str, Any]:
    if not TS_EXAMPLE_AGENT.is_file():
        pytest.fail(
            f"{TS_EXAMPLE_AGENT} is missing — run `bash .ci/setup` to install the pinned npm packages"
        )
    return {"id": "ts-example", "label": "TS SDK example", "command": "node", "args": [str(TS_EXAMPLE_AGENT)]}


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
    if args[:2] == ["-m", "silo_nb.demo_agent"]:
        return InProcessTransport(functools.partial(serve, argv=args[2:]), name="demo agent")
    return await SubprocessTransport.spawn(profile.command, profile.args, env=profile.env, cwd=cwd)


@pytest.fixture(autouse=True)
async def _background_closes() -> AsyncIterator[None]:
    """A failed connect ends its agent in the background: let that finish on the test's own loop."""
    yield
    await background_closes()


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.setenv("SILO_NB_DEMO_STATE_DIR", str(tmp_path / "demo-state"))
    monkeypatch.setenv("SILO_NB_DEMO_DELAY", "0")
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)
    monkeypatch.delenv("SILO_NB_DATA_DIR", raising=False)
    return Workspace(root=tmp_path, folder=folder, config=tmp_path / "config", data=tmp_path / "data")
