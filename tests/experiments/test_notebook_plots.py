"""The plots of notebooks 02 and 05, drawn by their own cells' code on tables like theirs (issue 22): a
turn-count axis has whole-number ticks, and the boxplot's configuration labels do not overlap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt

NOTEBOOKS = Path(__file__).parents[2] / "notebooks"


def cell_code(notebook: str, contains: str) -> str:
    cells = json.loads((NOTEBOOKS / notebook).read_text(encoding="utf-8"))["cells"]
    (source,) = [
        "".join(c["source"]) for c in cells if c["cell_type"] == "code" and contains in "".join(c["source"])
    ]
    return source.replace("plt.show()", "")


def drawn(code: str, **namespace: Any) -> list[Any]:
    plt.close("all")
    exec(compile(code, "<cell>", "exec"), namespace)  # the notebook's own code
    figure = plt.gcf()
    figure.canvas.draw()
    return figure.axes


def test_notebook_02_tokens_by_turn_has_whole_turn_ticks() -> None:
    turns = pd.DataFrame({"turn": [1, 2, 3], "duration_s": [0.5, 1.2, 0.8], "tokens_used": [900, 1800, 2600]})
    _, right = drawn(cell_code("02-data-science.ipynb", 'y="tokens_used"'), turns=turns)
    ticks = [t for t in right.get_xticks() if right.get_xlim()[0] <= t <= right.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks


def _variants_frame() -> pd.DataFrame:
    rows = [
        {"variant": variant, "stop_reason": stop, "duration_s": 0.3 + i / 10, "tokens_used": 1000 + i}
        for i, (variant, stop) in enumerate(
            [("mode=ask, model=demo-fast", "end_turn"), ("mode=code, model=demo-smart", "refusal")] * 9
        )
    ]
    return pd.DataFrame(rows)


def test_notebook_05_counts_have_whole_ticks_and_the_boxplot_labels_are_apart() -> None:
    df = _variants_frame()
    (bars,) = drawn(cell_code("05-experiments.ipynb", 'stop_reason"]).size()'), df=df, plt=plt)
    assert all(float(t).is_integer() for t in bars.get_yticks())
    left, right = drawn(cell_code("05-experiments.ipynb", "boxplot"), df=df, plt=plt)
    figure = left.figure
    renderer = figure.canvas.get_renderer()
    for axes in (left, right):
        boxes = [t.get_window_extent(renderer) for t in axes.get_xticklabels() if t.get_text()]
        assert len(boxes) == 2 and not boxes[0].overlaps(boxes[1])
        assert all(
            figure.bbox.x0 <= b.x0 and b.x1 <= figure.bbox.x1 and figure.bbox.y0 <= b.y0 for b in boxes
        )
