"""Budgets: a cell's limits (tokens, cost, seconds) and the grid's total (cost or tokens).

- :class:`CellBudget` travels in the ``CellSpec``; :class:`BudgetWatch` follows one cell where it runs.
  It reads every ``usage_update`` the session receives (``used`` tokens, ``cost.amount``) and each
  prompt's answer (ACP's ``usage.totalTokens``), keeping the highest count seen: the tokens of a cell
  are the most the agent reported (in context, or for the session), its cost the agent's running total.
- The update that passes a limit trips the watch at once (the listener runs as the update arrives), and
  the watch cancels the running turn: the agent stops at its next step, so the journal ends within one
  update of the limit. ``max_seconds`` is a clock from the first prompt; it trips the same way. A tripped
  cell sends no further prompt; its row's stop reason is ``budget`` and ``budget_exceeded`` names the
  limit. (``timeout`` is different: an agent that does not answer, a failed cell.)
- :class:`GridSpend` adds up the cells' usage for ``run_grid(budget=)``: once the total reaches the
  budget no new cell starts, and those cells are listed in the run's folder with the reason.
- A cost or token count that is NaN, infinite or negative is unknown, never a number: the watch keeps the
  last cost it knew and the spend adds nothing, and each says so (the cell's ``usage["note"]``,
  ``GridSpend.notes``, a warning). The limits are checked so that a NaN could only trip them, never pass.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from silo_nb.model import (
    AgentSessionUpdate,
)

__all__ = ["BudgetWatch", "CellBudget", "GridSpend", "check_grid_budget"]

log = logging.getLogger("silo_nb.experiments")

LIMITS = ("max_tokens", "max_cost", "max_seconds")
GRID_KEYS = ("cost", "tokens")


def _count(value: Any) -> float | None:
    """``value`` as a usage number (finite, not below 0), else None: unknown."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


@dataclass(frozen=True)
class CellBudget:
    """Per-cell limits; None: no limit."""

    max_tokens: float | None = None
    max_cost: float | None = None
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        for name in LIMITS:
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or not value > 0
            ):
                raise ValueError(f"{name}={value!r} — give a number more than 0 (or None for no limit).")

    @property
    def active(self) -> bool:
        return any(getattr(self, name) is not None for name in LIMITS)


class BudgetWatch:
    """One cell's usage so far, against its budget; ``cancel`` stops the running turn when it trips."""

    def __init__(self, budget: CellBudget | None, cancel: Callable[[], None]) -> None:
        self.budget = budget or CellBudget()
        self.cancel = cancel
        self.tokens: float | None = None
        self.cost: float | None = None
        self.currency: str | None = None
        self.exceeded: dict[str, Any] | None = None
        self.ignored: list[Any] = []  # the costs reported that were not a usage number (the first few)

    def on_update(self, update: AgentSessionUpdate) -> None:
        """A session listener: counts a ``usage_update`` and checks the limits."""
        usage = update.usage
        if update.kind != "usage_update" or usage is None:
            return
        self._tokens(usage.used)
        if usage.cost is not None:
            amount = _count(usage.cost.amount)
            if amount is None:
                self._ignore(usage.cost.amount)
            else:
                self.cost = amount
                self.currency = usage.cost.currency
        self.check()

    def _ignore(self, amount: Any) -> None:
        if not self.ignored:
            log.warning("the agent reported a cost of %r: ignored (not a number of 0 or more)", amount)
        if len(self.ignored) < 5:
            self.ignored.append(amount)

    def on_answer(self, usage: Mapping[str, Any] | None) -> None:
        """A prompt's answer: its ``usage.totalTokens`` (the session's, when the agent sends one)."""
        if usage:
            self._tokens(usage.get("totalTokens"))
            self.check()

    def _tokens(self, value: Any) -> None:
        if (count := _count(value)) is not None:
            self.tokens = max(self.tokens or 0.0, count)

    def check(self) -> None:
        # "not within" rather than "over": a NaN that got here anyway trips the limit instead of passing.
        budget = self.budget
        if budget.max_tokens is not None and self.tokens is not None and not self.tokens <= budget.max_tokens:
            self.trip("max_tokens", self.tokens, budget.max_tokens)
        elif budget.max_cost is not None and self.cost is not None and not self.cost <= budget.max_cost:
            self.trip("max_cost", self.cost, budget.max_cost)

    def trip(self, limit: str, value: float, maximum: float) -> None:
        """Record the first limit passed and cancel the running turn (once)."""
        if self.exceeded is not None:
            return
        self.exceeded = {"limit": limit, "value": value, "max": maximum}
        self.cancel()

    def usage(self) -> dict[str, Any]:
        """The cell's counts, and a ``note`` when the agent reported costs that were ignored."""
        counts: dict[str, Any] = {"tokens": self.tokens, "cost": self.cost, "currency": self.currency}
        if self.ignored:
            shown = ", ".join(repr(amount) for amount in self.ignored)
            counts["note"] = (
                f"ignored the costs the agent reported that are not a number of 0 or more: {shown}"
            )
        return counts


def check_grid_budget(budget: Mapping[str, float] | None) -> dict[str, float]:
    """``budget={"cost": 5.0}`` and/or ``{"tokens": 2_000_000}``, checked."""
    if budget is None:
        return {}
    if not isinstance(budget, Mapping) or not budget or set(budget) - set(GRID_KEYS):
        raise ValueError(
            f"budget={budget!r} — give the grid's total as a dict, e.g. {{'cost': 5.0}} or {{'tokens': 1e6}}."
        )
    for key, value in budget.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ValueError(f"budget {key}={value!r} — give a number more than 0.")
    return {key: float(value) for key, value in budget.items()}


class GridSpend:
    """What the grid's cells have used so far (earlier attempts included), against ``budget=``."""

    def __init__(self, budget: Mapping[str, float]) -> None:
        self.budget = dict(budget)
        self.spent = {"cost": 0.0, "tokens": 0.0}
        self.notes: list[str] = []  # one line per count not added (NaN, infinite, negative)

    def add(self, usage: Mapping[str, Any] | None) -> None:
        for key in GRID_KEYS:
            value = (usage or {}).get(key)
            if value is None:
                continue  # not reported: nothing to add
            if (count := _count(value)) is not None:
                self.spent[key] += count
            elif len(self.notes) < 100:
                self.notes.append(f"a cell's {key} of {value!r} was not added to the grid's total")
                log.warning("%s (not a number of 0 or more)", self.notes[-1])

    def reached(self) -> str | None:
        """Why no new cell may start, or None."""
        for key, limit in self.budget.items():
            if self.spent[key] >= limit:
                shown = f"{self.spent[key]:.4g}" if key == "cost" else f"{self.spent[key]:,.0f}"
                return f"the grid's budget is spent: {key} {shown} of {limit:g}"
        return None
