"""``%silo doctor`` shows the profiles merge (issue 34): alone, each profile's file and the site entries
the user's replace; with a PROFILE, the file that profile comes from."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import CapturedIO, capture_output

import silo_nb
from silo_nb.notebook.magics import NotebookSession, use_session
from tests.conftest import Workspace, demo_agent, in_process_demo
from tests.support.profiles import toml_profile, write_toml


@pytest.fixture
def site_and_user(workspace: Workspace) -> tuple[Path, Path]:
    """A site file (two profiles, one broken) and the user's (replacing one of the site's)."""
    site = write_toml(
        workspace.root / "site",
        toml_profile("team", label="Team (site)", command="site-agent")
        + toml_profile("lab", label="Lab")
        + toml_profile("broken", lable="x"),
    )
    demo = demo_agent("team", label="Team (mine)")
    mine = toml_profile("team", label=demo["label"], command=demo["command"], args=demo["args"])
    user = write_toml(workspace.config, mine)
    return site, user


@pytest.fixture
def shell(workspace: Workspace) -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    ip.extension_manager.load_extension("silo_nb")
    service = silo_nb.AgentsService(
        workspace_dir=workspace.folder,
        config_dirs=[workspace.config, workspace.root / "site"],  # the user's first, then the site's
        data_dir=workspace.data,
        transport_factory=in_process_demo,
    )
    use_session(ip, NotebookSession(ip, service))
    yield ip
    use_session(ip, None)


async def run(ip: InteractiveShell, cell: str) -> CapturedIO:
    with capture_output() as captured, anyio.fail_after(60):
        result = await ip.run_cell_async(cell, transformed_cell=ip.transform_cell(cell))
    assert result.success, result.error_in_exec or result.error_before_exec
    return captured


async def test_doctor_alone_shows_each_profiles_file_and_what_the_user_replaced(
    shell: InteractiveShell, site_and_user: tuple[Path, Path]
) -> None:
    site, user = site_and_user
    out = (await run(shell, "%silo doctor")).stdout
    lines = [" ".join(line.split()) for line in out.splitlines()]  # the id column's width aside
    assert lines.index(f"site {site}") < lines.index(f"user {user}")
    assert f"team user {user} — replaces site {site}" in lines
    assert f"lab site {site}" in lines
    assert "demo built in" in lines
    assert any(line.startswith(f"skipped: {site}: profile broken: unknown key") for line in lines)


async def test_doctor_profile_says_which_file_it_is_read_from(
    shell: InteractiveShell, site_and_user: tuple[Path, Path]
) -> None:
    site, user = site_and_user
    out = (await run(shell, "%silo doctor team")).stdout
    assert f"  from: user {user} — replaces site {site}" in out.splitlines()
    assert "problem" not in out  # the user's entry (the demo agent) ran, not the site's "site-agent"
