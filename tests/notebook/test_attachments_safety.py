"""``--file`` and ``--attach``: what may be read and sent, file modes under any umask, and cleanup."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from silo_nb.model.errors import AgentSessionInputError
from silo_nb.notebook.attachments import (
    MAX_FILE_BYTES,
    attachment_blocks,
    attachments_folder,
    discard_attachments,
    file_blocks,
)


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    "path", ["/proc/self/environ", "/proc/self/cmdline", "/sys/devices/system/cpu/online", "/dev/null"]
)
@pytest.mark.parametrize("embedded", [True, False])
def test_pseudo_files_are_refused(tmp_path: Path, path: str, embedded: bool) -> None:
    if not os.path.exists(path):
        pytest.skip(f"{path} does not exist here")
    with pytest.raises(AgentSessionInputError, match=r"--file .*(not a regular file|/proc|/sys|/dev)"):
        file_blocks([path], embedded=embedded, workspace=tmp_path)


def test_a_symlink_to_proc_is_refused(tmp_path: Path) -> None:
    (tmp_path / "env.txt").symlink_to("/proc/self/environ")
    with pytest.raises(AgentSessionInputError, match="/proc"):
        file_blocks(["env.txt"], embedded=True, workspace=tmp_path)


def test_fifos_and_folders_are_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    for name in ("pipe", "folder"):
        with pytest.raises(AgentSessionInputError, match="not a regular file"):
            file_blocks([name], embedded=True, workspace=tmp_path)


def test_size_is_capped_with_one_clear_line(tmp_path: Path) -> None:
    big = tmp_path / "big.csv"
    big.write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    for embedded in (True, False):
        with pytest.raises(AgentSessionInputError) as caught:
            file_blocks(["big.csv"], embedded=embedded, workspace=tmp_path)
        message = str(caught.value)
        assert "\n" not in message and "1 MiB limit" in message and "big.csv" in message
        assert "1,048,577 bytes" in message


def test_regular_files_are_still_sent(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# notes\n", encoding="utf-8")
    (tmp_path / "link.md").symlink_to(tmp_path / "notes.md")
    embedded = file_blocks(["notes.md", "link.md"], embedded=True, workspace=tmp_path)
    assert [block["text"] for block in embedded] == ["# notes\n", "# notes\n"]
    assert embedded[1]["uri"] == (tmp_path / "notes.md").as_uri()  # the file the link resolves to
    linked = file_blocks([str(tmp_path / "notes.md")], embedded=False, workspace=tmp_path)
    assert linked == [{"type": "resource_link", "uri": (tmp_path / "notes.md").as_uri(), "name": "notes.md"}]
    with pytest.raises(AgentSessionInputError, match="no such file"):
        file_blocks(["missing.md"], embedded=True, workspace=tmp_path)


def test_spilled_attachments_are_private_under_umask_000(tmp_path: Path, open_umask: None) -> None:
    blocks = attachment_blocks(
        ["df"], {"df": "a,b\n1,2\n"}, embedded=False, workspace=tmp_path, session_id="sess-1"
    )
    path = Path(blocks[0]["uri"].removeprefix("file://"))
    assert path.read_text(encoding="utf-8") == "a,b\n1,2\n"
    assert mode(path) == 0o600
    folder = attachments_folder(tmp_path, "sess-1")
    assert path.parent == folder
    assert mode(folder) == 0o700 and mode(folder.parent) == 0o700
    # Written again (same content, same name): still private.
    attachment_blocks(["df"], {"df": "a,b\n1,2\n"}, embedded=False, workspace=tmp_path, session_id="sess-1")
    assert mode(path) == 0o600 and sorted(p.name for p in folder.iterdir()) == [path.name]


def test_an_existing_loose_folder_is_tightened(tmp_path: Path, open_umask: None) -> None:
    loose = attachments_folder(tmp_path, "s")
    loose.mkdir(parents=True, mode=0o777)
    os.chmod(loose, 0o777)
    attachment_blocks(["v"], {"v": 1}, embedded=False, workspace=tmp_path, session_id="s")
    assert mode(loose) == 0o700


def test_a_planted_symlink_is_replaced_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("keep me", encoding="utf-8")
    blocks = attachment_blocks(["v"], {"v": "data"}, embedded=False, workspace=tmp_path, session_id="s")
    path = Path(blocks[0]["uri"].removeprefix("file://"))
    path.unlink()
    path.symlink_to(target)
    attachment_blocks(["v"], {"v": "data"}, embedded=False, workspace=tmp_path, session_id="s")
    assert target.read_text(encoding="utf-8") == "keep me"
    assert not path.is_symlink() and path.read_text(encoding="utf-8") == "data"


def test_attachments_are_removed_when_the_session_is_disposed(tmp_path: Path) -> None:
    for session in ("a", "b"):
        attachment_blocks(["v"], {"v": "x" * 10}, embedded=False, workspace=tmp_path, session_id=session)
    assert discard_attachments(tmp_path, "a") is True
    assert not attachments_folder(tmp_path, "a").exists()
    assert any(attachments_folder(tmp_path, "b").iterdir())  # another session's stay
    assert discard_attachments(tmp_path, "a") is False  # nothing left: no error


def test_attachments_kept_on_purpose_stay(tmp_path: Path) -> None:
    attachment_blocks(["v"], {"v": "x"}, embedded=False, workspace=tmp_path, session_id="a")
    (attachments_folder(tmp_path, "a") / ".keep").touch()
    assert discard_attachments(tmp_path, "a") is False
    assert len(list(attachments_folder(tmp_path, "a").iterdir())) == 2


def test_session_ids_cannot_escape_the_attachments_folder(tmp_path: Path) -> None:
    root = tmp_path / ".silo" / "attachments"
    for hostile in ("../../etc", "/abs", "..", "a/b"):
        folder = attachments_folder(tmp_path, hostile)
        assert folder.parent == root and folder.name not in ("", ".", "..")


SECOND_PROC = """
import sys
from pathlib import Path
from silo_nb.notebook.attachments import file_blocks
from silo_nb.model.errors import AgentSessionInputError
try:
    file_blocks([sys.argv[1]], embedded=True, workspace=Path(sys.argv[2]))
except AgentSessionInputError as exc:
    print("refused:", exc)
else:
    print("ACCEPTED")
"""


def test_a_second_procfs_mount_is_refused_too(tmp_path: Path) -> None:
    """A procfs mounted elsewhere (a container's /host/proc) has its own device number; it is found by
    file system type in /proc/self/mountinfo. Runs in private user, mount and pid namespaces (`unshare
    -rmpf`: no root needed)."""
    mount_point = tmp_path / "p"
    mount_point.mkdir()
    script = (
        f"mount -t proc proc {mount_point} && "
        f"{sys.executable} -c '{SECOND_PROC}' {mount_point}/self/environ {tmp_path}"
    )
    result = subprocess.run(
        ["unshare", "-rmpf", "sh", "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert "refused:" in result.stdout and "not a regular file" in result.stdout, (
        result.stdout + result.stderr
    )


def test_sessions_whose_ids_differ_never_share_a_folder(tmp_path: Path) -> None:
    """Issue 21: ``a/b`` and ``a_b`` shared ``.silo/attachments/a_b`` (a disconnect of one removed the
    other's files). The folder name is the journal's encoding of the id: reversible, so distinct."""
    ids = ("a/b", "a_b", "a:b", "..", "~x", "\ud800")
    folders = {attachments_folder(tmp_path, session_id) for session_id in ids}
    assert len(folders) == len(ids)
    for session_id in ("a/b", "a_b"):
        attachment_blocks(["v"], {"v": session_id}, embedded=False, workspace=tmp_path, session_id=session_id)
    assert discard_attachments(tmp_path, "a/b") is True
    assert any(attachments_folder(tmp_path, "a_b").iterdir())


def test_a_planted_link_for_the_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".silo").mkdir(mode=0o700)
    (tmp_path / ".silo" / "attachments").symlink_to(elsewhere)
    with pytest.raises(AgentSessionInputError, match="not a plain folder"):
        attachment_blocks(["v"], {"v": "x"}, embedded=False, workspace=tmp_path, session_id="s")
    assert list(elsewhere.iterdir()) == []
