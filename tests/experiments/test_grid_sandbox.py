"""run_grid(sandbox=...): a real agent that tries to leave its working copy, in bubblewrap and without."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import silo_nb.acp.sandbox as sandbox_module
from silo_nb.acp import Sandbox, SandboxUnavailable, sandbox_problem
from silo_nb.experiments import PermissionPolicy, run_grid
from tests.experiments.grid_checks import TASK, agents_with, demo_env
from tests.support.profiles import toml_profile, write_toml

AGENT = Path(__file__).resolve().parents[1] / "agents" / "escape_agent.py"
needs_bwrap = pytest.mark.skipif(
    anyio.run(sandbox_problem, "bwrap") is not None,
    reason="bubblewrap cannot run here (.ci/setup installs it)",
)


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A home with a secret, another cell's folder (named as the grid names them) with one, the agent."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("home secret")
    monkeypatch.setenv("HOME", str(home))
    neighbour = Path(tempfile.mkdtemp(prefix=f"silo-grid-{os.getpid()}-neighbour-"))
    (neighbour / "work").mkdir()
    (neighbour / "work" / "secret.txt").write_text("neighbour secret")
    agent = tmp_path / "agent.py"
    shutil.copy(AGENT, agent)  # the agent appends to its own copy when nothing stops it
    config = tmp_path / "config"
    # The profile grants the home as an additional directory: served by the client's fs methods unsandboxed,
    # left out in a sandbox (the session's folders are then its working copy alone).
    escape = toml_profile(
        "escape", command=sys.executable, args=[str(agent), "escape"], additional_directories=[str(home)]
    )
    write_toml(
        config, escape + toml_profile("needs-home", command=sys.executable, args=[str(agent), "needs-home"])
    )
    paths = {
        "neighbour": str(neighbour / "work" / "secret.txt"),
        "home": str(home / "secret.txt"),
        "outside": str(tmp_path / "outside.txt"),
        "runtime": str(agent),
    }
    yield {"tmp": tmp_path, "config": config, "paths": paths, "home": home}
    shutil.rmtree(neighbour, ignore_errors=True)


def grid(place: dict[str, Any], sandbox: str | None, profile: str = "escape", repeats: int = 2) -> Any:
    async def main() -> Any:
        return await run_grid(
            [json.dumps(place["paths"])],
            profiles=[profile],
            repeats=repeats,
            concurrency=2,
            folder=place["tmp"] / "runs",
            name=f"{profile}-{sandbox}",
            config_dirs=[place["config"]],
            sandbox=sandbox,
            progress=False,
            timeout=60,
        )

    return anyio.run(main)


def reports(table: Any) -> list[dict[str, str]]:
    assert list(table["cell_status"]) == ["finished", "finished"], list(table["error"])
    return [json.loads(text) for text in table["text"]]


@needs_bwrap
def test_a_sandboxed_cell_writes_only_its_copy_and_reaches_no_neighbour_nor_home(
    place: dict[str, Any],
) -> None:
    table = grid(place, "bwrap")
    assert list(table["sandbox"]) == ["bwrap", "bwrap"]
    for report in reports(table):
        assert report["own_write"] == "ok:4", report
        assert report["neighbour_read"].startswith("error:"), report
        assert report["home_read"].startswith("error:"), report
        assert report["cell_folder"] == "ok:work", report  # not its journals (data/), nor the lock
        # (``outside`` is under /tmp: the write may land in the sandbox's private /tmp, never in ours.)
        assert report["runtime_write"] == "error:OSError", report  # read-only: EROFS
        assert report["capabilities"] == "ok:0000000000000000", report  # none, even when we are root
        assert report["fs_neighbour"].startswith("error:") and "outside" in report["fs_neighbour"], report
        assert report["fs_home"].startswith("error:") and "outside" in report["fs_home"], report
        # The terminal ran, sandboxed: a path its argv names is not shown to it.
        assert report["terminal"].startswith("error:1:") and "No such file" in report["terminal"], report
    assert not (place["tmp"] / "outside.txt").exists()
    assert Path(place["paths"]["runtime"]).read_text() == AGENT.read_text()
    assert list(table["files_changed"]) == [1, 1]  # mine.txt, in each cell's own copy
    assert not running(place["paths"]["runtime"])  # bwrap and the agent inside it ended with the cell


def running(script: str) -> list[int]:
    """Processes whose command line names ``script`` (a sandboxed agent seen from outside, bwrap too)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and script.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_without_a_sandbox_the_same_agent_reaches_both(place: dict[str, Any]) -> None:
    """The control: what the sandboxed test refuses is open here, so that test can fail."""
    table = grid(place, None)
    assert list(table["sandbox"].isna()) == [True, True]
    for report in reports(table):
        assert report["own_write"] == "ok:4"
        assert report["neighbour_read"] == "ok:neighbour secret", report
        assert report["home_read"] == "ok:home secret", report
        assert "data" in report["cell_folder"].split(","), report
        assert report["outside_write"] == "ok:7", report
        assert report["runtime_write"].startswith("ok:"), report
        # The client's fs methods serve the session's folders: the profile's additional directory too.
        assert report["fs_neighbour"].startswith("error:") and "outside" in report["fs_neighbour"], report
        assert report["fs_home"].startswith("ok:") and "home secret" in report["fs_home"], report
        assert report["terminal"] == "ok:0:neighbour secret", report
    assert (place["tmp"] / "outside.txt").read_text() == "escaped"


@needs_bwrap
def test_an_agent_the_sandbox_kills_says_so_in_its_row(place: dict[str, Any]) -> None:
    (place["home"] / ".escape-agent-token").write_text("t")
    plain = grid(place, None, profile="needs-home", repeats=1)
    assert list(plain["cell_status"]) == ["finished"] and list(plain["text"]) == ["token ok"]
    table = grid(place, "bwrap", profile="needs-home", repeats=1)
    (row,) = table.to_dict("records")
    assert row["cell_status"] == "failed" and row["sandbox"] == "bwrap"
    assert row["error"].startswith("the agent exited in the sandbox (bwrap): "), row["error"]
    assert "code 3" in row["error"] and "no token at" in row["error"], row["error"]
    assert "\n" not in row["error"]


def test_docker_without_an_engine_or_a_missing_tool_is_refused_in_one_line_before_any_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main(kind: str) -> Any:
        return await run_grid(["hi"], folder=tmp_path / "runs", config_dirs=[], sandbox=kind, progress=False)

    for kind, fix in (("docker", "start the docker engine"), ("podman", "podman run --rm --rootfs / true")):
        if shutil.which(kind) is not None and anyio.run(sandbox_problem, kind) is not None:
            with pytest.raises(SandboxUnavailable) as engine:  # installed, cannot run (here: both)
                anyio.run(main, kind)
            assert "\n" not in str(engine.value) and fix in str(engine.value), engine.value
    monkeypatch.setenv("PATH", str(tmp_path))  # no tool at all
    for kind in ("docker", "podman", "bwrap"):
        with pytest.raises(SandboxUnavailable) as missing:
            anyio.run(main, kind)
        message = str(missing.value)
        assert "\n" not in message and f"{kind} is not on PATH" in message and "install" in message
    assert not (tmp_path / "runs").exists()  # refused before the run's folder was made
    for bad in ("chroot", 3):
        with pytest.raises((ValueError, TypeError)) as wrong:
            anyio.run(main, bad)
        assert "sandbox=" in str(wrong.value)


def test_the_container_argv_binds_the_copy_rw_the_runtime_ro_and_passes_env_by_name(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "agent.py"
    script.write_text("")
    env = {"HOME": "/root", "API_KEY": "s3cret", "PYTHONPATH": "/"}
    for kind in ("podman", "docker"):
        argv = (
            Sandbox(kind, image="img")
            .bound([work])
            .wrap([sys.executable, str(script)], env=env, cwd=str(work))
        )
        assert argv[1:4] == ["run", "--rm", "-i"] and argv[-3:] == ["img", sys.executable, str(script)]
        assert f"--volume={work}:{work}:rw" in argv and f"--volume={script}:{script}:ro" in argv
        assert f"--workdir={work}" in argv and "--env=API_KEY" in argv
        assert not any("s3cret" in part for part in argv)  # values stay out of ps
        assert "--volume=/:/:ro" not in argv  # a runtime path that would show everything is left out
        assert ("--userns=keep-id" in argv) == (kind == "podman")


def test_runtime_paths_never_uncover_the_home_the_temp_folder_or_the_copy(tmp_path: Path) -> None:
    shown = tmp_path / "runtime"
    shown.mkdir()
    hidden = ("/", "/tmp", os.path.expanduser("~"), str(tmp_path))  # tmp_path holds the writable copy
    box = Sandbox("bwrap", read_only=(*hidden, str(shown))).bound([tmp_path / "w"])
    paths = box.runtime_paths([sys.executable], {"PYTHONPATH": f"/:{tmp_path}", "HOME": "/root"})
    for path in (*hidden, "/root", tempfile.gettempdir()):
        assert path not in paths
    assert str(shown) in paths  # below /tmp: shown, it does not uncover the other cells' folders
    assert any(sys.base_prefix.startswith(p) for p in paths)
    with pytest.raises(ValueError, match="not one of bwrap, podman, docker"):
        Sandbox("jail")
    # A file of the home given on purpose (an agent's credentials) is shown, and only it.
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "token").write_text("t")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(tmp_path / "home"))
        shown_token = Sandbox("bwrap", read_only=("~/token",)).runtime_paths(
            [], {"HOME": str(tmp_path / "home")}
        )
    assert str(tmp_path / "home" / "token") in shown_token and str(tmp_path / "home") not in shown_token
    # A terminal's command and args are the agent's: nothing they name is shown (nor PYTHONPATH's).
    named = box.for_terminals().runtime_paths(
        ["/opt/x/bin/cat", str(tmp_path)], {"PYTHONPATH": str(tmp_path)}
    )
    assert str(tmp_path) not in named and "/opt/x" not in named
    sandbox_module._problems.clear()


@needs_bwrap
def test_a_dask_worker_runs_its_cells_in_the_sandbox_too(place: dict[str, Any]) -> None:
    distributed = pytest.importorskip("distributed")  # the test extra installs it; CI never skips

    async def main(client: Any) -> Any:
        return await run_grid(
            [json.dumps(place["paths"])],
            profiles=["escape"],
            folder=place["tmp"] / "runs",
            name="on-dask",
            config_dirs=[place["config"]],
            sandbox="bwrap",
            executor=client,
            progress=False,
            timeout=60,
        )

    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        table = anyio.run(main, client)
    (row,) = table.to_dict("records")
    record = json.loads((place["tmp"] / "runs" / "on-dask" / "cells" / f"{row['cell']}.json").read_text())
    assert record["pid"] != os.getpid() and row["sandbox"] == "bwrap", row["error"]
    report = json.loads(row["text"])
    assert report["own_write"] == "ok:4" and report["cell_folder"] == "ok:work", report
    assert report["neighbour_read"].startswith("error:") and report["home_read"].startswith("error:"), report
    assert not (place["tmp"] / "outside.txt").exists()


@needs_bwrap
def test_the_demo_agent_runs_its_tests_in_a_sandboxed_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The built-in agent, sandboxed: its terminal's ``python3`` is found where the sandbox shows it."""
    demo_env(monkeypatch, tmp_path / "demo-state")

    async def main() -> Any:
        return await run_grid(
            ["run the tests"],
            folder=tmp_path / "runs",
            config_dirs=[],
            template=TASK,
            policy=PermissionPolicy("allow *"),
            sandbox="bwrap",
            progress=False,
            timeout=60,
        )

    (row,) = anyio.run(main).to_dict("records")
    assert row["cell_status"] == "finished" and row["sandbox"] == "bwrap", row["error"]
    assert "The tests ran: 3 passed" in row["text"], row["text"]
    assert agents_with(str(tmp_path / "demo-state")) == []
