"""Checkpoints of kernel variables (issue 32, step 1): the names code may change, read from its syntax;
saved within a memory budget and a time bound; restored — a mutated DataFrame equal to before, a name the
code made gone — and every name that could not be saved listed with why."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import pytest

from silo_nb.kernel_tools.checkpoint import estimate_bytes, names_changed_by, take_checkpoint


@pytest.mark.parametrize(
    ("code", "names"),
    [
        ("x = 1", ("x",)),
        ("a, (b, *c) = 1, (2, 3)", ("a", "b", "c")),
        ("total += 1", ("total",)),
        ("del old", ("old",)),
        ('df.loc[0, "a"] = 99', ("df",)),
        ("cfg.opts.level = 3", ("cfg",)),
        ("rows[0] = None", ("rows",)),
        ("rows.append(1)", ("rows",)),
        ("df.drop(columns=['a'], inplace=True)", ("df",)),
        ("for i, v in enumerate(xs): acc.add(v)", ("i", "v", "acc")),
        ("with open('f') as fh: pass", ("fh",)),
        ("import numpy as np2, os.path", ("np2", "os")),
        ("from math import pi as PI", ("PI",)),
        ("def f():\n    inner = 1\n    inner2.append(3)", ("f",)),
        ("class K:\n    attr = 1", ("K",)),
        ("ys = [z for z in range(3)]", ("ys",)),
        ("if (n := 3) > 2: print(n)", ("n",)),
        ("print(len(xs))", ()),
        ("this is not python", ()),
    ],
)
def test_the_names_code_may_change(code: str, names: tuple[str, ...]) -> None:
    assert names_changed_by(code) == names


def run(namespace: dict[str, Any], code: str) -> None:
    exec(code, namespace)  # the agent's allowed run_code, in the test's "kernel namespace"


async def test_an_undo_puts_a_mutated_dataframe_back_and_removes_what_the_code_made() -> None:
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    before = df.copy()
    ns: dict[str, Any] = {"df": df, "arr": np.arange(4), "rows": [1, 2]}
    code = 'df.loc[0, "a"] = 99\ndf = df[df.a > 1]\nx = 42\narr *= 2\nrows.append(3)'
    checkpoint = await take_checkpoint(ns, names_changed_by(code))
    run(ns, code)
    assert ns["x"] == 42 and len(ns["df"]) == 3 and ns["df"].a.iloc[0] == 99
    report = checkpoint.restore(ns)
    pd.testing.assert_frame_equal(ns["df"], before)
    assert "x" not in ns and list(ns["arr"]) == [0, 1, 2, 3] and ns["rows"] == [1, 2]
    assert set(report.restored) == {"df", "arr", "rows"} and report.removed == ("x",)
    assert report.not_restorable == ()
    run(ns, code)  # undone twice: the checkpoint itself was not handed out
    assert checkpoint.restore(ns).removed == ("x",) and ns["df"].a.iloc[0] == 1


async def test_a_value_over_the_budget_is_listed_not_copied() -> None:
    big = pd.DataFrame({"v": np.zeros(100_000)})
    ns: dict[str, Any] = {"big": big, "small": [1]}
    checkpoint = await take_checkpoint(ns, ["big", "small"], max_bytes=64 * 1024)
    assert "big" not in checkpoint.saved and "small" in checkpoint.saved
    (listed,) = checkpoint.not_restorable
    assert (
        listed.name == "big" and "checkpoint_max_bytes" in listed.reason and "781.4 KB" not in listed.reason
    )
    assert "not copied" in listed.reason and "\n" not in listed.reason
    assert checkpoint.restore(ns).not_restorable == (listed,)


class Hostile:
    def __init__(self, pause: float = 0.0, fail: bool = False) -> None:
        self.pause, self.fail = pause, fail

    def __deepcopy__(self, memo: Any) -> Hostile:
        if self.fail:
            raise RuntimeError("no copies of me\nsecond line")
        time.sleep(self.pause)
        return Hostile()


async def test_a_copy_that_raises_or_hangs_is_bounded_and_listed() -> None:
    ns: dict[str, Any] = {"raises": Hostile(fail=True), "hangs": Hostile(pause=120), "fine": {"k": [1]}}
    started = time.monotonic()
    checkpoint = await take_checkpoint(ns, ["raises", "hangs", "fine"], seconds=0.2)
    assert time.monotonic() - started < 60  # ended: the 2-minute copy was left behind, not waited for
    reasons = {item.name: item.reason for item in checkpoint.not_restorable}
    assert reasons == {
        "raises": "could not be copied (RuntimeError: no copies of me)",
        "hangs": "copying took longer than 0.2 s: not copied",
    }
    assert checkpoint.saved == {"fine": {"k": [1]}} and checkpoint.saved["fine"] is not ns["fine"]


async def test_immutable_values_are_kept_by_reference_and_sizes_are_estimated() -> None:
    ns: dict[str, Any] = {"n": 3, "s": "text", "t": (1, ("a",)), "f": print, "m": np}
    checkpoint = await take_checkpoint(ns, list(ns))
    assert all(checkpoint.saved[name] is ns[name] for name in ns) and checkpoint.bytes == 0
    assert estimate_bytes(np.zeros(1_000))[0] == 8_000
    size, exact = estimate_bytes([[0] * 10 for _ in range(20_000)])
    assert not exact and size > 0  # past the walk's bound: a lower bound, said so
