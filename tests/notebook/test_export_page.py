"""``%silo export``: a self-contained page styled like the notebook view, every turn marked with its
outcome (finished, cancelled, failed), as HTML and as Markdown (``render/page.py``, ``magics/export.py``)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import anyio
import pytest
from IPython.core.interactiveshell import InteractiveShell
from markdown_it import MarkdownIt

from silo_nb.model.models import AgentContentBlock, AgentSessionUpdate
from silo_nb.notebook.magics import session_of
from silo_nb.notebook.render import styles
from silo_nb.notebook.render.page import PAGE_CSS, export_turns, page_html, page_markdown
from silo_nb.updates.parse import parse_update
from silo_nb.updates.transcript import fold_all
from tests.support.shell import run, shell  # noqa: F401  (a fixture)

HOSTILE = "<script>alert(1)</script> *title* [x](javascript:1)"


def prompt(text: str, n: int) -> AgentSessionUpdate:
    return AgentSessionUpdate(
        kind="user_message_chunk",
        text=text,
        content=AgentContentBlock(type="text", text=text),
        message_id=f"silo-journal-user-{n}",
        raw={"synthesized": True},
    )


def reply(text: str, message_id: str) -> AgentSessionUpdate:
    update = parse_update(
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": message_id,
            "content": {"type": "text", "text": text},
        }
    )
    assert update is not None
    return update


def turn_end(**raw: Any) -> AgentSessionUpdate:
    return AgentSessionUpdate(kind="turn_end", raw={"synthesized": True, "durationMs": 2500.0, **raw})


JOURNAL = [
    reply("Welcome banner", "banner"),
    prompt("first question", 1),
    reply("first answer", "a1"),
    turn_end(outcome="finished", stopReason="end_turn", error=None),
    prompt("second question", 2),
    reply("partial answ", "a2"),
    turn_end(outcome="cancelled", stopReason="cancelled", error="interrupted by the caller (CancelledError)"),
    prompt("third question", 3),
    turn_end(outcome="failed", stopReason=None, error="The prompt turn failed: agent exploded"),
    prompt("fourth, from an older journal", 4),
    reply("no turn_end line after this one", "a4"),
]


class Sections(HTMLParser):
    """The page's ``<section id=…>`` elements and the text inside each."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, str] = {}
        self.current: str | None = None
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "section":
            self.current = dict(attrs)["id"]
            self.sections[self.current or ""] = ""
        self.scripts += tag == "script"

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self.current = None

    def handle_data(self, data: str) -> None:
        if self.current is not None:
            self.sections[self.current] += data


def turn_outcome(turn: list[AgentSessionUpdate]) -> tuple[str, str | None, str | None] | None:
    """(status, stop reason, error) as the reducer reads a turn; None while it knows no outcome."""
    state = fold_all(turn)
    return None if state.status == "running" else (state.status, state.stop_reason, state.error)


def test_outcomes_from_the_turn_end_line_with_or_without_outcome() -> None:
    assert turn_outcome([prompt("q", 1)]) is None
    assert turn_outcome([turn_end(outcome="cancelled", stopReason="cancelled")]) == (
        "cancelled",
        "cancelled",
        None,
    )
    assert turn_outcome([turn_end(stopReason="cancelled")]) == ("cancelled", "cancelled", None)  # older lines
    assert turn_outcome([turn_end(stopReason=None, error="boom")]) == ("failed", None, "boom")
    assert turn_outcome([turn_end(stopReason="max_tokens")]) == ("finished", "max_tokens", None)
    statuses = [(t.number, t.state.status) for t in export_turns(JOURNAL)]
    assert statuses == [(None, "restored"), (1, "finished"), (2, "cancelled"), (3, "failed"), (4, "restored")]


def test_the_html_page_is_standalone_styled_and_marks_every_outcome() -> None:
    page = page_html(JOURNAL, title=HOSTILE, meta="Silo demo agent · session s-1")
    assert page.startswith("<!doctype html>") and '<meta charset="utf-8">' in page
    assert f"<style>{PAGE_CSS}</style>" in page and "color-scheme:light dark" in page
    assert styles.BOX in page and styles.HEADER_ROW in page  # the notebook view's own styles
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)  # nothing fetched from elsewhere
    parsed = Sections()
    parsed.feed(page)
    assert parsed.scripts == 0 and "<script>alert" not in page and "&lt;script&gt;" in page
    sections = parsed.sections
    assert list(sections) == ["turn-0", "turn-1", "turn-2", "turn-3", "turn-4"]
    assert "✓ finished" in sections["turn-1"] and "first answer" in sections["turn-1"]
    assert "■ cancelled" in sections["turn-2"] and "interrupted by the caller" in sections["turn-2"]
    assert "stop: cancelled" not in sections["turn-2"]  # the pill says it already
    assert "✗ failed" in sections["turn-3"] and "agent exploded" in sections["turn-3"]
    assert "↺ restored" in sections["turn-4"]
    assert "took 2 s" in sections["turn-1"]
    heading = page[page.index("<h1>") : page.index('<ol class="silo-toc">')]
    assert "4 turns" in heading and "■ cancelled ×1" in heading and "✗ failed ×1" in heading
    assert page.count('href="#turn-') == 5


def test_the_markdown_page_marks_outcomes_and_stays_inert() -> None:
    text = page_markdown(JOURNAL, title=HOSTILE, meta="demo · session s-1")
    assert text.startswith("# \\<script\\>alert\\(1\\)")
    assert "**Turn 2** · _■ cancelled_" in text and "**Turn 3** · _✗ failed_" in text
    assert "**Turn 1** · _✓ finished_" in text and "agent exploded" in text
    tokens = MarkdownIt("commonmark", {"html": True}).parse(text)
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in t.children or []}
    assert not kinds & {"html_block", "html_inline", "link_open"}, kinds


async def test_export_magic_writes_both_pages_of_a_real_session(
    shell: InteractiveShell,  # noqa: F811
    tmp_path: Path,
) -> None:
    await run(shell, "%silo connect demo")
    await run(shell, "%%prompt\nhello there")
    handle = shell.user_ns["demo"]
    await run(shell, "%%prompt\nplease fail")  # the demo agent answers with an error: a failed turn
    await run(shell, "%%prompt --bg\ngo slow please")
    service = session_of(shell).service
    with anyio.fail_after(20):
        while service.get_state()[0].activity != "working":
            await anyio.sleep(0.02)
    await anyio.sleep(0.2)
    await run(shell, "%silo cancel demo")
    await run(shell, "import silo_nb\nawait silo_nb.wait()")
    captured, result = await run(shell, f"%silo export demo {tmp_path / 'chat.html'}")
    assert result.success, captured.stderr
    page = (tmp_path / "chat.html").read_text()
    parsed = Sections()
    parsed.feed(page)
    assert "✓ finished" in parsed.sections["turn-1"] and "hello there" in parsed.sections["turn-1"]
    assert "✗ failed" in parsed.sections["turn-2"] and "the demo agent was asked to fail" in page
    assert "■ cancelled" in parsed.sections["turn-3"] and "Counting slowly" in parsed.sections["turn-3"]
    # After a disconnect, the session id still exports (a dormant session).
    await run(shell, "%silo disconnect demo")
    captured, result = await run(shell, f"%silo export {handle.session_id} {tmp_path / 'chat.md'}")
    assert result.success, captured.stderr
    assert "_■ cancelled_" in (tmp_path / "chat.md").read_text()


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("%silo export demo chat.txt", "must end in .html or .md"),
        ("%silo export nosuch chat.md", "no connection or session named 'nosuch'"),
    ],
)
async def test_export_errors_are_one_line(shell: InteractiveShell, line: str, said: str) -> None:  # noqa: F811
    await run(shell, "%silo connect demo")
    captured, result = await run(shell, line)
    message = captured.stderr + captured.stdout
    assert not result.success and said in message and "Traceback" not in message


def test_an_export_is_private_and_never_written_through_a_link(tmp_path: Path) -> None:
    """Issue 21: ``%silo export`` wrote 0644 (the transcript readable by every local user). A new file is
    0600; a file already there keeps the mode its owner gave it; a link at the path is replaced."""
    import os
    import stat

    from silo_nb.notebook.magics.export import write_export

    new = tmp_path / "new.html"
    old = os.umask(0)
    try:
        write_export(new, "<p>secret</p>")
    finally:
        os.umask(old)
    assert stat.S_IMODE(new.stat().st_mode) == 0o600
    shared = tmp_path / "shared.md"
    shared.write_text("old")
    os.chmod(shared, 0o644)
    write_export(shared, "new")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o644 and shared.read_text() == "new"
    target = tmp_path / "target.txt"
    target.write_text("keep")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    write_export(link, "page")
    assert target.read_text() == "keep" and not link.is_symlink() and link.read_text() == "page"
