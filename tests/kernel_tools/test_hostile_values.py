"""Huge and hostile values through the official ``mcp`` client: every answer is bounded by the caps, a
``__repr__`` that raises or sleeps costs one line (the sleep stops at the time bound), code that loops
forever is stopped, and the kernel keeps answering after each."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import polars as pl

from silo_nb.kernel_tools import limits
from tests.conftest import Workspace
from tests.kernel_tools.tool_session import tool_session

ROWS = 10_000_000


class RaisingRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr is broken on purpose")


class SleepingRepr:
    def __repr__(self) -> str:
        time.sleep(60)  # the tool's time bound stops it long before
        return "never"


class HugeRepr:
    def __repr__(self) -> str:
        return "x" * 50_000_000


def hostile() -> dict[str, Any]:
    loop: list[Any] = [1, 2]
    loop.append(loop)
    cycle: dict[str, Any] = {"name": "a"}
    cycle["self"] = cycle
    ids = np.arange(ROWS, dtype=np.int64)
    return {
        "big": pd.DataFrame({"id": ids, "group": (ids % 7).astype(np.int8)}),
        "pl_big": pl.DataFrame({"id": ids, "group": (ids % 7).astype(np.int8)}),
        "text": "z" * 100_000_000,
        "loop": loop,
        "cycle": cycle,
        "raising": RaisingRepr(),
        "sleeping": SleepingRepr(),
        "huge_repr": HugeRepr(),
        "many": list(range(1_000_000)),
    }


async def test_huge_and_hostile_values_are_bounded(workspace: Workspace) -> None:
    namespace = hostile()
    async with tool_session(workspace, namespace, tool_seconds=2.0) as session:
        error, listing, _ = await session.call("list_variables")
        assert not error and "| big | DataFrame (pandas) | 10,000,000 × 2 | 85.8 MB |" in listing
        assert "| pl_big | DataFrame (polars) | 10,000,000 × 2 | 85.8 MB |" in listing
        assert "| text | str | len 100,000,000 | 95.4 MB |" in listing
        assert "| sleeping | SleepingRepr (" in listing  # listed without calling its __repr__

        for name in ("big", "pl_big"):
            error, text, _ = await session.call("inspect_variable", name=name, rows=50)
            assert not error, text
            assert "shape: 10,000,000 rows × 2 columns" in text
            assert "describe() of the first 100,000 rows" in text
            assert "null counts: id: 0, group: 0" in text
            assert len(text) <= limits.OUTPUT_CHARS

        _, text, _ = await session.call("inspect_variable", name="text")
        assert "len 100,000,000" in text and len(text) < 1_000
        _, text, _ = await session.call("inspect_variable", name="loop")
        assert "[1, 2, [...]]" in text
        _, text, _ = await session.call("inspect_variable", name="cycle")
        assert "'self': {...}" in text
        _, text, _ = await session.call("inspect_variable", name="many")
        assert "len 1,000,000" in text and len(text) < 1_000
        _, text, _ = await session.call("inspect_variable", name="raising")
        assert "its __repr__ raised RuntimeError: repr is broken on purpose" in text
        _, text, _ = await session.call("inspect_variable", name="huge_repr")
        assert len(text) <= limits.REPR_CHARS + 200

        error, text, _ = await session.call("inspect_variable", name="sleeping")
        assert error and text == "inspect_variable stopped after 2 s (a repr or a size took too long)."
        error, after, _ = await session.call("inspect_variable", name="raising")  # the kernel goes on
        assert not error and "RaisingRepr" in after
    statuses = [line["status"] for line in session.lines()]
    assert statuses.count("timed_out") == 1 and statuses.count("completed") == 10
    assert all(len(line.get("output", "")) <= limits.OUTPUT_CHARS + 100 for line in session.lines())


async def test_code_that_floods_or_never_ends_is_bounded(workspace: Workspace) -> None:
    namespace: dict[str, Any] = {"n": 0}
    async with tool_session(workspace, namespace, run_code_timeout=1.0) as session:
        error, text, _ = await session.call("run_code", code="print('a' * 50_000_000)\n'b' * 50_000_000")
        assert not error and len(text) <= limits.OUTPUT_CHARS + 100
        assert "more characters]" in text  # it says how much was left out
        error, text, _ = await session.call("run_code", code="while True:\n    n += 1")
        assert error and "status: timed_out" in text and "longer than 1 s" in text
        assert namespace["n"] > 0  # it ran, in the namespace, until it was stopped
        error, text, _ = await session.call("run_code", code="import time\ntime.sleep(30)")
        assert error and "status: timed_out" in text
        too_long = "x = 1\n" * 20_000
        error, text, _ = await session.call("run_code", code=too_long)
        assert error and text == "The code is 120,000 characters; run_code takes at most 100,000."
        error, text, _ = await session.call("run_code", code="n")  # the kernel still answers
        assert not error and "value:" in text
