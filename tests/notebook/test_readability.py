"""Issue 22, readability: what a newcomer misread or could not read in JupyterLab.

- ``%silo frame``'s table: one line per cell (no three-line cells), long text cut with "…" and the whole
  value as a tooltip, numbers right-aligned, sideways scrolling instead of clipping.
- The attachment icon: an inline SVG (the "⎘" glyph was a missing-glyph box in Chromium).
- A diff's context line whose text starts with "- " (a Markdown bullet) is not a deletion.
- A Reject decision has a red bar (a saved notebook showed it green), Allow a green one.
- ``%silo agents`` titles: cut with "…", the whole title in a tooltip, never clipped by a fixed width.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

import silo_nb
from silo_nb.model.models import AgentInfo
from silo_nb.notebook.render import styles
from silo_nb.notebook.render.cards.permission import permission_html, permission_text
from silo_nb.notebook.render.diff_view import diff_html, diff_text
from silo_nb.notebook.render.frame_table import CELL_CHARS, frame_bundle
from silo_nb.notebook.render.labels import ATTACHMENT_ICON_HTML, LIST_TITLE_CHARS, short_title
from silo_nb.notebook.widgets.agents_list import AgentsList
from silo_nb.notebook.widgets.snapshot_views import agents_snapshot
from silo_nb.sessions.dormant_sessions import DormantSession
from silo_nb.updates.entries import PermissionEntry

LONG_PROMPT = "Summarise this table, then plan an analysis of price against units per region"


def test_the_frame_table_keeps_each_cell_on_one_line_and_cuts_long_text_with_a_tooltip() -> None:
    table = pd.DataFrame(
        {
            "prompt": [LONG_PROMPT, "hi\nthere"],
            "stop_reason": ["end_turn", "cancelled"],
            "duration_s": [1.23456, 12.0],
            "tokens_used": [5440, 12000],
            "cost": [0.08163, None],
        }
    )
    bundle = frame_bundle(table)
    html = bundle["text/html"]
    assert 'style="overflow-x:auto' in html  # scrolls sideways in its own box, not clipped
    cells = re.findall(r'<td style="([^"]*)"( title="[^"]*")?>([^<]*)</td>', html)
    assert len(cells) == 10 and all("white-space:nowrap" in style for style, _, _ in cells)
    prompt_style, tip, shown = cells[0]
    assert shown == LONG_PROMPT[: CELL_CHARS - 1] + "…" and len(shown) == CELL_CHARS
    assert tip == f' title="{LONG_PROMPT}"'
    assert cells[5][2] == "hi there" and cells[5][1] == ""  # a newline does not make a second line
    assert [shown for _, _, shown in cells[2:5]] == ["1.23", "5,440", "0.0816"]
    assert all("text-align:right" in style for style, _, _ in cells[2:5])
    assert "text-align:left" in prompt_style and cells[9][2] == ""  # a missing cost is blank, not "nan"
    assert "…" in bundle["text/plain"] and LONG_PROMPT not in bundle["text/plain"]


def test_the_attachment_icon_is_an_svg_not_a_glyph_fonts_lack() -> None:
    assert ATTACHMENT_ICON_HTML.startswith("<svg") and "⎘" not in ATTACHMENT_ICON_HTML
    assert 'aria-label="attached"' in ATTACHMENT_ICON_HTML


def test_a_context_line_that_starts_with_a_dash_is_not_a_deletion() -> None:
    old = "# Notes\n\n- 344 penguins measured\n"
    new = "# Notes\n\n- 344 penguins measured\n- two bill lengths are missing\n"
    html = diff_html("notes.md", old, new)
    rows = re.findall(
        r'<div class="silo-diff-line" style="([^"]*)"><span class="silo-diff-gutter" style="[^"]*">'
        r"([^<]*)</span>([^<]*)</div>",
        html,
    )
    by_text = {text: (style, marker) for style, marker, text in rows}
    context_style, context_marker = by_text["- 344 penguins measured"]
    assert context_marker == "" and "background" not in context_style  # no marker, no red
    added_style, added_marker = by_text["- two bill lengths are missing"]
    assert added_marker == "+" and styles.rgba(styles.GREEN, 0.18) in added_style
    assert not any(marker == "−" for _, marker, _ in rows)  # nothing was deleted
    # The text diff stays a unified diff: the context line keeps its leading space.
    assert " - 344 penguins measured" in diff_text("notes.md", old, new)


def test_a_deleted_line_has_the_minus_in_the_gutter() -> None:
    html = diff_html("notes.md", "keep\n- gone\n", "keep\n")
    (row,) = re.findall(r'<div class="silo-diff-line" style="([^"]*)">.*?>([^<]*)</span>([^<]*)</div>', html)[
        1:
    ]
    assert row[1] == "−" and row[2] == "- gone" and styles.rgba(styles.RED, 0.18) in row[0]


OPTIONS = (("allow-once", "Allow once", "allow_once"), ("reject-once", "Reject", "reject_once"))


def _bar(html: str) -> str:
    found = re.search(r"border-left:3px solid (rgba\([^)]*\))", html)
    assert found is not None
    return found.group(1)


def test_a_reject_decision_has_a_red_bar_and_an_allow_a_green_one() -> None:
    rejected = PermissionEntry("call-1", "Edit notes.md", OPTIONS, choice="reject-once", answered=True)
    allowed = PermissionEntry("call-1", "Edit notes.md", OPTIONS, choice="allow-once", answered=True)
    assert _bar(permission_html(rejected)) == styles.rgba(styles.RED, 0.7)
    assert _bar(permission_html(allowed)) == styles.rgba(styles.GREEN, 0.7)
    assert permission_text(rejected) == ["permission> Edit notes.md → Reject"]


TITLE = "Investigate why the nightly penguin measurement import drops the last two rows of bill lengths"


def test_a_long_title_is_cut_with_an_ellipsis_and_kept_whole_in_a_tooltip() -> None:
    shown = short_title(TITLE)
    assert len(shown) <= LIST_TITLE_CHARS and shown.endswith("…") and TITLE.startswith(shown[:-1])
    assert short_title("short title") == "short title"
    info = AgentInfo(id="a1", workspace_id="w", title=TITLE, agent_name="Silo demo agent")
    dormant = DormantSession(session_id="s2", title=TITLE, profile_id="demo", agent_name="Silo demo agent")
    html, text = agents_snapshot([info], [dormant])
    assert html.count(f'<b title="{TITLE}">{shown}</b>') == 2
    assert text.splitlines()[1].startswith(shown + " · ")


def test_the_agents_list_titles_are_as_wide_as_their_text(tmp_path: Path) -> None:
    """ipywidgets' HTML widget is 300px wide by default: the title was clipped there, with no "…"."""
    service = silo_nb.AgentsService(workspace_dir=tmp_path, config_dirs=[], data_dir=tmp_path / "data")
    service.board.register(
        AgentInfo(id="a1", workspace_id=service.workspace_id, title=TITLE, agent_name="Silo demo agent")
    )
    dormant = DormantSession(session_id="s2", title=TITLE, profile_id="demo", agent_name="Silo demo agent")
    view = AgentsList(service, dormant=[dormant])
    try:
        titles = [view.rows["a1"].title, view.dormant_rows["s2"].box.children[0]]
        for widget in titles:
            assert widget.layout.width == "auto"
            assert f'title="{TITLE}"' in widget.value and short_title(TITLE) in widget.value
        assert f'<b title="{TITLE}">' in view._repr_mimebundle_()["text/html"]
    finally:
        view.close_all()


def test_no_saved_notebook_shows_a_reject_with_a_green_bar() -> None:
    """The saved outputs are what a reader sees first (03 showed its Reject green, from older code)."""
    found = []
    for notebook in sorted((Path(__file__).parents[2] / "notebooks").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            for output in cell.get("outputs", []):
                html = output.get("data", {}).get("text/html", "")
                html = "".join(html) if isinstance(html, list) else html
                for card in re.findall(r'<div class="silo-permission".*?</div>', html):
                    found.append((notebook.name, card))
    rejected = [(name, card) for name, card in found if "<b>Reject</b>" in card]
    assert rejected, "the notebooks show a rejected permission"
    for name, card in rejected:
        assert _bar(card) == styles.rgba(styles.RED, 0.7), name
