"""Profile problems said once in a cell: held while a magic looks the profiles up, then let through
unless the magic's own error already cites them.

A broken profile is logged (``silo_nb.profiles``, once per state of the files) when the profiles are read.
``%silo connect X`` whose X was skipped says why in its ``UsageError``; the same problem as a log line on
stderr right above it would say it twice. :func:`held_profile_warnings` keeps those log records while the
magic reads the profiles; :func:`let_through` hands on the ones its error does not cite.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

__all__ = ["held_profile_warnings", "let_through"]

PROFILES_LOG = "silo_nb.profiles"


class _Hold(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.records.append(record)
        return False


@contextlib.contextmanager
def held_profile_warnings() -> Iterator[list[logging.LogRecord]]:
    """The profile log's records while the block runs, kept from its handlers."""
    logger = logging.getLogger(PROFILES_LOG)
    hold = _Hold()
    logger.addFilter(hold)
    try:
        yield hold.records
    finally:
        logger.removeFilter(hold)


def let_through(records: list[logging.LogRecord], cited: str | None = None) -> None:
    """Log the held ``records`` after all, except those whose problem ``cited`` (the error's text) holds."""
    logger = logging.getLogger(PROFILES_LOG)
    for record in records:
        problem = (
            str(record.args[0]) if isinstance(record.args, tuple) and record.args else record.getMessage()
        )
        if cited is None or problem not in cited:
            logger.handle(record)
