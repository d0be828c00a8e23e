"""The GIL switch interval while turns stream (``notebook/_responsive.py``): lowered only from Python's
default, only while a turn runs, put back when the last one ends, and a value someone else set is kept.
With the ``switch_interval`` switch off (``silo_nb.tuning``) it is never touched, and a turn is the same."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell

from silo_nb import tuning
from silo_nb.notebook._responsive import STREAMING_SWITCH_INTERVAL, responsive_threads
from tests.support.shell import final_bundle, run, shell  # noqa: F401  (a fixture)

DEFAULT = 0.005


@pytest.fixture(autouse=True)
def default_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(DEFAULT)
    yield
    sys.setswitchinterval(before)


@pytest.fixture(autouse=True)
def switches_as_they_were() -> Iterator[None]:
    """On for each test whatever the environment says (a test turns one off), and put back after."""
    previous = tuning.set_tuning(switch_interval=True)
    yield
    tuning.set_tuning(**dataclasses.asdict(previous))


@pytest.fixture
def interval_calls(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every value the interval was set to (still set), from anywhere."""
    calls: list[float] = []
    real = sys.setswitchinterval

    def recorded(value: float) -> None:
        calls.append(value)
        real(value)

    monkeypatch.setattr(sys, "setswitchinterval", recorded)
    return calls


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


def test_with_the_switch_off_the_interval_is_never_touched(interval_calls: list[float]) -> None:
    tuning.set_tuning(switch_interval=False)
    with responsive_threads():
        assert sys.getswitchinterval() == DEFAULT
        with responsive_threads():
            assert sys.getswitchinterval() == DEFAULT
    assert sys.getswitchinterval() == DEFAULT and interval_calls == []


def test_the_switch_is_read_as_each_turn_starts(interval_calls: list[float]) -> None:
    tuning.set_tuning(switch_interval=False)
    first = responsive_threads()
    first.__enter__()
    tuning.set_tuning(switch_interval=True)
    with responsive_threads():  # a turn started once it is on lowers it, though another was running
        assert sys.getswitchinterval() == STREAMING_SWITCH_INTERVAL
        tuning.set_tuning(switch_interval=False)  # off mid-turn: what a turn lowered, it puts back
    assert sys.getswitchinterval() == STREAMING_SWITCH_INTERVAL  # the first turn still streams
    first.__exit__(None, None, None)
    assert sys.getswitchinterval() == DEFAULT
    assert interval_calls == [STREAMING_SWITCH_INTERVAL, DEFAULT]


async def _prompt_turn(ip: InteractiveShell, during: list[float]) -> str:
    """A ``%%prompt`` cell's whole turn on the demo agent; ``during`` gets the interval at each update."""
    listener = ip.user_ns["demo"].on_transcript(lambda *_: during.append(sys.getswitchinterval()))
    captured, result = await run(ip, "%%prompt --rerun\nTell me about penguins")
    listener.dispose()
    assert result.success, result.error_in_exec
    markdown: str = final_bundle(captured).data["text/markdown"]
    # The transcript: not its header row (the turn's number) nor the usage line (the session's total).
    return "\n".join(line for line in markdown.splitlines()[1:] if "tokens" not in line)


async def test_a_prompt_turn_is_the_same_with_the_switch_off(
    shell: InteractiveShell,  # noqa: F811  (the fixture)
    interval_calls: list[float],
) -> None:
    await run(shell, "%silo connect demo")
    during_on: list[float] = []
    reference = await _prompt_turn(shell, during_on)
    assert "penguins" in reference
    assert during_on and set(during_on) == {STREAMING_SWITCH_INTERVAL}
    assert interval_calls == [STREAMING_SWITCH_INTERVAL, DEFAULT]
    interval_calls.clear()
    tuning.set_tuning(switch_interval=False)
    during_off: list[float] = []
    assert await _prompt_turn(shell, during_off) == reference
    assert during_off and set(during_off) == {DEFAULT} and interval_calls == []
