"""Text the kernel tools send the agent: capped reprs, Markdown tables, sizes — never unbounded.

- :func:`capped_repr` goes through ``reprlib`` (containers show their first items, recursion shows as
  ``[...]``, long strings are sliced *before* they are repr'd, so a 100 MB string costs nothing), then cuts
  the result; a ``__repr__`` that raises gives one line naming the exception.
- :func:`markdown_table` escapes ``|`` and newlines and cuts each cell, so any value makes a valid table.
"""

from __future__ import annotations

import reprlib
from collections.abc import Sequence
from typing import Any

from silo_nb.kernel_tools.static_view import class_names

__all__ = ["capped_repr", "cut", "human_bytes", "markdown_table", "type_name"]

_CELL_CHARS = 60


def cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, with a note of how many more there were."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit:,} more characters]"


class _Repr(reprlib.Repr):
    def __init__(self, limit: int) -> None:
        super().__init__()
        self.maxstring = min(limit, 400)
        self.maxother = limit
        self.maxlong = 100
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = 20
        self.maxdict = 20
        self.maxlevel = 4

    def repr_instance(self, x: Any, level: int) -> str:
        try:
            return cut(repr(x), self.maxother)
        except Exception as exc:
            return f"<{type_name(x)}: its __repr__ raised {type(exc).__name__}: {cut(str(exc), 200)}>"


def capped_repr(value: Any, limit: int) -> str:
    """``repr(value)`` as ``reprlib`` bounds it, then cut at ``limit`` characters; never raises."""
    try:
        return cut(_Repr(limit).repr(value), limit)
    except Exception as exc:
        return f"<{type_name(value)}: its repr raised {type(exc).__name__}: {cut(str(exc), 200)}>"


def type_name(value: Any) -> str:
    """``DataFrame (pandas)``-style: the class name, with its top package when it is not a builtin."""
    module, name = class_names(type(value))  # no metaclass's code: list_variables runs none
    package = module.split(".")[0]
    return name if package in ("builtins", "") else f"{name} ({package})"


def human_bytes(size: int | None) -> str:
    if size is None or size < 0:
        return "?"
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else capped_repr(value, _CELL_CHARS)
    return cut(text, _CELL_CHARS).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def markdown_table(headers: Sequence[Any], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-style Markdown table of ``rows`` under ``headers`` (every cell bounded and escaped)."""
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
