"""A turn says each thing once, where it happened (issue 35, item 6): the permission inside its tool call's
card where it was asked (before the call's result), one diff per edit ("written" once silo_nb wrote it as
proposed), and paths relative to the session's folder with the absolute path on hover. Built from the
journal lines a session writes, then rendered to HTML, Markdown and text, live and restored alike."""

from __future__ import annotations

import re
from typing import Any

from silo_nb.model import (
    AgentContentBlock,
    AgentSessionUpdate,
    FileWriteLine,
    PermissionDecisionLine,
    PermissionRequestLine,
)
from silo_nb.notebook.live_transcript import LiveTranscript
from silo_nb.notebook.render.html import transcript_html
from silo_nb.notebook.render.labels import header_status
from silo_nb.notebook.render.markdown import transcript_markdown
from silo_nb.notebook.render.paths import shown_path
from silo_nb.notebook.render.text import transcript_text
from silo_nb.sessions.journal import encode_line, parse_lines
from silo_nb.updates.entries import FileEditEntry, PermissionEntry, ToolEntry
from silo_nb.updates.parse import parse_update
from silo_nb.updates.transcript import fold_all

CWD = "/home/ada/project"
NOTES = f"{CWD}/notes.md"
OLD, NEW = "# Notes\n", "# Notes\n\n- bill length is missing\n"
OPTIONS = [
    {"optionId": "once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


def prompt(text: str, cwd: str | None = CWD) -> AgentSessionUpdate:
    raw: dict[str, Any] = {"synthesized": True, **({"cwd": cwd} if cwd else {})}
    return AgentSessionUpdate(
        kind="user_message_chunk",
        text=text,
        content=AgentContentBlock(type="text", text=text),
        message_id="silo-journal-user-1",
        raw=raw,
    )


def wire(kind: str, /, **fields: Any) -> AgentSessionUpdate:
    update = parse_update({"sessionUpdate": kind, **fields})
    assert update is not None
    return update


DIFF = {"type": "diff", "path": NOTES, "oldText": OLD, "newText": NEW}
RESULT = {"type": "content", "content": {"type": "text", "text": "RESULT: the file now has 3 lines"}}


def edit_turn(*, written: str = NEW, cwd: str | None = CWD, choice: str | None = "once") -> list[Any]:
    """A prompt, an edit tool call proposing a diff, its permission asked and answered, the call's result,
    and silo_nb's write of the file."""
    request = {
        "requestId": "silo-permission-1",
        "toolCallId": "c1",
        "title": "Edit notes.md",
        "options": OPTIONS,
    }
    return [
        prompt("edit the notes", cwd),
        wire("tool_call", toolCallId="c1", title="Edit notes.md", kind="edit", status="pending",
             content=[DIFF], locations=[{"path": NOTES, "line": 1}]),
        PermissionRequestLine.model_validate(request).update(),
        PermissionDecisionLine.model_validate({**request, "optionId": choice}).update(),
        wire("tool_call_update", toolCallId="c1", status="completed", content=[DIFF, RESULT]),
        FileWriteLine(path=NOTES, created=False, old_text=OLD, new_text=written).update(),
    ]  # fmt: skip


def visible_text(html: str) -> str:
    """The HTML's text with tags and their attributes (tooltips) left out."""
    return re.sub(r"<[^>]+>", "", html)


def test_the_permission_is_inside_its_card_once_and_before_the_result() -> None:
    state = fold_all(edit_turn())
    (tool,) = [e for e in state.entries if isinstance(e, ToolEntry)]
    assert not [e for e in state.entries if isinstance(e, PermissionEntry | FileEditEntry)]
    assert tool.permission is not None and tool.permission.choice == "once" and tool.permission_at == 1
    html = transcript_html(state)
    assert html.count("Permission: Edit notes.md") == 1
    card = html[html.index('class="silo-tool"') :]
    diff_at, permission_at, result_at = (
        card.index('class="silo-diff"'),
        card.index("Permission: Edit notes.md"),
        card.index("RESULT: the file now has 3 lines"),
    )
    assert diff_at < permission_at < result_at  # the proposal, then the answer, then what it did
    for text, line in (
        (transcript_markdown(state), "Permission: Edit"),
        (transcript_text(state), "permission> Edit"),
    ):
        assert text.count(line) == 1
        assert text.index("+++ notes.md") < text.index(line) < text.index("RESULT: the file now has 3 lines")


def test_one_diff_per_edit_marked_written() -> None:
    html = transcript_html(fold_all(edit_turn()))
    assert html.count('class="silo-diff"') == 1 and "silo-file-edit" not in html
    assert 'class="silo-written"' in html
    markdown = transcript_markdown(fold_all(edit_turn()))
    assert markdown.count("```diff") == 1 and "_written_" in markdown


def test_a_write_that_differs_from_the_proposal_keeps_its_own_card() -> None:
    html = transcript_html(fold_all(edit_turn(written=NEW + "- and something else\n")))
    assert html.count('class="silo-diff"') == 2 and "silo-file-edit" in html
    assert 'class="silo-written"' not in html  # what was written is not what the card proposed


def test_paths_are_relative_to_the_session_folder_with_the_absolute_one_on_hover() -> None:
    html = transcript_html(fold_all(edit_turn()))
    assert f'title="{NOTES}"' in html
    assert NOTES not in visible_text(html) and "notes.md" in visible_text(html)
    for text in (
        transcript_markdown(fold_all(edit_turn())),
        transcript_text(fold_all(edit_turn())),
    ):
        assert NOTES not in text and "+++ notes.md" in text


def test_a_journal_from_before_cwd_was_kept_shows_absolute_paths() -> None:
    state = fold_all(edit_turn(cwd=None))
    html = transcript_html(state)
    assert NOTES in visible_text(html) and f'title="{NOTES}"' not in html
    assert "Permission: Edit notes.md" in html  # the rest is as for a new journal


def test_restored_from_the_journal_equals_live() -> None:
    updates = edit_turn()
    live = LiveTranscript()
    for update in updates:
        live.apply(update)
    restored = fold_all(parse_lines(encode_line(update) for update in updates))
    assert restored == live.state
    assert transcript_html(restored) == transcript_html(live.state)


def test_a_permission_with_no_tool_card_stands_alone_and_a_second_one_too() -> None:
    alone = PermissionRequestLine.model_validate(
        {"requestId": "silo-permission-9", "toolCallId": "silo-write-1", "title": "Write .git/config"}
    ).update()
    state = fold_all([prompt("x"), alone])
    assert [type(e).__name__ for e in state.entries] == ["MessageEntry", "PermissionEntry"]
    again = PermissionRequestLine.model_validate(
        {"requestId": "silo-permission-2", "toolCallId": "c1", "title": "Edit notes.md", "options": OPTIONS}
    ).update()
    state = fold_all([*edit_turn(), again])
    assert len(state.permissions) == 2 and isinstance(state.entries[-1], PermissionEntry)
    assert state.waiting() is state.entries[-1]  # the header says the turn waits for it


def test_a_waiting_permission_in_a_card_blocks_the_turn() -> None:
    state = fold_all(edit_turn()[:3])
    assert isinstance(state.waiting(), PermissionEntry)
    assert "waiting for permission" in header_status(state)[0]


def test_shown_path() -> None:
    assert shown_path(NOTES, CWD) == "notes.md"
    assert shown_path(f"{CWD}/src/app.py", CWD + "/") == "src/app.py"
    assert shown_path("/home/ada/projects-old/x.py", CWD) == "/home/ada/projects-old/x.py"  # not inside
    assert shown_path(CWD, CWD) == "."
    assert shown_path("relative/x.py", CWD) == "relative/x.py"
    assert shown_path(NOTES, None) == NOTES
