"""The demo agent's edit of notes.md, on real files: what it proposes, what it writes, what it refuses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from silo_nb_agents.demo.notes import MAX_BYTES, apply_edit, note_line, plan_edit
from tests.demo_agent.helpers import answer_with, bounded, running_agent, updates


def test_note_line_takes_the_text_after_the_first_colon() -> None:
    assert note_line("Edit notes.md: two  bill\nlengths: missing") == "- two bill lengths: missing\n"
    assert note_line("edit the notes") == "- edit the notes\n"
    assert note_line("edit:   ") == "- edit:\n"
    assert note_line("x" * 300) == "- " + "x" * 99 + "…\n"


def test_a_missing_file_is_created_only_when_the_edit_is_applied(tmp_path: Path) -> None:
    edit = plan_edit(str(tmp_path), "edit: first note")
    assert (edit.old_text, edit.new_text, edit.problem) == (None, "# Notes\n\n- first note\n", None)
    assert not (tmp_path / "notes.md").exists()  # planning writes nothing
    assert apply_edit(edit) is None
    assert (tmp_path / "notes.md").read_text(encoding="utf-8") == "# Notes\n\n- first note\n"
    assert apply_edit(edit) == "notes.md changed since it was read, so nothing was written; ask again"


def test_an_edit_appends_and_never_overwrites_a_file_changed_meanwhile(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Mine\n", encoding="utf-8")
    os.chmod(notes, 0o600)
    edit = plan_edit(str(tmp_path), "edit: second")
    notes.write_text("# Mine\nchanged by hand\n", encoding="utf-8")
    assert apply_edit(edit) is not None
    assert notes.read_text(encoding="utf-8") == "# Mine\nchanged by hand\n"
    edit = plan_edit(str(tmp_path), "edit: second")
    assert apply_edit(edit) is None
    assert notes.read_text(encoding="utf-8") == "# Mine\nchanged by hand\n- second\n"
    assert notes.stat().st_mode & 0o777 == 0o600  # the same file, appended to, keeps its mode


@pytest.mark.parametrize("kind", ["symlink", "folder", "big", "binary"])
def test_files_it_will_not_edit(tmp_path: Path, kind: str) -> None:
    notes = tmp_path / "notes.md"
    target = tmp_path / "elsewhere.md"
    target.write_text("keep\n", encoding="utf-8")
    if kind == "symlink":
        notes.symlink_to(target)
    elif kind == "folder":
        notes.mkdir()
    elif kind == "big":
        notes.write_text("x" * (MAX_BYTES + 1), encoding="utf-8")
    else:
        notes.write_bytes(b"\xff\xfe not text")
    edit = plan_edit(str(tmp_path), "edit: nope")
    assert edit.problem is not None and edit.problem.startswith("notes.md is ")
    assert target.read_text(encoding="utf-8") == "keep\n"


@pytest.mark.asyncio
@bounded
async def test_a_refused_file_fails_the_read_and_asks_no_permission(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.md").symlink_to("/etc/hostname")
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session(str(project))
        seen, response = await wire.prompt(session_id, "edit please", answer_with("allow-once"))
    assert response["result"]["stopReason"] == "end_turn"
    assert not [m for m in seen if m.get("method") == "session/request_permission"]
    read_end = [u for u in updates(seen) if u.get("status") == "failed"]
    assert read_end and "symbolic link" in read_end[0]["content"][0]["content"]["text"]
    texts = [u["content"]["text"] for u in updates(seen) if u["sessionUpdate"] == "agent_message_chunk"]
    assert texts[-1].startswith("I could not edit notes.md: notes.md is a symbolic link")


@pytest.mark.asyncio
@bounded
async def test_a_write_that_fails_is_reported_and_the_tool_call_fails(tmp_path: Path) -> None:
    async with running_agent(tmp_path) as wire:
        await wire.initialize()
        session_id, _ = await wire.new_session(str(tmp_path / "gone"))  # a folder that does not exist
        seen, _ = await wire.prompt(session_id, "edit please", answer_with("allow-once"))
    texts = [u["content"]["text"] for u in updates(seen) if u["sessionUpdate"] == "agent_message_chunk"]
    assert texts[-1] == "Left notes.md unchanged: cannot write notes.md: No such file or directory."
    last_call = [u for u in updates(seen) if u["sessionUpdate"] == "tool_call_update"][-1]
    assert last_call["status"] == "failed" and "No such file" in last_call["content"][0]["content"]["text"]
