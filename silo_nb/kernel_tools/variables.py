"""``list_variables`` and ``inspect_variable``: what the agent may see of the user's namespace, bounded.

- ``list_variables`` runs none of the user's code (``static_view.py`` says how): shapes come from pandas,
  polars and NumPy objects only (exactly those classes), lengths from builtin containers only (as the
  builtin counts), sizes from ``nbytes`` / ``memory_usage(deep=False)`` / ``estimated_size()`` or a C
  ``__sizeof__`` (shallow: a list's own size, not its items'; ``?`` when the only one is the user's). The
  first :data:`~.limits.MAX_VARIABLES` by name, with the count of all.
- ``inspect_variable`` knows frames and series (pandas, polars: shape, dtypes, the head as Markdown,
  ``describe()`` of at most :data:`~.limits.DESCRIBE_SAMPLE_ROWS` rows, null counts), NumPy arrays (shape,
  dtype, min/max/mean) and anything else (its type and a capped ``repr``). It does call the user's code
  (a ``__repr__``), so the caller bounds it in time (``guard.py``). An unknown name lists close matches.
- No library is imported here: an object is recognised by its class, as its module holds it, so a kernel
  without pandas never loads it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from silo_nb.kernel_tools.limits import (
    DESCRIBE_SAMPLE_ROWS,
    MAX_COLUMNS,
    MAX_ROWS,
    MAX_VARIABLES,
    OUTPUT_CHARS,
    REPR_CHARS,
)
from silo_nb.kernel_tools.namespace import KernelNamespace
from silo_nb.kernel_tools.report_text import capped_repr, cut, human_bytes, markdown_table, type_name
from silo_nb.kernel_tools.static_view import builtin_length, library_family, shallow_size

__all__ = ["ToolInputError", "inspect_variable", "list_variables"]


class ToolInputError(ValueError):
    """The agent asked for something that is not there or not allowed: one line saying what to do."""


def _shape(value: Any, family: str) -> str:
    if family in ("numpy", "pandas-dataframe", "pandas-series", "polars-dataframe", "polars-series"):
        return " × ".join(f"{int(n):,}" for n in value.shape)
    if family == "polars-lazyframe":
        return "lazy"
    length = builtin_length(value)
    return f"len {length:,}" if length is not None else ""


def _memory(value: Any, family: str) -> int | None:
    try:
        if family == "numpy":
            return int(value.nbytes)
        if family == "pandas-dataframe":
            return int(value.memory_usage(index=True, deep=False).sum())
        if family == "pandas-series":
            return int(value.memory_usage(index=True, deep=False))
        if family in ("polars-dataframe", "polars-series"):
            return int(value.estimated_size())
        return shallow_size(value)
    except Exception:
        return None


def list_variables(ns: KernelNamespace) -> str:
    """The user's variables as a Markdown table: name, type, shape or length, approximate memory."""
    found = sorted(ns.variables(), key=lambda item: item[0])
    rows = []
    for name, value in found[:MAX_VARIABLES]:
        family = library_family(value)
        try:
            shape = _shape(value, family)
        except Exception:
            shape = "?"
        rows.append((name, type_name(value), shape, human_bytes(_memory(value, family))))
    if not found:
        return "No user variables yet (modules, functions, classes and _-names are not listed)."
    shown = f"the first {MAX_VARIABLES} by name" if len(found) > MAX_VARIABLES else "sorted by name"
    head = f"{len(found):,} user variables ({shown}; memory is approximate and shallow):\n\n"
    return cut(head + markdown_table(("name", "type", "shape / length", "memory"), rows), OUTPUT_CHARS)


def _close_matches(ns: KernelNamespace, name: str) -> str:
    names = [n for n, _ in ns.variables()]
    matches = difflib.get_close_matches(name, names, n=5, cutoff=0.5)
    if matches:
        return "Did you mean: " + ", ".join(matches) + "?"
    return "list_variables shows the names there are."


def inspect_variable(ns: KernelNamespace, name: Any, rows: Any = 10) -> str:
    """What ``name`` holds (see the module docstring); ``ToolInputError`` for a bad name or ``rows``."""
    if not isinstance(name, str) or not name.strip():
        raise ToolInputError("inspect_variable needs the name of a variable (list_variables lists them).")
    name = name.strip()
    if type(rows) is not int or not 0 <= rows <= MAX_ROWS:
        raise ToolInputError(f"rows must be a whole number from 0 to {MAX_ROWS} (got {rows!r}).")
    if name not in ns.user_ns:
        raise ToolInputError(f"No variable named {name!r} in the notebook. {_close_matches(ns, name)}")
    value = ns.user_ns[name]
    family = library_family(value)
    head = f"**{name}**: {type_name(value)}"
    if family.endswith("dataframe") and family != "polars-lazyframe":
        body = _frame(value, family, rows)
    elif family.endswith("series"):
        body = _series(value, family, rows)
    elif family == "numpy":
        body = _array(value)
    else:
        shape = _shape(value, family)
        body = (f"{shape}\n\n" if shape else "") + "```\n" + capped_repr(value, REPR_CHARS) + "\n```"
    return cut(f"{head}\n\n{body}", OUTPUT_CHARS)


def _frame(df: Any, family: str, rows: int) -> str:
    n_rows, n_cols = (int(n) for n in df.shape)
    columns = list(df.columns)[:MAX_COLUMNS]
    more = f" (the first {MAX_COLUMNS} of {n_cols:,} columns below)" if n_cols > MAX_COLUMNS else ""
    parts = [f"shape: {n_rows:,} rows × {n_cols:,} columns{more}"]
    if family == "pandas-dataframe":
        dtypes = {str(c): str(t) for c, t in zip(columns, df.dtypes.iloc[:MAX_COLUMNS], strict=False)}
        view = df.iloc[:, :MAX_COLUMNS]
        head_rows = [
            (str(i), *r) for i, r in zip(view.index[:rows], view.head(rows).itertuples(False), strict=False)
        ]
        head_cols = ["", *map(str, columns)]
        describe = _described(
            lambda: view.head(DESCRIBE_SAMPLE_ROWS).describe(),
            lambda s: markdown_table(
                ["", *map(str, s.columns)],
                [(str(i), *r) for i, r in zip(s.index, s.itertuples(False), strict=True)],
            ),
        )
        nulls = {str(c): int(v) for c, v in view.isna().sum().items()}
    else:
        dtypes = {str(c): str(t) for c, t in list(df.schema.items())[:MAX_COLUMNS]}
        view = df.select(columns)
        head_cols, head_rows = list(map(str, columns)), view.head(rows).rows()
        describe = _described(
            lambda: view.head(DESCRIBE_SAMPLE_ROWS).describe(),
            lambda s: markdown_table(list(map(str, s.columns)), s.rows()),
        )
        nulls = {str(c): int(v) for c, v in zip(columns, view.null_count().row(0), strict=False)}
    parts.append("dtypes:\n" + "\n".join(f"- {c}: {t}" for c, t in dtypes.items()))
    if rows:
        parts.append(f"head ({min(rows, n_rows)} rows):\n\n" + markdown_table(head_cols, head_rows))
    sampled = f" of the first {DESCRIBE_SAMPLE_ROWS:,} rows" if n_rows > DESCRIBE_SAMPLE_ROWS else ""
    parts.append(f"describe(){sampled}:\n\n{describe}")
    parts.append("null counts: " + ", ".join(f"{c}: {n:,}" for c, n in nulls.items()))
    return "\n\n".join(parts)


def _series(series: Any, family: str, rows: int) -> str:
    length = len(series)
    dtype = str(series.dtype)
    if family == "pandas-series":
        head = [(str(i), v) for i, v in series.head(rows).items()]
        described = _described(
            lambda: series.head(DESCRIBE_SAMPLE_ROWS).describe(),
            lambda s: markdown_table(("statistic", "value"), [(str(i), v) for i, v in s.items()]),
        )
        nulls = int(series.isna().sum())
    else:
        head = [(str(i), v) for i, v in enumerate(series.head(rows).to_list())]
        described = _described(
            lambda: series.head(DESCRIBE_SAMPLE_ROWS).describe(),
            lambda s: markdown_table(("statistic", "value"), s.rows()),
        )
        nulls = int(series.null_count())
    parts = [f"length: {length:,}; dtype: {dtype}; name: {capped_repr(series.name, 80)}"]
    if rows:
        parts.append(f"head ({min(rows, length)} rows):\n\n" + markdown_table(("", "value"), head))
    parts.append("describe():\n\n" + described)
    parts.append(f"nulls: {nulls:,}")
    return "\n\n".join(parts)


def _described(compute: Callable[[], Any], table: Callable[[Any], str]) -> str:
    """``describe()`` as a table, or one line saying why there is none (no columns, a dtype it refuses)."""
    try:
        return table(compute())
    except Exception as exc:
        return f"(not available: {type(exc).__name__}: {cut(str(exc), 200)})"


def _array(array: Any) -> str:
    parts = [f"shape: {' × '.join(f'{int(n):,}' for n in array.shape)}; dtype: {array.dtype}"]
    if array.size and array.dtype.kind in "biuf":
        parts.append(f"min: {array.min()}; max: {array.max()}; mean: {array.mean()}")
    parts.append("```\n" + capped_repr(array, REPR_CHARS) + "\n```")
    return "\n\n".join(parts)
