"""The GIL switch interval while turns stream (``notebook/_responsive.py``): lowered only from Python's
default, only while a turn runs, put back when the last one ends, and a value someone else set is kept."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from silo_nb.notebook._responsive import STREAMING_SWITCH_INTERVAL, responsive_threads

DEFAULT = 0.005


@pytest.fixture(autouse=True)
def default_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(DEFAULT)
    yield
    sys.setswitchinterval(before)


def test_lowered_while_a_turn_runs_and_restored_after() -> None:
    with responsive_threads():
        assert sys.getswitchinterval() == STREAMING_SWITCH_INTERVAL
    assert sys.getswitchinterval() == DEFAULT


def test_overlapping_turns_restore_once_the_last_ends() -> None:
    first, second = responsive_threads(), responsive_threads()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert sys.getswitchinterval() == STREAMING_SWITCH_INTERVAL  # the background turn still streams
    second.__exit__(None, None, None)
    assert sys.getswitchinterval() == DEFAULT


def test_restored_when_the_turn_raises() -> None:
    with pytest.raises(KeyboardInterrupt), responsive_threads():
        raise KeyboardInterrupt
    assert sys.getswitchinterval() == DEFAULT


def test_a_value_set_by_the_user_is_kept() -> None:
    sys.setswitchinterval(0.01)
    with responsive_threads():
        assert sys.getswitchinterval() == 0.01
    assert sys.getswitchinterval() == 0.01


def test_a_change_made_during_the_turn_is_not_undone() -> None:
    with responsive_threads():
        sys.setswitchinterval(0.002)
    assert sys.getswitchinterval() == 0.002
