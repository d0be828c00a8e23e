"""Cheap fingerprints of kernel variables (issue 32, step 1): what an answer was based on, to tell later
whether it changed (a "stale" answer).

- A DataFrame or Series: its type, shape, column names and dtypes, and a hash of a sample of its rows —
  the first, the last and evenly spaced ones between (at most :data:`SAMPLE_ROWS`), index included: each
  column's numbers as their bytes, its objects (strings…) by their ``repr``. An array: shape, dtype and a
  hash of a strided sample of its elements. Anything else: its type, its length when it has one, and a
  hash of its ``repr`` cut at :data:`REPR_CHARS` (a ``repr`` that raises: its type and ``id``).
- Cost is bounded by the sample, not by the value: a 1e6-row DataFrame is hashed through 256 rows. A
  change outside the sample of a large frame's unchanged shape can go unnoticed — a fingerprint says
  "changed" for sure, "unchanged" as far as sampled.
- :func:`changed_names` compares two fingerprint maps: the names whose fingerprint differs or that are
  gone.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from typing import Any

__all__ = ["REPR_CHARS", "SAMPLE_ROWS", "changed_names", "fingerprint"]

SAMPLE_ROWS = 256  # rows (or array elements) hashed: ~0.3 ms for a frame with a string column
REPR_CHARS = 10_000


def fingerprint(value: Any) -> str:
    """A short text that changes when ``value`` does (see the module docstring); never raises."""
    try:
        module = type(value).__module__
        if module.startswith("pandas") and hasattr(value, "shape") and hasattr(value, "iloc"):
            return _frame(value)
        if module.startswith("numpy") and hasattr(value, "shape") and hasattr(value, "dtype"):
            return _array(value)
        return _other(value)
    except Exception:
        return f"{type(value).__qualname__}@{id(value):x}"


def changed_names(before: Mapping[str, str], now: Mapping[str, str | None]) -> list[str]:
    """The names of ``before`` whose fingerprint in ``now`` differs, or that ``now`` lacks (None: gone)."""
    return [name for name, mark in before.items() if now.get(name) != mark]


def _digest(*parts: bytes) -> str:
    hasher = hashlib.blake2b(digest_size=12)
    for part in parts:
        hasher.update(part)
    return hasher.hexdigest()


@functools.lru_cache(maxsize=64)
def _rows(count: int) -> tuple[int, ...]:
    """The rows sampled of ``count`` (cached: a stale check samples the same frames after every cell)."""
    if count <= SAMPLE_ROWS:
        return tuple(range(count))
    step = (count - 1) / (SAMPLE_ROWS - 1)
    return tuple(sorted({round(i * step) for i in range(SAMPLE_ROWS)} | {0, count - 1}))


def _frame(value: Any) -> str:
    sample = value.iloc[list(_rows(len(value)))]
    columns = [sample[name] for name in sample.columns] if hasattr(sample, "columns") else [sample]
    parts = [_values(sample.index.to_numpy())] + [_values(column.to_numpy()) for column in columns]
    names = repr(list(getattr(value, "columns", [getattr(value, "name", None)])))
    dtypes = repr(value.dtypes.tolist() if hasattr(value.dtypes, "tolist") else value.dtypes)
    head = f"{type(value).__qualname__}{value.shape}"
    return f"{head}:{_digest(names.encode(), dtypes.encode(), *parts)}"


def _values(array: Any) -> bytes:
    """An array's bytes: numbers and dates as they are in memory, objects (strings…) by their ``repr``."""
    if array.dtype.kind in "biufcmM":
        return bytes(array.tobytes())
    return repr(array.tolist()).encode("utf-8", "replace")


def _array(value: Any) -> str:
    import numpy as np

    flat = value.reshape(-1) if value.flags.c_contiguous else np.ravel(value)
    step = max(1, flat.size // SAMPLE_ROWS)
    data = _values(np.ascontiguousarray(flat[::step]))
    return f"ndarray{value.shape}{value.dtype}:{_digest(data, flat[-1:].tobytes() if flat.size else b'')}"


def _other(value: Any) -> str:
    try:
        size = f"[{len(value)}]"
    except Exception:
        size = ""
    text = repr(value)[:REPR_CHARS]
    return f"{type(value).__qualname__}{size}:{_digest(text.encode('utf-8', 'replace'))}"
