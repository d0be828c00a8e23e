"""Colours live in ``render/styles.py`` only: a quality test over the source files, plus the names' shape.

- Every ``silo_nb/**/*.py`` except ``render/styles.py`` is read as text and searched for colour
  literals: hex colours (``#c77700``, ``#888``) and ``rgb(``/``rgba(`` with a literal number. A colour
  built from ``styles`` (``rgb({styles.RED})``, ``styles.rgba(...)``) has no digits and passes.
- The demo agent package is exempt (it prints to a terminal, it does not render).
- Issue references such as ``ipykernel #881`` are not colours: a hex colour (3, 4, 6 or 8 digits) counts
  where CSS/HTML put one (after ``:``, ``=``, a quote) or on a line naming a colour-bearing property.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from silo_nb.notebook.render import styles

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "silo_nb"
STYLES = PACKAGE / "notebook" / "render" / "styles.py"
EXEMPT_DIRS = (PACKAGE / "demo_agent",)

_HEX = r"#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6}|[0-9a-fA-F]{3,4})\b"
# Where CSS and HTML put a colour: after ``:``/``=``/``(``/``,`` (spaces allowed) or right after a quote.
HEX_IN_PLACE = re.compile(rf"""(?:[:=(,]\s*|['"]){_HEX}""")
# Anywhere on a line that sets a colour-bearing property (``border:1px solid #ccc``).
HEX_ANYWHERE = re.compile(rf"(?:^|\s){_HEX}")
CSS_PROPERTY = re.compile(r"color|background|border|outline|fill|stroke|shadow", re.IGNORECASE)
FUNCTION_LITERAL = re.compile(r"\b(?:rgba?|hsla?)\(\s*\d")


def colour_literals(text: str) -> list[str]:
    """The lines of ``text`` holding a colour literal (a hex colour in CSS/HTML position, or ``rgb(1…``)."""
    hits = []
    for line in text.splitlines():
        css_hex = HEX_ANYWHERE.search(line) and CSS_PROPERTY.search(line)
        if HEX_IN_PLACE.search(line) or css_hex or FUNCTION_LITERAL.search(line):
            hits.append(line.strip())
    return hits


def _checked_files() -> list[Path]:
    files = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == STYLES or any(path.is_relative_to(d) for d in EXEMPT_DIRS):
            continue
        files.append(path)
    return files


def test_the_checked_files_include_the_widgets_magics_and_turns() -> None:
    names = {p.relative_to(PACKAGE).as_posix() for p in _checked_files()}
    for expected in (
        "notebook/cell_turns.py",
        "notebook/render/html.py",
        "notebook/magics/silo.py",
        "notebook/widgets/agents_list.py",
        "notebook/widgets/session_panel.py",
        "notebook/widgets/permission_row.py",
    ):
        assert expected in names
    assert "notebook/render/styles.py" not in names
    assert not any(name.startswith("demo_agent/") for name in names)


@pytest.mark.parametrize("path", _checked_files(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_colour_literal_outside_styles(path: Path) -> None:
    hits = colour_literals(path.read_text(encoding="utf-8"))
    assert not hits, f"{path.relative_to(ROOT)}: use a name from render/styles.py instead of {hits}"


@pytest.mark.parametrize(
    "line",
    [
        """return f'<span style="color:#c77700"{title}>● needs attention</span>'""",
        """'<div style="font-size:smaller;color:#888">No commands advertised.</div>'""",
        """html_text = f"<span style='color:#c0392b'>✗ {message}</span>\"""",
        """f'<div style="background:#FFF8E1;border:1px solid #ffe0b280">'""",
        """dot = '<span style="color:rgb(46,160,67)">●</span>'""",
        """border = f"1px solid rgba( 127,127,127,.3)\"""",
        """WARN_COLOR = "#c77700\"""",
        "        'border: 1px solid #ccc;'",
        """tint = "hsl(30, 100%, 45%)\"""",
    ],
)
def test_the_check_catches_the_literals_it_is_for(line: str) -> None:
    assert colour_literals(line) == [line.strip()]


@pytest.mark.parametrize(
    "line",
    [
        "- While a cell blocks, the waker ticks every 0.2 s (ipykernel #881).",
        """f'<span style="color:rgb({styles.GREEN})">+{added}</span>'""",
        """f"border-left:3px solid {styles.rgba(rgb, 0.7)}\"""",
        """f'<span style="{styles.FAINT_TEXT}">cancelled</span>'""",
        "# see issue #123 for the colour choice",
        "see pull request #4567 and #abc",
    ],
)
def test_the_check_lets_named_colours_and_issue_numbers_pass(line: str) -> None:
    assert colour_literals(line) == []


def test_styles_itself_holds_the_literals() -> None:
    # The check must be live: the one exempt module does hold colour literals.
    assert colour_literals(STYLES.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["FAINT_TEXT", "WARNING_TEXT", "ERROR_TEXT"])
def test_text_colours_follow_the_jupyterlab_theme_with_a_fallback(name: str) -> None:
    """Theme variable first (dark text on light, light on dark), then a mid-tone for nbconvert/GitHub."""
    value = getattr(styles, name)
    match = re.fullmatch(r"color:var\(--jp-[a-z0-9-]+,(rgba?\([0-9,.]+\))\)", value)
    assert match, value
    channels = [float(c) for c in match.group(1)[match.group(1).index("(") + 1 : -1].split(",")[:3]]
    luminance = (0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]) / 255
    assert 0.15 < luminance < 0.75, (name, luminance)  # neither near-black nor near-white


def test_small_is_a_relative_size() -> None:
    assert re.fullmatch(r"font-size:\.\d+em", styles.SMALL)
