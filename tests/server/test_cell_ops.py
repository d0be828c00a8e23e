"""The changes on a notebook's shared model (``silo_nb/server/cell_ops.py``), on a real ``YNotebook``."""

from __future__ import annotations

from typing import Any

import pytest
from jupyter_ydoc import YNotebook

from silo_nb.server import MAX_SOURCE_CHARS, CellOpError
from silo_nb.server.cell_ops import apply


def notebook(*sources: str) -> YNotebook:
    nb = YNotebook()
    nb.set(
        {
            "cells": [
                {
                    "id": f"c{i}",
                    "cell_type": "code",
                    "source": s,
                    "metadata": {},
                    "outputs": [],
                    "execution_count": None,
                }
                for i, s in enumerate(sources)
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    return nb


def sources(nb: YNotebook) -> list[str]:
    return [cell["source"] for cell in nb.get()["cells"]]


def ids(nb: YNotebook) -> list[str]:
    return [cell["id"] for cell in nb.get()["cells"]]


def test_read_lists_ids_types_sources_and_outputs_as_text() -> None:
    nb = notebook("x = 1", "x")
    apply(nb, {"op": "set_outputs", "cell_id": "c1", "execution_count": 2, "outputs": [
        {"output_type": "execute_result", "execution_count": 2, "data": {"text/plain": "1"}, "metadata": {}},
        {"output_type": "stream", "name": "stdout", "text": "hi\n"},
    ]})  # fmt: skip
    cells = apply(nb, {"op": "read"})["cells"]
    assert [c["id"] for c in cells] == ["c0", "c1"]
    assert cells[1] == {
        "id": "c1",
        "cell_type": "code",
        "source": "x",
        "outputs": "1\nhi\n",
        "execution_count": 2,
    }


def test_insert_goes_after_the_named_cell_or_at_the_end_and_names_the_new_id() -> None:
    nb = notebook("a", "b")
    first = apply(nb, {"op": "insert", "source": "new", "after": "c0"})
    assert sources(nb) == ["a", "new", "b"] and ids(nb)[1] == first["cellId"]
    apply(nb, {"op": "insert", "source": "# Title", "cell_type": "markdown"})
    assert sources(nb)[-1] == "# Title" and nb.get()["cells"][-1]["cell_type"] == "markdown"


def test_edit_replaces_text_found_exactly_once_in_place() -> None:
    nb = notebook("df.plot()\nprint(df)")
    change = apply(nb, {"op": "edit", "cell_id": "c0", "old": "plot()", "new": "plot(kind='bar')"})
    assert sources(nb) == ["df.plot(kind='bar')\nprint(df)"]
    assert change["before"] == "df.plot()\nprint(df)" and change["after"] == sources(nb)[0]


@pytest.mark.parametrize(
    ("request_", "says"),
    [
        ({"op": "edit", "cell_id": "c0", "old": "nope", "new": "x"}, "is not in cell c0"),
        ({"op": "edit", "cell_id": "c0", "old": "df", "new": "x"}, "is 2 times in cell c0"),
        ({"op": "edit", "cell_id": "zz", "old": "df", "new": "x"}, "No cell has the id 'zz'"),
        ({"op": "replace", "cell_id": "c0", "source": 5}, "source must be a string"),
        ({"op": "insert", "source": "x" * (MAX_SOURCE_CHARS + 1)}, "at most"),
        ({"op": "insert", "source": "x", "cell_type": "sql"}, "cell_type must be one of"),
        ({"op": "move", "cell_id": "c0", "after": "c0"}, "after itself"),
        ({"op": "explode"}, "Unknown operation"),
        ({"op": "set_outputs", "cell_id": "c0", "outputs": "x"}, "outputs must be a list"),
    ],
)
def test_a_bad_request_is_one_line_and_changes_nothing(request_: dict[str, Any], says: str) -> None:
    nb = notebook("df.plot()\nprint(df)")
    before = nb.get()
    with pytest.raises(CellOpError, match=says) as raised:
        apply(nb, request_)
    assert "\n" not in str(raised.value)
    assert nb.get() == before


def test_replace_delete_and_move() -> None:
    nb = notebook("a", "b", "c")
    apply(nb, {"op": "replace", "cell_id": "c1", "source": "B"})
    assert sources(nb) == ["a", "B", "c"]
    apply(nb, {"op": "move", "cell_id": "c0", "after": "c2"})
    assert ids(nb) == ["c1", "c2", "c0"]
    apply(nb, {"op": "move", "cell_id": "c0"})  # no ``after``: to the top
    assert ids(nb) == ["c0", "c1", "c2"]
    gone = apply(nb, {"op": "delete", "cell_id": "c1"})
    assert ids(nb) == ["c0", "c2"] and gone["before"] == "B" and gone["after"] is None


def test_outputs_are_written_in_place_with_the_execution_count() -> None:
    nb = notebook("print(1)")
    array_changes: list[Any] = []
    nb.ycells.observe(array_changes.append)  # a cell replaced would be a delete and an insert here
    apply(nb, {"op": "set_outputs", "cell_id": "c0", "execution_count": 7,
               "outputs": [{"output_type": "stream", "name": "stdout", "text": "1\n"}]})  # fmt: skip
    cell = nb.get()["cells"][0]
    assert cell["execution_count"] == 7 and cell["outputs"][0]["text"] == "1\n"
    assert array_changes == []  # the same shared cell, changed in place: nobody's cursor in it moved
