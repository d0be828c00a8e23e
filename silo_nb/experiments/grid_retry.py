"""The grid's side of retries and the cache: what ``run_grid`` calls around each cell's attempts.

``retries.py`` says which errors are retried and where earlier attempts are kept; ``grid_cache.py``
what makes two cells the same. Here: the attempt a (resumed) cell starts at, the pause before a retry,
and the look-up and indexing of cached cells — file work done in a worker thread, off the kernel's loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from silo_nb.experiments.budgets import GridSpend
from silo_nb.experiments.grid_cache import CellCache, agent_identity, cell_key, template_hash
from silo_nb.experiments.grid_cell import CellSpec
from silo_nb.experiments.retries import (
    attempt_number,
    backoff_seconds,
    next_retries,
    record_class,
    retry_wanted,
    set_attempt_aside,
)
from silo_nb.experiments.run_folder import RunFolder

__all__ = ["CacheKeys", "CellRetries", "remember_cached", "reuse_cached"]


@dataclass
class CellRetries:
    """``retry=`` (error class → extra attempts) and the rate-limit backoff's base seconds."""

    retry: dict[str, int] = field(default_factory=dict)
    backoff: float = 2.0

    def resume(self, run: RunFolder, cell: str) -> tuple[int, dict[str, int]]:
        """The number and retry counts of the cell's next attempt: after its record's when that is a
        failure still to retry, else 1 (or the record's own, overwritten by ``retry_failed=True``)."""
        previous = run.record(cell)
        if previous is None:
            return 1, {}
        if retry_wanted(previous, self.retry):
            return attempt_number(previous) + 1, next_retries(previous)
        return attempt_number(previous), dict(previous.get("retries") or {})

    @staticmethod
    def starting(run: RunFolder, cell: str, number: int) -> None:
        """Attempt ``number`` starts now: the cell's earlier attempt is set aside (only now — a retry the
        grid's budget keeps back leaves that attempt the cell's final one)."""
        previous = run.record(cell)
        if previous is not None and attempt_number(previous) < number:
            set_attempt_aside(run, cell, attempt_number(previous))

    async def again(self, record: Mapping[str, Any], spend: GridSpend) -> bool:
        """Whether the attempt just saved runs again (a rate-limited one after its pause, waited outside
        the concurrency limit). Not once the grid's budget is spent."""
        if not retry_wanted(record, self.retry) or spend.reached() is not None:
            return False
        if record_class(record) == "rate_limited":
            await anyio.sleep(backoff_seconds(self.backoff, next_retries(record)))
        return True


@dataclass
class CacheKeys:
    """What the cache key needs once per run: the template's hash and each agent's identity."""

    template: str | None
    config_dirs: tuple[str, ...] | None
    agents: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    @classmethod
    async def start(cls, template: str | None, config_dirs: tuple[str, ...] | None) -> CacheKeys:
        return cls(await anyio.to_thread.run_sync(template_hash, template), config_dirs)

    def key(self, spec: CellSpec, cell: Mapping[str, Any]) -> str:
        which = (spec.profile, str(cell.get("agent_spec") or ""))
        if which not in self.agents:
            self.agents[which] = agent_identity(spec.profile, cell, self.config_dirs)
        return cell_key(spec, self.agents[which], self.template)


async def reuse_cached(run: RunFolder, spec: CellSpec, key: str) -> bool:
    """Copy the cell another run finished under ``key`` into ``run``; False when there is none."""

    def copy() -> bool:
        cache = CellCache()
        found = cache.find(key)
        if found is None:
            return False
        source, cell = found
        fields = {"profile": spec.profile, "config": spec.config, "prompts": list(spec.prompts), "attempt": 1}
        cache.copy_into(
            run, spec.cell, source, cell, template=spec.template, cache_key=key, retries={}, **fields
        )
        return True

    return await anyio.to_thread.run_sync(copy)


async def remember_cached(run: RunFolder, cell: str, key: str) -> None:
    await anyio.to_thread.run_sync(CellCache().remember, key, run, cell)
