"""Fingerprints of kernel variables (issue 32, step 1): the same value gives the same fingerprint, a change
a reader would call a change gives another — ``df.loc[0, "a"] = 99``, a dtype, a row, an element, an
append — and nothing raises, whatever the value."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from silo_nb.kernel_tools.fingerprints import changed_names, fingerprint


def test_a_dataframe_cell_change_is_seen_and_an_equal_frame_is_not() -> None:
    df = pd.DataFrame({"a": range(5), "b": list("vwxyz")})
    before = fingerprint(df)
    assert fingerprint(df.copy()) == before and before.startswith("DataFrame(5, 2):")
    df.loc[0, "a"] = 99
    assert fingerprint(df) != before
    assert fingerprint(df.astype({"a": "float64"})) != fingerprint(df)
    assert fingerprint(df.iloc[:4]) != fingerprint(df)
    assert fingerprint(df["a"]) != fingerprint(df["b"])


def test_large_frames_are_sampled_including_their_first_and_last_rows() -> None:
    big = pd.DataFrame({"v": np.arange(1_000_000)})
    mark = fingerprint(big)
    assert fingerprint(big) == mark
    for row in (0, len(big) - 1):
        changed = big.copy()
        changed.loc[row, "v"] = -1
        assert fingerprint(changed) != mark, row


def test_arrays_and_plain_values() -> None:
    arr = np.arange(10.0)
    mark = fingerprint(arr)
    arr[3] = 7
    assert fingerprint(arr) != mark
    assert fingerprint(np.arange(6).reshape(2, 3)) != fingerprint(np.arange(6))
    rows = [1, 2]
    mark = fingerprint(rows)
    rows.append(3)
    assert fingerprint(rows) != mark and fingerprint([1, 2]) == fingerprint([1, 2])


class Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __len__(self) -> int:
        raise RuntimeError("no len")


def test_a_value_whose_repr_raises_still_has_one_and_changes_are_named() -> None:
    value: Any = Hostile()
    assert fingerprint(value).startswith("Hostile@")
    before = {"df": "a", "x": "b", "gone": "c"}
    assert changed_names(before, {"df": "a", "x": "B"}) == ["x", "gone"]
