"""Shared servers (issue 34): what silo_nb keeps per user is never shared through ``/tmp``.

The demo and replay agents keep their sessions in the user's data folder (``$SILO_NB_DATA_DIR`` or
``jupyter_data_dir()/silo``), then in ``$XDG_RUNTIME_DIR`` when the home cannot take it, and only last in
a per-uid name in the temporary folder (checked before use). The kernel tools' socket folder is made in
``$XDG_RUNTIME_DIR`` only when that folder is this user's and nobody else may write it."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from silo_nb.kernel_tools import socket_server
from silo_nb.replay_agent import parse_args as replay_args
from silo_nb_agents.demo.options import parse_args as demo_args
from silo_nb_agents.user_dirs import agent_state_dir, private_runtime_dir
from tests.conftest import Workspace, demo_agent

TEMP = Path(tempfile.gettempdir())


def text(value: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": value}]


@pytest.fixture(autouse=True)
def _no_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SILO_NB_DEMO_STATE_DIR", "SILO_NB_REPLAY_STATE_DIR", "SILO_NB_DATA_DIR", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(name, raising=False)


def runtime_folder(tmp_path: Path, mode: int) -> Path:
    folder = tmp_path / "run-user"
    folder.mkdir()
    os.chmod(folder, mode)
    return folder


def test_the_agents_keep_their_sessions_in_the_users_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SILO_NB_DATA_DIR", str(tmp_path / "data"))
    assert demo_args([], exit_on_error=False).state_dir == tmp_path / "data" / "agents" / "demo"
    assert replay_args(["lesson.jsonl"]).state_dir == tmp_path / "data" / "agents" / "replay"


def test_without_silo_nb_data_dir_the_jupyter_data_folder_is_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "share-jupyter"))
    assert agent_state_dir("demo") == tmp_path / "share-jupyter" / "silo" / "agents" / "demo"


def test_with_no_home_to_write_the_private_runtime_folder_is_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("SILO_NB_DATA_DIR", str(tmp_path / "a-file" / "data"))  # cannot be made
    runtime = runtime_folder(tmp_path, 0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert demo_args([], exit_on_error=False).state_dir == runtime / "silo-nb" / "demo"


def test_a_runtime_folder_others_may_write_is_not_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("SILO_NB_DATA_DIR", str(tmp_path / "a-file" / "data"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_folder(tmp_path, 0o777)))
    assert private_runtime_dir() is None
    # Last: a per-uid name in the temporary folder, which the agents check (theirs, 0700) before use.
    assert agent_state_dir("demo") == TEMP / f"silo-nb-demo-{os.getuid()}"


def test_the_kernel_tools_socket_folder_is_never_made_where_others_may_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = runtime_folder(tmp_path, 0o777)  # no sticky bit: anyone could rename the folder away
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared))
    folder = Path(socket_server._runtime_folder())
    try:
        assert shared not in folder.parents
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    finally:
        folder.rmdir()
    private = Path(tempfile.mkdtemp(prefix="run-"))  # 0700, and short: a socket path must fit sun_path
    try:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(private))
        folder = Path(socket_server._runtime_folder())
        assert folder.parent == private
        folder.rmdir()
    finally:
        private.rmdir()


async def test_a_spawned_demo_agent_keeps_nothing_in_the_temporary_folder(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo agent as a process, as a notebook starts it with no state folder named: its sessions go to
    the user's data folder (private all the way down), nothing to ``/tmp/silo-nb-demo-<uid>``."""
    data = workspace.root / "home-data"
    monkeypatch.setenv("SILO_NB_DATA_DIR", str(data))
    monkeypatch.delenv("SILO_NB_DEMO_STATE_DIR")  # the workspace names one: here the default is checked
    old_umask = os.umask(0o022)
    try:
        workspace.add_profiles(demo_agent("plain"))
        svc = workspace.service(subprocess=True)
        async with await svc.sessions.connect("plain") as handle:
            await handle.prompt(text("kept where only I can read it"))
            session_id = handle.session_id
    finally:
        os.umask(old_umask)
    kept = data / "agents" / "demo" / f"{session_id}.json"
    assert "kept where only I can read it" in kept.read_text(encoding="utf-8")
    assert not (TEMP / f"silo-nb-demo-{os.getuid()}" / f"{session_id}.json").exists()
    for folder in (data, data / "agents", data / "agents" / "demo"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
