"""The one place for colours, fonts, spacing and inline-style snippets of everything silo_nb draws.

- Inline styles only: a transcript must look the same in an ipywidgets ``HTML`` widget, a static output
  area, nbconvert and on GitHub, and the last two drop ``<style>``/``<script>``. So every element carries
  its own ``style=""`` built from the constants here.
- Colours are RGB triples used through :func:`rgba` with transparency, and text keeps ``color:inherit``:
  a tinted background over JupyterLab's light or dark theme reads in both. Syntax colours are mid-tones
  that keep enough contrast on white and on a dark grey.
- Sizes are explicit (headings get size *and* weight) because the two hosts style bare tags differently
  (JupyterLab's rendered-HTML CSS applies to output areas, not to widgets).
- Text colours (faint, warning, error) use JupyterLab's theme variables with a mid-tone fallback.
- Widgets and magics use the same names (``FAINT_TEXT``, ``WARNING_TEXT``, ``ERROR_TEXT``, ``SMALL``);
  ``tests/notebook/test_styles.py`` fails on a colour literal in any other module.
"""

from __future__ import annotations

__all__ = [
    "ACTIVITY_COLOURS",
    "AMBER",
    "BLUE",
    "BOX",
    "CODE_IN_PRE",
    "CODE_PRE",
    "ERROR_TEXT",
    "FAINT_TEXT",
    "GREEN",
    "GREY",
    "HEADER_ROW",
    "MD_STYLES",
    "MONO",
    "MUTED",
    "RED",
    "SMALL",
    "TOKEN_STYLES",
    "WARNING_TEXT",
    "pill_style",
    "rgba",
]

# -- colours (RGB triples; use them through rgba()) ---------------------------------------------------

GREEN = "46,160,67"
BLUE = "33,150,243"
AMBER = "255,152,0"
RED = "244,67,54"
GREY = "127,127,127"

ACTIVITY_COLOURS = {
    "idle": GREEN,
    "working": BLUE,
    "blocked": AMBER,
    "error": RED,
    "dead": GREY,
    "none": GREY,
}


def rgba(rgb: str, alpha: float) -> str:
    return f"rgba({rgb},{alpha:g})".replace(",0.", ",.")  # short: these repeat in every element


# -- text -------------------------------------------------------------------------------------------

MUTED = "opacity:.7"
SMALL = "font-size:.85em"
# A box as wide as the output area, whatever its content: a wider table scrolls inside it (a visible
# scrollbar) instead of widening the cell past the window (width:0 keeps the content out of the sizing).
SCROLL_BOX = "overflow-x:auto;width:0;min-width:100%;max-width:100%"
MONO = "font-family:var(--jp-code-font-family,monospace);font-size:.85em"
# Text colours come from JupyterLab's theme variables (dark grey/orange/red on the light theme, light on
# the dark one); the fallback, for hosts without them (nbconvert, GitHub), is a mid-tone that reads on both.
FAINT_TEXT = f"color:var(--jp-content-font-color2,{rgba(GREY, 1)})"  # secondary text in widgets
ERROR_TEXT = f"color:var(--jp-error-color1,rgb({RED}))"  # error lines: "✗ …", "⚠ …"
WARNING_TEXT = "color:var(--jp-warn-color0,rgb(230,126,0))"  # "needs attention"

# -- boxes ------------------------------------------------------------------------------------------

# The transcript's outer box. Font and line height are set, not inherited, because an ipywidgets HTML
# widget uses the widget font size and a 28px line height, an output area the content font.
BOX = (
    "box-sizing:border-box;width:100%;color:inherit;"
    "font-family:var(--jp-content-font-family,system-ui,sans-serif);"
    "font-size:var(--jp-content-font-size1,14px);line-height:1.45;overflow-wrap:break-word;"
    f"padding:6px 10px;border:1px solid {rgba(GREY, 0.25)};border-radius:6px"
)
# The header row (agent label, turn status): as tall as an ipywidgets row with a button.
HEADER_ROW = (
    "display:flex;align-items:center;justify-content:space-between;gap:.6em;"
    "min-height:var(--jp-widgets-inline-height,28px);margin-bottom:4px"
)
# The <code> inside a <pre>: the output area's stylesheet gives inline code a background that would
# otherwise paint every line of a block (seen in JupyterLab's static outputs).
CODE_IN_PRE = "background:transparent;padding:0;border:0;font-size:inherit"
CODE_PRE = (
    f"background:{rgba(GREY, 0.12)};padding:6px 8px;border-radius:4px;overflow-x:auto;margin:.4em 0;"
    "tab-size:4;white-space:pre;line-height:1.4;font-family:var(--jp-code-font-family,monospace);"
    "font-size:.85em;color:inherit"
)


def pill_style(rgb: str, *, background: float = 0.22, line_height: float = 1.5) -> str:
    return (
        f"display:inline-block;padding:0 .55em;border-radius:.8em;font-size:.85em;line-height:{line_height};"
        f"white-space:nowrap;color:inherit;background:{rgba(rgb, background)};"
        f"border:1px solid {rgba(rgb, 0.45)}"
    )


# -- agent Markdown (tag -> style) --------------------------------------------------------------------

_BORDER = f"1px solid {rgba(GREY, 0.35)}"
_HEADING = "font-weight:600;line-height:1.3;"
MD_STYLES = {
    "p": "margin:.4em 0",
    "h1": _HEADING + "font-size:1.4em;margin:.6em 0 .3em",
    "h2": _HEADING + "font-size:1.25em;margin:.6em 0 .3em",
    "h3": _HEADING + "font-size:1.12em;margin:.5em 0 .3em",
    "h4": _HEADING + "font-size:1em;margin:.5em 0 .2em",
    "h5": _HEADING + "font-size:.95em;margin:.5em 0 .2em",
    "h6": _HEADING + "font-size:.9em;margin:.5em 0 .2em;opacity:.8",
    "pre": CODE_PRE,
    "code": f"background:{rgba(GREY, 0.15)};padding:0 .25em;border-radius:3px;{MONO}",
    "blockquote": f"margin:.4em 0;padding:0 0 0 .8em;border-left:3px solid {rgba(GREY, 0.45)};opacity:.9",
    "table": "border-collapse:collapse;margin:.4em 0",
    "th": f"border:{_BORDER};padding:2px 6px;background:{rgba(GREY, 0.1)};font-weight:600",
    "td": f"border:{_BORDER};padding:2px 6px",
    "hr": f"border:none;border-top:1px solid {rgba(GREY, 0.4)};margin:.6em 0",
    "ul": "margin:.3em 0;padding-left:1.6em",
    "ol": "margin:.3em 0;padding-left:1.6em",
    "a": "color:var(--jp-content-link-color,rgb(33,130,220));text-decoration:underline",
}

# -- syntax highlighting (Pygments token type name -> style) -----------------------------------------
# Looked up from the most specific type up ("Name.Function.Magic" -> "Name.Function" -> "Name").

TOKEN_STYLES = {
    "Comment": "opacity:.6;font-style:italic",
    "Comment.Preproc": "color:rgb(200,90,200)",
    "Keyword": "color:rgb(190,80,210)",
    "Keyword.Constant": "color:rgb(220,120,30)",
    "Keyword.Type": "color:rgb(20,160,170)",
    "Operator.Word": "color:rgb(190,80,210)",
    "Name.Builtin": "color:rgb(20,160,170)",
    "Name.Function": "color:rgb(40,130,230)",
    "Name.Class": "color:rgb(220,120,30);font-weight:600",
    "Name.Decorator": "color:rgb(220,120,30)",
    "Name.Exception": "color:rgb(230,80,80)",
    "Name.Tag": "color:rgb(230,80,80)",
    "Name.Attribute": "color:rgb(220,120,30)",
    "Name.Variable.Magic": "color:rgb(20,160,170)",
    "Name.Builtin.Pseudo": "color:rgb(220,120,30)",
    "Literal.String": "color:rgb(40,160,80)",
    "Literal.String.Escape": "color:rgb(220,120,30)",
    "Literal.String.Interpol": "color:rgb(220,120,30)",
    "Literal.Number": "color:rgb(220,120,30)",
    "Generic.Heading": "font-weight:600",
    "Generic.Subheading": "font-weight:600;opacity:.8",
    "Generic.Deleted": f"color:rgb({RED})",
    "Generic.Inserted": f"color:rgb({GREEN})",
    "Generic.Emph": "font-style:italic",
    "Generic.Strong": "font-weight:600",
    "Generic.Error": f"color:rgb({RED})",
    "Error": f"color:rgb({RED})",
}
