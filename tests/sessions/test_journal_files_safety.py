"""Issue 21, items 2 and 4: a planted file or another local user can neither read nor change a journal.

- Journals and their locks are never reached through a symbolic link: a journal that is a link is not
  read through (a file outside the data folder never comes back as a transcript) nor appended through,
  and a ``.lock`` link's target is never truncated.
- A data folder that is another user's, or that others may write, is refused with one line that says what
  to do; nothing is written into it. With root (CI and this machine) the other user is a real account made
  for the test (``useradd``); without root, ``useradd`` is not possible, and the test checks a folder of
  ours that others may write instead (the same rule, the same line).
- Files are 0600 and folders 0700 whatever the umask.
- A FIFO named ``*.jsonl`` (item 4) never blocks: ``read_journal``, the agents scan and a resume return at
  once, each in a child process with a deadline (it hung for good before).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import silo_nb
from tests.conftest import OTHER_USER, Workspace, in_process_demo, make_other_user


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


async def one_session(workspace: Workspace) -> tuple[silo_nb.AgentsService, str, Path]:
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        await handle.prompt([{"type": "text", "text": "hello"}])
        session_id = handle.session_id
    return svc, session_id, svc.sessions.journals.path(svc.workspace_id, session_id)


async def test_a_journal_that_is_a_symlink_is_not_read_through_nor_appended_through(
    workspace: Workspace,
) -> None:
    svc, session_id, path = await one_session(workspace)
    outside = workspace.root / "outside.jsonl"
    shutil.copy(path, outside)  # a file that looks like a journal, outside the data folder
    before = outside.read_bytes()
    path.unlink()
    path.symlink_to(outside)
    assert await svc.sessions.read_journal(session_id) == []
    with pytest.raises(silo_nb.AgentSessionError, match="symbolic link") as caught:
        await svc.sessions.connect("demo", resume={"session_id": session_id})
    assert "\n" not in str(caught.value)
    assert outside.read_bytes() == before
    assert svc.get_state() == []


async def test_a_lock_that_is_a_symlink_is_not_truncated(workspace: Workspace) -> None:
    svc, session_id, path = await one_session(workspace)
    precious = workspace.root / "precious.txt"
    precious.write_text("do not truncate me")
    lock = path.with_name(path.name + ".lock")
    lock.unlink(missing_ok=True)
    lock.symlink_to(precious)
    with pytest.raises(silo_nb.AgentSessionError, match="symbolic link"):
        await svc.sessions.connect("demo", resume={"session_id": session_id})
    assert precious.read_text() == "do not truncate me"


async def test_a_data_folder_of_another_user_is_refused_and_nothing_is_written(
    workspace: Workspace,
) -> None:
    data = workspace.data
    data.mkdir()
    if os.geteuid() == 0:
        other = make_other_user()
        os.chown(data, other.pw_uid, other.pw_gid)
        os.chmod(data, 0o777)
        said = "belongs to another user"
    else:  # no useradd without root: a folder of ours that anyone may write, refused by the same rule
        os.chmod(data, 0o777)
        said = "writable by other users"
    svc = workspace.service()
    with pytest.raises(silo_nb.AgentSessionError, match=said) as caught:
        await svc.sessions.connect("demo")
    message = str(caught.value)
    assert "\n" not in message and str(data) in message
    assert list(data.iterdir()) == []
    assert svc.get_state() == []


async def test_the_other_user_cannot_read_or_truncate_our_journal(
    workspace: Workspace, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Through a real second account (root only: CI runs as root; without root the modes are checked
    alone). The data folder sits in a folder anyone may traverse, so only silo_nb's own modes stand
    between that user and the journal."""
    base = Path(tempfile.mkdtemp(prefix="silo-nb-shared-"))
    try:
        os.chmod(base, 0o755)
        svc = silo_nb.AgentsService(
            workspace_dir=workspace.folder,
            config_dirs=[workspace.config],
            data_dir=base / "data",
            transport_factory=in_process_demo,
        )
        async with await svc.sessions.connect("demo") as handle:
            await handle.prompt([{"type": "text", "text": "a secret prompt"}])
            path = svc.sessions.journals.path(svc.workspace_id, handle.session_id)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE((base / "data").stat().st_mode) == 0o700
        if os.geteuid() != 0:
            return
        make_other_user()
        for attempt in (f"cat {path}", f": > {path}"):
            result = subprocess.run(
                ["/bin/sh", "-c", attempt], user=OTHER_USER, capture_output=True, text=True, check=False
            )
            assert result.returncode != 0 and "Permission denied" in result.stderr, attempt
            assert "secret" not in result.stdout
        assert b"a secret prompt" in path.read_bytes()
    finally:
        shutil.rmtree(base)


async def test_files_are_0600_and_folders_0700_whatever_the_umask(
    workspace: Workspace, open_umask: None
) -> None:
    _svc, _session_id, path = await one_session(workspace)
    lock = path.with_name(path.name + ".lock")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    folder = path.parent
    while folder != workspace.root:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
        folder = folder.parent


FIFO_PROBE = """
import asyncio, sys
from pathlib import Path
import silo_nb
from silo_nb.sessions.dormant_sessions import find_dormant
svc = silo_nb.AgentsService(workspace_dir=Path(sys.argv[1]), config_dirs=[], data_dir=Path(sys.argv[2]))
print(len(asyncio.run(svc.sessions.read_journal(sys.argv[3]))), flush=True)
print(len(find_dormant(svc.data_dir, svc.workspace_id)), flush=True)
async def resume():
    try:
        await svc.sessions.connect("demo", resume={"session_id": sys.argv[3]})
    except silo_nb.AgentSessionError as exc:
        print("refused:", exc, flush=True)
asyncio.run(resume())
"""


async def test_a_fifo_named_jsonl_never_blocks_a_read_a_scan_or_a_resume(workspace: Workspace) -> None:
    svc = workspace.service()
    path = svc.sessions.journals.path(svc.workspace_id, "fifo-session")
    path.parent.mkdir(parents=True, mode=0o700)
    for folder in (workspace.data, *path.parents):
        if folder == workspace.root:
            break
        os.chmod(folder, 0o700)
    os.mkfifo(path, 0o600)
    result = subprocess.run(
        [sys.executable, "-c", FIFO_PROBE, str(workspace.folder), str(workspace.data), "fifo-session"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = result.stdout.splitlines()
    assert lines[:2] == ["0", "0"], result.stderr
    assert lines[2].startswith("refused:") and "not a regular file" in lines[2], result.stdout
