"""The agent's changes to an open notebook, made on its shared model (a ``jupyter_ydoc`` ``YNotebook``: the
document every browser tab of it shows, saved by the server).

- Cells are named by their nbformat ``id``; an id that is not in the notebook is one line the agent can
  read (:class:`CellOpError`), never a guess at an index.
- ``edit`` replaces ``old`` by ``new`` inside one cell: ``old`` must be found exactly once (none, or
  several, is an error that says which). The source is changed in place (``YNotebook.set_cell(index,
  source=...)``: granular text changes), so a collaborator's cursor in another cell stays where it is.
- A change proposed on a cell's source (``expect``: what the user was shown) is refused if the cell
  changed meanwhile — the person typing in it wins, and the agent reads it again.
- Every change is one transaction of the document and answers what the cell was and is (``before`` /
  ``after``), which the kernel journals and shows as the change's diff.
- Bounds: a source over :data:`MAX_SOURCE_CHARS`, outputs over :data:`MAX_OUTPUTS_BYTES`, or a notebook
  already at :data:`MAX_CELLS` cells are refused, whole.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = [
    "CELL_TYPES",
    "MAX_CELLS",
    "MAX_OUTPUTS_BYTES",
    "MAX_SOURCE_CHARS",
    "CellOpError",
    "Change",
    "apply",
]

CELL_TYPES = ("code", "markdown", "raw")
MAX_SOURCE_CHARS = 200_000
MAX_OUTPUTS_BYTES = 8_000_000
MAX_CELLS = 5_000
OUTPUT_TEXT_CHARS = 2_000  # per cell, in read_notebook


class CellOpError(ValueError):
    """A change that cannot be made, in one line for the agent; nothing was changed."""


class SharedNotebook(Protocol):
    """What is used of ``jupyter_ydoc.YNotebook``."""

    @property
    def ycells(self) -> Any: ...

    @property
    def ydoc(self) -> Any: ...

    def get_cell(self, index: int) -> dict[str, Any]: ...

    def create_ycell(self, value: dict[str, Any]) -> Any: ...

    def set_cell(
        self, index: int, value: dict[str, Any] | None = None, *, source: str | None = None
    ) -> None: ...


Change = dict[str, Any]  # {"cellId", "index", "before", "after", ...}: what the answer carries


def _source(cell: Mapping[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _index_of(nb: SharedNotebook, cell_id: Any) -> int:
    if not isinstance(cell_id, str) or not cell_id:
        raise CellOpError("cell_id must be a cell's id, as read_notebook lists them.")
    for index in range(len(nb.ycells)):
        if nb.ycells[index].get("id") == cell_id:
            return index
    raise CellOpError(f"No cell has the id {cell_id!r} in this notebook (read_notebook lists the ids).")


def _unchanged(nb: SharedNotebook, index: int, request: Mapping[str, Any]) -> str:
    """The cell's source, if it is still what the change was proposed on (``expect``): a person typing in
    it meanwhile wins, and the agent is told to read it again."""
    source = _source(nb.get_cell(index))
    expect = request.get("expect")
    if isinstance(expect, str) and source != expect:
        raise CellOpError(
            f"Cell {request.get('cell_id')} changed while the change waited (someone is editing it): "
            "read it again; nothing was changed."
        )
    return source


def _text(value: Any, name: str, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise CellOpError(f"{name} must be a string.")
    if not empty and not value:
        raise CellOpError(f"{name} must not be empty.")
    if len(value) > MAX_SOURCE_CHARS:
        raise CellOpError(f"{name} is {len(value):,} characters; a cell takes at most {MAX_SOURCE_CHARS:,}.")
    return value


def _outputs_text(outputs: Sequence[Any]) -> str:
    parts: list[str] = []
    for output in outputs:
        if not isinstance(output, Mapping):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(_source({"source": output.get("text", "")}))
        elif kind == "error":
            parts.append(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}")
        elif kind in ("execute_result", "display_data"):
            data = output.get("data") or {}
            if "text/plain" in data:
                parts.append(_source({"source": data["text/plain"]}))
            kinds = [mime for mime in data if mime != "text/plain"]
            if kinds:
                parts.append(f"[{', '.join(kinds)}]")
    text = "\n".join(parts)
    return text if len(text) <= OUTPUT_TEXT_CHARS else text[:OUTPUT_TEXT_CHARS] + " …(cut)"


def read(nb: SharedNotebook) -> list[dict[str, Any]]:
    """Every cell: id, type, source, its outputs as text, execution count."""
    cells = []
    for index in range(len(nb.ycells)):
        cell = nb.get_cell(index)
        cells.append(
            {
                "id": cell.get("id", ""),
                "cell_type": cell.get("cell_type", "code"),
                "source": _source(cell),
                "outputs": _outputs_text(cell.get("outputs") or []),
                "execution_count": cell.get("execution_count"),
            }
        )
    return cells


def _insert(nb: SharedNotebook, request: Mapping[str, Any]) -> Change:
    source = _text(request.get("source"), "source")
    cell_type = request.get("cell_type") or "code"
    if cell_type not in CELL_TYPES:
        raise CellOpError(f"cell_type must be one of {', '.join(CELL_TYPES)}, not {cell_type!r}.")
    if len(nb.ycells) >= MAX_CELLS:
        raise CellOpError(f"The notebook has {MAX_CELLS:,} cells already: no cell was added.")
    after, at = request.get("after"), request.get("index")
    if type(at) is int:  # an undone delete: back where it was
        index = max(0, min(at, len(nb.ycells)))
    else:
        index = len(nb.ycells) if after is None else _index_of(nb, after) + 1
    given = request.get("cell_id")  # an undone delete keeps its id, unless another cell took it
    taken = {nb.ycells[i].get("id") for i in range(len(nb.ycells))}
    cell: dict[str, Any] = {
        "id": given if isinstance(given, str) and given and given not in taken else uuid.uuid4().hex[:8],
        "cell_type": cell_type,
        "source": source,
        "metadata": {},
    }
    if cell_type == "code":
        cell |= {"outputs": [], "execution_count": None}
    with nb.ydoc.transaction():
        nb.ycells.insert(index, nb.create_ycell(cell))
    return {"cellId": cell["id"], "index": index, "before": None, "after": source, "cellType": cell_type}


def _edit(nb: SharedNotebook, request: Mapping[str, Any]) -> Change:
    index = _index_of(nb, request.get("cell_id"))
    old = _text(request.get("old"), "old", empty=False)
    new = _text(request.get("new"), "new")
    before = _unchanged(nb, index, request)
    found = before.count(old)
    if found != 1:
        where = "is not in" if not found else f"is {found} times in"
        raise CellOpError(
            f"The text to replace {where} cell {request.get('cell_id')}: give old text found once."
        )
    after = before.replace(old, new, 1)
    if len(after) > MAX_SOURCE_CHARS:
        raise CellOpError(f"The cell would be {len(after):,} characters; a cell takes {MAX_SOURCE_CHARS:,}.")
    with nb.ydoc.transaction():
        nb.set_cell(index, source=after)
    return {"cellId": request.get("cell_id"), "index": index, "before": before, "after": after}


def _replace(nb: SharedNotebook, request: Mapping[str, Any]) -> Change:
    index = _index_of(nb, request.get("cell_id"))
    after = _text(request.get("source"), "source")
    before = _unchanged(nb, index, request)
    with nb.ydoc.transaction():
        nb.set_cell(index, source=after)
    return {"cellId": request.get("cell_id"), "index": index, "before": before, "after": after}


def _delete(nb: SharedNotebook, request: Mapping[str, Any]) -> Change:
    index = _index_of(nb, request.get("cell_id"))
    _unchanged(nb, index, request)
    cell = nb.get_cell(index)
    with nb.ydoc.transaction():
        del nb.ycells[index]
    return {
        "cellId": request.get("cell_id"),
        "index": index,
        "before": _source(cell),
        "after": None,
        "cell": cell,
    }


def _move(nb: SharedNotebook, request: Mapping[str, Any]) -> Change:
    index = _index_of(nb, request.get("cell_id"))
    after, at = request.get("after"), request.get("index")
    if after == request.get("cell_id"):
        raise CellOpError("A cell cannot be moved after itself.")
    cell = nb.get_cell(index)
    with nb.ydoc.transaction():
        del nb.ycells[index]
        if type(at) is int:  # an undone move: back where it was
            target = max(0, min(at, len(nb.ycells)))
        else:
            target = 0 if after is None else _index_of(nb, after) + 1
        nb.ycells.insert(target, nb.create_ycell(cell))
    source = _source(cell)
    return {
        "cellId": request.get("cell_id"),
        "index": target,
        "from": index,
        "before": source,
        "after": source,
    }


def _set_outputs(nb: SharedNotebook, request: Mapping[str, Any]) -> Change:
    index = _index_of(nb, request.get("cell_id"))
    outputs = request.get("outputs")
    if not isinstance(outputs, list) or not all(isinstance(o, dict) for o in outputs):
        raise CellOpError("outputs must be a list of nbformat outputs.")
    if len(json.dumps(outputs)) > MAX_OUTPUTS_BYTES:
        raise CellOpError(f"The outputs are over {MAX_OUTPUTS_BYTES:,} bytes: none were written.")
    count = request.get("execution_count")
    cell = nb.get_cell(index)
    if cell.get("cell_type") != "code":
        raise CellOpError(f"Cell {request.get('cell_id')} is not a code cell: it has no outputs.")
    from pycrdt import Map, Text

    youtputs = []
    for given in outputs:
        output = dict(given)
        if output.get("output_type") == "stream":
            output["text"] = Text(_source({"source": output.get("text", "")}))
        youtputs.append(Map(output))
    ycell = nb.ycells[index]
    with nb.ydoc.transaction():  # in place: a collaborator's cursor in this cell stays
        ycell["outputs"].clear()
        ycell["outputs"].extend(youtputs)
        ycell["execution_count"] = count
    source = _source(cell)
    return {"cellId": request.get("cell_id"), "index": index, "before": source, "after": source}


_OPS = {
    "insert": _insert,
    "edit": _edit,
    "replace": _replace,
    "delete": _delete,
    "move": _move,
    "set_outputs": _set_outputs,
}


def apply(nb: SharedNotebook, request: Mapping[str, Any]) -> dict[str, Any]:
    """Carry out one request (``op`` and its fields) on ``nb``: ``{"cells": [...]}`` for ``read``, else the
    :data:`Change`. :class:`CellOpError` for anything that cannot be done (nothing changed)."""
    op = request.get("op")
    if op == "read":
        return {"cells": read(nb)}
    handler = _OPS.get(str(op))
    if handler is None:
        raise CellOpError(f"Unknown operation {op!r}: the operations are read, {', '.join(_OPS)}.")
    return handler(nb, request)
