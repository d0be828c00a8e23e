"""Matplotlib figures as PNGs for the agent and for the transcript — only if the user's code uses matplotlib.

- Nothing imports matplotlib unless pyplot is loaded already (:func:`pyplot`) or ``run_code``'s code looks
  like it plots (:func:`may_plot`: then pyplot is loaded first, so the figures it makes can be found).
- :func:`no_show` keeps ``plt.show()`` from displaying (and, inline, closing) figures while ``run_code``
  runs: they come back to the agent as images and into the tool's card instead of the ``%%prompt`` cell.
- Each figure is one PNG for the agent (at most :data:`~.limits.FIGURE_BYTES`: rendered at a lower
  resolution when larger) and a smaller one for the transcript (at most
  :data:`~.limits.JOURNAL_FIGURE_PIXELS` wide), journaled so a restored turn shows the same plot.
"""

from __future__ import annotations

import base64
import contextlib
import io
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from silo_nb.kernel_tools.limits import FIGURE_BYTES, JOURNAL_FIGURE_PIXELS

__all__ = ["Rendered", "may_plot", "no_show", "pyplot", "render"]

_PLOTS = re.compile(r"matplotlib|\bplt\.|\.plot\b|\.hist\(|seaborn|\bsns\.")


def pyplot() -> Any:
    """``matplotlib.pyplot`` if the kernel loaded it already, else None (it is never loaded here)."""
    return sys.modules.get("matplotlib.pyplot")


def may_plot(code: str) -> Any:
    """pyplot, loaded first when ``code`` looks like it plots and matplotlib is installed (else None)."""
    loaded = pyplot()
    if loaded is not None or not _PLOTS.search(code):
        return loaded
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


@contextlib.contextmanager
def no_show(plt: Any) -> Iterator[None]:
    """``plt.show`` does nothing in the body (the figures stay open to be rendered)."""
    if plt is None:
        yield
        return
    shown = plt.show
    plt.show = lambda *args, **kwargs: None
    try:
        yield
    finally:
        plt.show = shown


@dataclass(frozen=True)
class Rendered:
    """One figure: its PNG for the agent, a smaller base64 PNG for the transcript, its size in pixels."""

    png: bytes
    preview: str
    width: int
    height: int


def _png(figure: Any, dpi: float) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def render(figure: Any) -> Rendered:
    """``figure`` as PNGs (see the module docstring)."""
    dpi = float(figure.get_dpi() or 100)
    png = _png(figure, dpi)
    while len(png) > FIGURE_BYTES and dpi > 20:
        dpi /= 2
        png = _png(figure, dpi)
    inches_wide, inches_high = (float(n) for n in figure.get_size_inches())
    small_dpi = min(dpi, JOURNAL_FIGURE_PIXELS / max(inches_wide, 0.1))
    preview = png if small_dpi >= dpi else _png(figure, small_dpi)
    return Rendered(
        png=png,
        preview=base64.b64encode(preview).decode("ascii"),
        width=round(inches_wide * dpi),
        height=round(inches_high * dpi),
    )
