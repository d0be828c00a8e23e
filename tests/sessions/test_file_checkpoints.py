"""The files part of a turn's checkpoint (issue 32): ``FileCheckpoints`` on temporary folders, and one turn of
the demo agent through a real session whose file edit is undone."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

import silo_nb
from silo_nb.model import UndoItem
from silo_nb.sessions import FileCheckpoints, checkpoint_store
from tests.conftest import Workspace, demo_agent


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.csv").write_text("a,b\n1,2\n")
    (work / "keep.txt").write_text("untouched\n")
    (work / "old.txt").write_text("the turn deletes me\n")
    os.chmod(work / "old.txt", 0o640)
    return work


def checkpoints(tmp_path: Path, folder: Path, **limits: Any) -> FileCheckpoints:
    return FileCheckpoints(tmp_path / "store", [folder], **limits)


def by_subject(items: list[UndoItem]) -> dict[str, UndoItem]:
    return {item.subject: item for item in items}


async def a_turn(files: FileCheckpoints, folder: Path, turn: int = 1) -> None:
    """A turn that changes data.csv, creates new.py (in a new folder) and deletes old.txt."""
    await files.capture(turn, "start")
    (folder / "data.csv").write_text("a,b\n99,2\n")
    (folder / "src").mkdir()
    (folder / "src" / "new.py").write_text("print('new')\n")
    (folder / "old.txt").unlink()
    await files.capture(turn, "end")


async def test_a_write_a_created_file_and_a_deleted_file_are_undone(tmp_path: Path, folder: Path) -> None:
    files = checkpoints(tmp_path, folder)
    assert files.part == "files"
    await a_turn(files, folder)
    items = await files.undo_turn(1)
    assert [item.subject for item in items] == ["data.csv", "old.txt", "src/new.py"]
    assert all(item.restored and item.part == "files" for item in items), items
    said = by_subject(items)
    assert said["data.csv"].said == "put back as it was before the turn"
    assert said["old.txt"].said == "recreated (the turn deleted it)"
    assert said["src/new.py"].said == "removed (the turn created it)"
    assert (folder / "data.csv").read_text() == "a,b\n1,2\n"
    assert (folder / "old.txt").read_text() == "the turn deletes me\n"
    assert (folder / "old.txt").stat().st_mode & 0o777 == 0o640  # the mode it had
    assert not (folder / "src" / "new.py").exists()
    assert (folder / "keep.txt").read_text() == "untouched\n"
    assert not [p.name for p in folder.rglob("*.tmp")]


async def test_a_second_undo_is_harmless(tmp_path: Path, folder: Path) -> None:
    files = checkpoints(tmp_path, folder)
    await a_turn(files, folder)
    await files.undo_turn(1)
    again = await files.undo_turn(1)
    assert {item.said for item in again} == {"already as it was before the turn"}
    assert (folder / "data.csv").read_text() == "a,b\n1,2\n"
    assert not (folder / "src" / "new.py").exists()


async def test_a_file_the_user_changed_since_the_turn_is_refused_and_never_overwritten(
    tmp_path: Path, folder: Path
) -> None:
    files = checkpoints(tmp_path, folder)
    await a_turn(files, folder)
    (folder / "data.csv").write_text("a,b\nmine\n")  # the user's edit after the turn
    (folder / "src" / "new.py").write_text("print('mine now')\n")
    items = by_subject(await files.undo_turn(1))
    for path in ("data.csv", "src/new.py"):
        assert not items[path].restored
        assert items[path].said == "changed since the turn — left as it is (your change wins)"
    assert (folder / "data.csv").read_text() == "a,b\nmine\n"
    assert (folder / "src" / "new.py").read_text() == "print('mine now')\n"
    assert items["old.txt"].restored  # the other files of the turn are still undone
    assert (folder / "old.txt").exists()


async def test_the_user_recreating_a_deleted_file_wins_too(tmp_path: Path, folder: Path) -> None:
    files = checkpoints(tmp_path, folder)
    await a_turn(files, folder)
    (folder / "old.txt").write_text("my own old.txt\n")
    item = by_subject(await files.undo_turn(1))["old.txt"]
    assert not item.restored and "your change wins" in item.said
    assert (folder / "old.txt").read_text() == "my own old.txt\n"


async def test_only_the_turn_s_changes_are_undone_not_earlier_turns(tmp_path: Path, folder: Path) -> None:
    files = checkpoints(tmp_path, folder)
    await files.capture(1, "start")
    (folder / "data.csv").write_text("turn 1\n")
    await files.capture(1, "end")
    await files.capture(2, "start")
    (folder / "data.csv").write_text("turn 2\n")
    await files.capture(2, "end")
    assert [i.said for i in await files.undo_turn(2)] == ["put back as it was before the turn"]
    assert (folder / "data.csv").read_text() == "turn 1\n"
    assert [i.restored for i in await files.undo_turn(1)] == [True]
    assert (folder / "data.csv").read_text() == "a,b\n1,2\n"


async def test_a_turn_without_an_end_checkpoint_is_compared_with_the_folder_now(
    tmp_path: Path, folder: Path
) -> None:
    files = checkpoints(tmp_path, folder)
    await files.capture(1, "start")
    (folder / "data.csv").write_text("the kernel died before the end\n")
    (item,) = await files.undo_turn(1)
    assert item.restored and item.subject == "data.csv"
    assert "no end checkpoint" in item.said and "as they are now" in item.said
    assert (folder / "data.csv").read_text() == "a,b\n1,2\n"


async def test_a_turn_never_checkpointed_says_so(tmp_path: Path, folder: Path) -> None:
    (item,) = await checkpoints(tmp_path, folder).undo_turn(7)
    assert not item.restored and item.said.startswith("not checkpointed — ")


async def test_a_file_over_the_limit_is_listed_not_restored(tmp_path: Path, folder: Path) -> None:
    files = checkpoints(tmp_path, folder, max_file_bytes=100)
    (folder / "big.bin").write_bytes(b"x" * 200)
    await files.capture(1, "start")
    (folder / "big.bin").write_bytes(b"y" * 300)
    (folder / "data.csv").write_text("changed\n")
    await files.capture(1, "end")
    items = by_subject(await files.undo_turn(1))
    assert not items["big.bin"].restored
    assert items["big.bin"].said == "not checkpointed — over 100 bytes (max_file_bytes)"
    assert (folder / "big.bin").read_bytes() == b"y" * 300
    assert items["data.csv"].restored
    kept = b"".join(p.read_bytes() for p in (tmp_path / "store" / "packs").iterdir())
    assert b"x" * 200 not in kept and b"a,b\n1,2\n" in kept


async def test_past_max_files_the_rest_is_listed(tmp_path: Path, folder: Path) -> None:
    files = checkpoints(tmp_path, folder, max_files=2)
    await files.capture(1, "start")
    (folder / "zz-new.txt").write_text("made by the turn\n")
    await files.capture(1, "end")
    items = await files.undo_turn(1)
    assert any(not i.restored and "max_files" in i.said for i in items), items
    assert (folder / "zz-new.txt").exists()  # never removed on a guess


async def test_a_full_store_lists_what_it_could_not_copy(tmp_path: Path, folder: Path) -> None:
    files = checkpoints(tmp_path, folder, max_store_bytes=5)
    await files.capture(1, "start")
    (folder / "data.csv").write_text("changed\n")
    await files.capture(1, "end")
    (item,) = await files.undo_turn(1)
    assert not item.restored and "the checkpoint store is full" in item.said
    assert (folder / "data.csv").read_text() == "changed\n"


async def test_a_disk_full_at_the_turn_s_start_is_remembered_not_raised(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = checkpoints(tmp_path, folder)
    real_replace = os.replace

    def full(src: Any, dst: Any, **kwargs: Any) -> None:
        if str(tmp_path / "store") in str(dst):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "replace", full)
    await files.capture(1, "start")  # never raises into the turn
    monkeypatch.undo()
    (folder / "data.csv").write_text("changed\n")
    await files.capture(1, "end")
    (item,) = await files.undo_turn(1)
    assert not item.restored
    assert (
        item.said == "not checkpointed — the checkpoint at the turn's start failed: No space left on device"
    )
    assert (folder / "data.csv").read_text() == "changed\n"


async def test_an_unusable_store_is_listed(tmp_path: Path, folder: Path) -> None:
    (tmp_path / "in-the-way").write_text("a file where the store's folder should be\n")
    files = FileCheckpoints(tmp_path / "in-the-way" / "store", [folder])
    await files.capture(1, "start")
    (item,) = await files.undo_turn(1)
    assert not item.restored and "the checkpoint at the turn's start failed" in item.said


async def test_the_store_survives_a_restart(tmp_path: Path, folder: Path) -> None:
    await a_turn(checkpoints(tmp_path, folder), folder)
    after_restart = checkpoints(tmp_path, folder)  # a new process: only the store is left
    items = await after_restart.undo_turn(1)
    assert [item.restored for item in items] == [True, True, True]
    assert (folder / "data.csv").read_text() == "a,b\n1,2\n"
    assert (tmp_path / "store").stat().st_mode & 0o777 == 0o700
    # and it goes on from the store's newest manifest
    await after_restart.capture(2, "start")
    (folder / "keep.txt").write_text("turn 2\n")
    await after_restart.capture(2, "end")
    assert [i.subject for i in await after_restart.undo_turn(2)] == ["keep.txt"]


async def test_an_unchanged_file_is_not_read_again(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in folder.iterdir():
        os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # long before the capture: not "racy"
    files = checkpoints(tmp_path, folder)
    await files.capture(1, "start")
    opened: list[str] = []
    real_open = os.open

    def counting(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    await files.capture(1, "end")
    assert not [p for p in opened if str(folder) in p]


async def test_skipped_folders_notebooks_and_links(tmp_path: Path, folder: Path) -> None:
    for name in (".git", "node_modules", "__pycache__", ".ipynb_checkpoints", ".venv", "venv"):
        (folder / name).mkdir()
        (folder / name / "f").write_text("x")
    (folder / "a.ipynb").write_text("{}")
    (folder / ".jupyter_ystore.db").write_bytes(b"SQLite")
    (folder / "link").symlink_to(tmp_path / "outside")
    files = checkpoints(tmp_path, folder)
    await files.capture(1, "start")
    (folder / ".jupyter_ystore.db").write_bytes(b"SQLite, and the server's updates")
    for name in (".git", "node_modules"):
        (folder / name / "f").write_text("changed")
    (folder / "a.ipynb").write_text('{"cells": []}')
    (folder / "link").unlink()
    (folder / "link").symlink_to(tmp_path / "elsewhere")
    await files.capture(1, "end")
    (item,) = await files.undo_turn(1)
    assert item.subject == "link" and item.restored
    assert os.readlink(folder / "link") == str(tmp_path / "outside")
    assert (folder / "a.ipynb").read_text() == '{"cells": []}'  # the notebook's own model undoes cells


async def test_a_store_inside_the_folder_is_not_walked(tmp_path: Path, folder: Path) -> None:
    files = FileCheckpoints(folder / ".data" / "store", [folder], exclude=[folder / ".data"])
    await files.capture(1, "start")
    (folder / "data.csv").write_text("changed\n")
    await files.capture(1, "end")
    assert [i.subject for i in await files.undo_turn(1)] == ["data.csv"]


async def test_a_second_folder_is_checkpointed_too(tmp_path: Path, folder: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    files = FileCheckpoints(tmp_path / "store", [folder, extra, folder / "src"])
    await files.capture(1, "start")
    (extra / "made.txt").write_text("x\n")
    await files.capture(1, "end")
    (item,) = await files.undo_turn(1)
    assert item.subject == str(extra / "made.txt") and item.restored
    assert not (extra / "made.txt").exists()


async def test_a_turn_that_changes_nothing_adds_no_manifest_and_no_content(
    tmp_path: Path, folder: Path
) -> None:
    files = checkpoints(tmp_path, folder)
    await files.capture(1, "start")
    await files.capture(1, "end")
    await files.capture(2, "start")
    await files.capture(2, "end")
    assert await files.undo_turn(2) == []
    store = tmp_path / "store"
    assert len(list((store / "manifests").iterdir())) == 1
    assert sorted(p.suffix for p in (store / "packs").iterdir()) == [".idx", ".pack"]  # one pack: 3 files


async def test_a_damaged_copy_is_listed_and_the_file_left_alone(tmp_path: Path, folder: Path) -> None:
    files = checkpoints(tmp_path, folder)
    await a_turn(files, folder)
    for pack in (tmp_path / "store" / "packs").glob("*.pack"):
        pack.write_bytes(b"?" * pack.stat().st_size)
    items = by_subject(await files.undo_turn(1))
    assert not items["data.csv"].restored
    assert items["data.csv"].said == "could not put it back: its copy in the checkpoint store is damaged"
    assert (folder / "data.csv").read_text() == "a,b\n99,2\n"
    assert items["src/new.py"].restored  # removing what the turn created needs no copy


def test_the_store_sits_beside_the_journal(tmp_path: Path) -> None:
    journal = tmp_path / "chat-sessions" / "abc.jsonl"
    assert checkpoint_store(journal) == tmp_path / "chat-sessions" / "abc.checkpoints"


# -- through a real session ----------------------------------------------------------------------------


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


def allow(request: silo_nb.AgentPermissionRequest) -> None:
    request.respond(next(o.option_id for o in request.options if o.kind == "allow_once"))


async def test_a_demo_agent_s_file_edit_is_checkpointed_and_undone(workspace: Workspace) -> None:
    notes = workspace.folder / "notes.md"
    notes.write_text("# Notes\n")
    svc = workspace.service()
    async with await svc.sessions.connect("demo") as handle:
        handle.on_permission(allow)
        assert (await handle.prompt(text("edit: through the client"))).stop_reason == "end_turn"
        assert "through the client" in notes.read_text()
        files = handle.file_checkpoints
        assert files is not None and handle.current_turn == 1
        journal = svc.sessions.journals.path(svc.workspace_id, handle.session_id)
        assert files.store == checkpoint_store(journal)
        assert sorted(p.name for p in files.store.glob("turn-*")) == ["turn-1-end.json", "turn-1-start.json"]
        (item,) = await files.undo_turn(1)
        assert (item.subject, item.restored) == ("notes.md", True)
        assert notes.read_text() == "# Notes\n"


async def test_a_session_resumed_after_a_restart_undoes_the_files_of_an_earlier_turn(
    workspace: Workspace,
) -> None:
    notes = workspace.folder / "notes.md"
    async with await workspace.service().sessions.connect("demo") as handle:
        handle.on_permission(allow)
        await handle.prompt(text("edit: before the restart"))
        session_id = handle.session_id
    assert notes.exists()
    svc = workspace.service()  # a new kernel: nothing in memory but the data folder
    async with await svc.sessions.connect("demo", resume={"session_id": session_id}) as resumed:
        assert resumed.current_turn == 1 and resumed.file_checkpoints is not None
        await resumed.prompt(text("hello"))
        assert resumed.current_turn == 2
        assert await resumed.file_checkpoints.undo_turn(2) == []
        (item,) = await resumed.file_checkpoints.undo_turn(1)
        assert (item.subject, item.restored, item.said) == ("notes.md", True, "removed (the turn created it)")
    assert not notes.exists()


async def test_deleting_the_journal_deletes_the_checkpoints(workspace: Workspace) -> None:
    async with await workspace.service().sessions.connect("demo") as handle:
        assert (await handle.prompt(text("hello"))).stop_reason == "end_turn"
        assert handle.file_checkpoints is not None
        store = handle.file_checkpoints.store
        assert store.is_dir() and store.stat().st_mode & 0o777 == 0o700
        await handle.delete(journal=True)
    assert not store.exists()


async def test_checkpoint_files_off_takes_none(workspace: Workspace) -> None:
    workspace.add_profiles(demo_agent("demo-nocp", checkpoint_files=False))
    async with await workspace.service().sessions.connect("demo-nocp") as handle:
        assert (await handle.prompt(text("hello"))).stop_reason == "end_turn"
        assert handle.file_checkpoints is None
