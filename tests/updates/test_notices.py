"""ACP v1.25 notices (issue 31): advertised, read from the wire, a banner in the turn coloured by severity,
journaled and restored as shown live; one without its title is nothing."""

from __future__ import annotations

from typing import Any

import pytest

from silo_nb.acp.client import client_capabilities
from silo_nb.notebook.render import transcript_html, transcript_markdown, transcript_text
from silo_nb.sessions.journal import encode_line, parse_lines
from silo_nb.updates import NoticeEntry
from silo_nb.updates.parse import parse_update
from silo_nb.updates.transcript import fold_all


def notice(**fields: Any) -> Any:
    update = parse_update({"sessionUpdate": "notice", **fields})
    assert update is not None
    return update


def test_the_client_advertises_notices() -> None:
    assert client_capabilities()["session"]["notices"] == {}


SEVERITIES = [("info", "33,150,243"), ("warning", "255,152,0"), ("error", "244,67,54"), ("_x", "127,127,127")]


@pytest.mark.parametrize(("severity", "colour"), SEVERITIES)
def test_a_notice_is_a_banner_coloured_by_severity(severity: str, colour: str) -> None:
    state = fold_all([notice(severity=severity, title="Rate limit near", description="80% of the hour used")])
    (entry,) = state.entries
    assert entry == NoticeEntry(severity, "Rate limit near", "80% of the hour used")
    html = transcript_html(state)
    assert f'data-severity="{severity}"' in html and colour in html and "Rate limit near" in html
    assert "**Rate limit near** — 80% of the hour used" in transcript_markdown(state)
    assert f"notice [{severity}]> Rate limit near — 80% of the hour used" in transcript_text(state)


def test_a_notice_without_a_title_shows_nothing_and_a_long_one_is_cut() -> None:
    assert fold_all([notice(severity="info"), notice(title="  ")]).entries == ()
    (entry,) = fold_all([notice(title="x" * 10_000, description=None)]).entries
    assert isinstance(entry, NoticeEntry) and len(entry.title) == 2_000 and entry.description is None


def test_restored_from_the_journal_as_it_was_live() -> None:
    live = [notice(severity="warning", title="Context 90% full")]
    restored = parse_lines([encode_line(update) for update in live])
    assert transcript_html(fold_all(restored)) == transcript_html(fold_all(live))


def test_a_one_megabyte_notice_is_one_bounded_line() -> None:
    huge = "w" * 1_000_000
    state = fold_all([notice(severity="error", title=huge, description=huge)])
    (entry,) = state.entries
    assert (
        isinstance(entry, NoticeEntry) and len(entry.title) == 2_000 and len(entry.description or "") == 2_000
    )
    assert len(transcript_html(state)) < 10_000
