"""pandas is an optional extra: one place imports it and says what to do when it is missing."""

from __future__ import annotations

from typing import Any

__all__ = ["MISSING_PANDAS", "require_pandas"]

MISSING_PANDAS = (
    "silo_nb.frame and run_grid need pandas, which is not installed — "
    'run `pip install "silo-nb[frame]"` (or `pip install pandas`) and try again.'
)


def require_pandas() -> Any:
    """The ``pandas`` module, or ``ImportError`` with an install hint."""
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(MISSING_PANDAS) from exc
    return pandas
