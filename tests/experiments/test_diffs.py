"""What a cell changed: folders compared file by file, git-aware for a repository, and rebuilt from it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from silo_nb.experiments.diffs import ChangeBase, rebuild_workdir
from tests.experiments.grid_checks import diff_counts


def tree(root: Path) -> dict[str, bytes]:
    """Every file and link under ``root`` (``.git`` left out), with its bytes or link target."""
    found: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative.split("/")[0] == ".git":
            continue
        if path.is_symlink():
            found[relative] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            found[relative] = path.read_bytes()
    return found


def template(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("a = 1\nb = 2\nc = 3\n")
    (root / "README.md").write_text("# Project\n")
    (root / "logo.bin").write_bytes(b"\x00\x01\x02")
    (root / "old.txt").write_text("going away\n")
    return root


def agent_works_on(work: Path) -> None:
    (work / "src" / "app.py").write_text("a = 1\nb = 20\nc = 3\nd = 4\n")
    (work / "new.md").write_text("fresh\nfile\n")
    (work / "logo.bin").write_bytes(b"\x00\x09")
    (work / "old.txt").unlink()
    (work / "link").symlink_to("README.md")


def test_a_plain_folder_gives_a_unified_diff_counts_and_binary_files(tmp_path: Path) -> None:
    seed = template(tmp_path / "template")
    work = tmp_path / "work"
    shutil.copytree(seed, work)
    base = ChangeBase.capture(str(seed), str(work))
    agent_works_on(work)
    changes = base.changes(str(work))
    assert changes.method == "files" and changes.error is None
    statuses = {f["path"]: f["status"] for f in changes.files}
    assert statuses == {
        "link": "added",
        "logo.bin": "modified",
        "new.md": "added",
        "old.txt": "deleted",
        "src/app.py": "modified",
    }
    assert [f["path"] for f in changes.files if f["binary"]] == ["logo.bin"]
    assert (changes.files_changed, changes.lines_added, changes.lines_removed) == (5, 5, 2)
    assert "Binary files a/logo.bin and b/logo.bin differ" in changes.diff
    assert "-b = 2\n+b = 20\n" in changes.diff and "+++ b/new.md\n" in changes.diff
    counted = diff_counts(changes.diff)  # text files only: the binary one is named, not diffed
    assert (counted["lines_added"], counted["lines_removed"]) == (changes.lines_added, changes.lines_removed)
    # The kept contents rebuild exactly what the agent left.
    rebuilt = tmp_path / "rebuilt"
    assert changes.contents is not None
    rebuild_workdir(str(seed), changes.contents, str(rebuilt))
    assert tree(rebuilt) == tree(work)


def test_no_template_compares_with_an_empty_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    base = ChangeBase.capture(None, str(work))
    (work / "hello.txt").write_text("hi\n")
    changes = base.changes(str(work))
    assert changes.files == [
        {"path": "hello.txt", "status": "added", "added": 1, "removed": 0, "binary": False}
    ]
    assert changes.diff == "--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+hi\n"


def git(folder: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    done = subprocess.run(
        ["git", "-C", str(folder), *args], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_repository_template_is_diffed_by_git_honouring_gitignore_and_commits(tmp_path: Path) -> None:
    seed = template(tmp_path / "template")
    (seed / ".gitignore").write_text("build/\n")
    git(seed, "init", "-q")
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "seed")
    (seed / "README.md").write_text("# Project\nuncommitted in the template\n")  # the base is the folder
    work = tmp_path / "work"
    shutil.copytree(seed, work, symlinks=True)
    head = git(work, "rev-parse", "HEAD")
    base = ChangeBase.capture(str(seed), str(work))
    assert base.git_tree is not None
    agent_works_on(work)
    (work / "build").mkdir()
    (work / "build" / "out.o").write_bytes(b"ignored")
    git(work, "mv", "README.md", "GUIDE.md")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "the agent commits")  # a commit does not hide what changed
    changes = base.changes(str(work))
    assert changes.method == "git" and changes.error is None
    paths = {f["path"]: f["status"] for f in changes.files}
    assert "build/out.o" not in paths and paths["GUIDE.md"] == "renamed" and paths["old.txt"] == "deleted"
    assert paths["src/app.py"] == "modified" and paths["new.md"] == "added"
    assert [f["path"] for f in changes.files if f["binary"]] == ["logo.bin"]
    assert "rename from README.md" in changes.diff
    assert git(seed, "status", "--porcelain") == " M README.md\n"  # the user's repository is untouched
    assert git(work, "rev-parse", "HEAD") != head
    rebuilt = tmp_path / "rebuilt"
    assert changes.contents is not None
    rebuild_workdir(str(seed), changes.contents, str(rebuilt))
    expected = {k: v for k, v in tree(work).items() if not k.startswith("build/")}
    assert {k: v for k, v in tree(rebuilt).items() if not k.startswith("build/")} == expected


def test_rebuilding_refuses_paths_outside_the_copy(tmp_path: Path) -> None:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../escape.txt", "no")
    with pytest.raises(ValueError, match="outside the working copy"):
        rebuild_workdir(None, buffer.getvalue(), str(tmp_path / "work"))
    assert not (tmp_path / "escape.txt").exists()
