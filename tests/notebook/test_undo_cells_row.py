"""The Undo row under a turn that changed cells (``widgets/undo_cells_row.py``): once, then what it did."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from silo_nb.notebook.widgets.undo_cells_row import UndoCellsRow


async def test_a_click_undoes_once_and_the_row_says_what_was_restored() -> None:
    calls: list[list[Mapping[str, Any]]] = []

    async def undo(undos: Sequence[Mapping[str, Any]]) -> list[str]:
        calls.append(list(undos))
        return ["cell c1: restored (the inserted cell removed)"]

    row = UndoCellsRow([{"op": "delete", "cell_id": "c1"}], undo=undo, name="demo")
    assert row.button.description == "Undo this turn's cell edits (1)"
    assert "%silo undo-cells demo" in row.snapshot()[1]
    row.click()
    row.click()  # a second click while the first runs: nothing more
    with anyio.fail_after(5):
        while row.done is None:
            await anyio.sleep(0.01)
    assert calls == [[{"op": "delete", "cell_id": "c1"}]]
    assert "the inserted cell removed" in row.said.value and row.button.layout.display == "none"
    assert row.snapshot()[1] == "Undone: cell c1: restored (the inserted cell removed)"
    assert await row.undo() == ["cell c1: restored (the inserted cell removed)"] and len(calls) == 1
