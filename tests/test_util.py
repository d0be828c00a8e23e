"""``util.gc_paused``: no collection while a restore builds its objects; with ``promote``, young garbage
collected first and what the build made promoted to the oldest generation on the way out (issue 10: no
young-generation walk over a journal's worth of objects). With the ``gc_tuning`` switch off
(``silo_nb.tuning``), none of it: the collector is never touched, and a restore gives the same result."""

from __future__ import annotations

import dataclasses
import gc
import subprocess
import sys
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from silo_nb import tuning, util
from silo_nb.model.models import AgentSessionUpdate
from silo_nb.sessions.journal import BIG_JOURNAL_BYTES, encode_line, read_updates
from silo_nb.updates.parse import parse_update
from silo_nb.updates.transcript import fold_all
from silo_nb.util import gc_paused

BIG = gc_paused.PROMOTE_AFTER + 1_000


@pytest.fixture(autouse=True)
def collector_as_it_was() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.enable()
    yield
    if not enabled:
        gc.disable()


@pytest.fixture(autouse=True)
def switches_as_they_were() -> Iterator[None]:
    """On for each test whatever the environment says (a test turns one off), and put back after."""
    previous = tuning.set_tuning(gc_tuning=True)
    yield
    tuning.set_tuning(**dataclasses.asdict(previous))


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_a_big_build_goes_to_the_oldest_generation_without_a_walk() -> None:
    frozen_before = gc.get_freeze_count()  # CPython 3.12 starts with some: promotion is off there
    with gc_paused(promote=True):
        assert not gc.isenabled()
        built = [[i] for i in range(BIG)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen_before
    if frozen_before == 0:
        assert gc.get_count()[0] < 100  # nothing left for the next young collection to walk
        assert _in_generation(built[0], 2) and _in_generation(built[-1], 2)
    else:
        assert not _in_generation(built[-1], 2)


def test_without_promote_or_for_a_small_build_the_collector_does_as_usual() -> None:
    with gc_paused():
        unasked = [[i] for i in range(BIG)]
    enabled = gc.isenabled()
    gc.disable()  # at once: a young collection of our own could promote the build (seen under xdist)
    try:
        assert enabled
        assert not _in_generation(unasked[-1], 2)  # young: walked by the next collections, as ever
    finally:
        gc.enable()
    with gc_paused(promote=True):
        small = [[i] for i in range(100)]
    enabled = gc.isenabled()
    gc.disable()
    try:
        assert enabled and not _in_generation(small[-1], 2)
    finally:
        gc.enable()


class Node:
    other: object = None


def _cycle() -> weakref.ref[Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_garbage_from_before_a_promoted_build_is_freed_not_promoted() -> None:
    gc.collect()
    before = _cycle()  # garbage already, waiting for a young collection
    assert before() is not None
    with gc_paused(promote=True):
        built = [[i] for i in range(BIG)]
    gc.collect(1)  # a young and middle collection: not a full one
    assert before() is None, "a cycle that was garbage before the build was promoted with it"
    assert built


def test_a_cycle_made_during_the_build_waits_for_a_full_collection() -> None:
    """The trade-off the README states: garbage cycles made during a promoted build go to the oldest
    generation with it, so a young and middle collection leaves them; a full one frees them."""
    promoting = gc.get_freeze_count() == 0  # off on CPython 3.12 (see above)
    with gc_paused(promote=True):
        built = [[i] for i in range(BIG)]
        during = _cycle()
    gc.collect(1)
    assert (during() is not None) == promoting
    gc.collect()
    assert during() is None and built


def test_nothing_is_promoted_while_the_program_froze_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    freezes: list[str] = []
    monkeypatch.setattr(util.gc, "get_freeze_count", lambda: 3)  # objects frozen by the program
    monkeypatch.setattr(util.gc, "freeze", lambda: freezes.append("freeze"))
    monkeypatch.setattr(util.gc, "unfreeze", lambda: freezes.append("unfreeze"))
    with gc_paused(promote=True):
        built = [[i] for i in range(BIG)]
    enabled = gc.isenabled()
    gc.disable()  # at once: a young collection of our own could promote the build (seen under xdist)
    try:
        assert freezes == [] and enabled
        assert not _in_generation(built[-1], 2)
    finally:
        gc.enable()


def test_a_collector_the_program_disabled_stays_disabled() -> None:
    gc.disable()
    with gc_paused(promote=True):
        built = [[i] for i in range(BIG)]
    assert not gc.isenabled()  # left as the program had it
    assert not _in_generation(built[-1], 2)


# -- the gc_tuning switch ---------------------------------------------------------------------------------


@pytest.fixture
def collector_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call that changes the collector's state, in order (each still done)."""
    calls: list[str] = []

    def spy(name: str) -> Callable[..., Any]:
        real = getattr(gc, name)

        def called(*args: Any) -> Any:
            calls.append(name)
            return real(*args)

        return called

    for name in ("disable", "enable", "freeze", "unfreeze", "collect"):
        monkeypatch.setattr(gc, name, spy(name))
    return calls


@pytest.fixture
def young_collections() -> Iterator[list[int]]:
    """The generations the collector collected, as it did (``gc.callbacks``)."""
    seen: list[int] = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(callback)
    yield seen
    gc.callbacks.remove(callback)


def test_with_the_switch_off_a_build_leaves_the_collector_alone(
    collector_calls: list[str], young_collections: list[int]
) -> None:
    tuning.set_tuning(gc_tuning=False)
    frozen_before = gc.get_freeze_count()
    with gc_paused(promote=True):
        assert gc.isenabled()
        built = [[i] for i in range(BIG)]
    assert collector_calls == [] and gc.isenabled() and gc.get_freeze_count() == frozen_before
    assert 0 in young_collections  # the collector ran through the build, as it would anyway
    assert not _in_generation(built[-1], 2)


def test_the_switch_is_read_as_each_build_starts(collector_calls: list[str]) -> None:
    tuning.set_tuning(gc_tuning=False)
    with gc_paused():
        pass
    tuning.set_tuning(gc_tuning=True)
    with gc_paused():
        assert not gc.isenabled()
    assert collector_calls == ["disable", "enable"]
    paused = gc_paused()
    paused.__enter__()
    tuning.set_tuning(gc_tuning=False)  # turned off mid-build: the build still undoes its own pause
    paused.__exit__(None, None, None)
    assert gc.isenabled()


def _journal(path: Path) -> int:
    """A journal over BIG_JOURNAL_BYTES of text chunks, tool calls and their updates with diffs."""
    wire: list[dict[str, Any]] = []
    for i in range(2_000):
        text = {"type": "text", "text": f"token {i} " * 8}
        wire += [{"sessionUpdate": "agent_message_chunk", "messageId": f"m{i // 10}", "content": text}] * 4
        wire.append({"sessionUpdate": "tool_call", "toolCallId": f"t{i}", "title": f"Edit f{i}.py"})
        diff = {"type": "diff", "path": f"f{i}.py", "oldText": "a\nb\n" * 20, "newText": "a\nc\n" * 20}
        wire.append({"sessionUpdate": "tool_call_update", "toolCallId": f"t{i}", "content": [diff]})
    updates = [parse_update(item) for item in wire]
    path.write_text("".join(encode_line(u) + "\n" for u in updates if u is not None), encoding="utf-8")
    assert path.stat().st_size >= BIG_JOURNAL_BYTES
    return len(wire)


def _restore(path: Path) -> tuple[list[AgentSessionUpdate], Any]:
    updates = read_updates(path)
    return updates, fold_all(updates)


def test_a_restore_with_the_switch_off_never_touches_the_collector_and_gives_the_same(
    tmp_path: Path, collector_calls: list[str], young_collections: list[int]
) -> None:
    count = _journal(tmp_path / "journal.jsonl")
    assert count >= 10_000  # big enough that, with the switch on, both the read and the fold promote
    gc.collect()
    frozen_before = gc.get_freeze_count()
    promoting = frozen_before == 0  # CPython 3.12 starts with frozen objects: promotion is off there

    on_updates, on_state = _restore(tmp_path / "journal.jsonl")
    assert "disable" in collector_calls and ("freeze" in collector_calls) == promoting
    collector_calls.clear()

    tuning.set_tuning(gc_tuning=False)
    young_collections.clear()
    off_updates, off_state = _restore(tmp_path / "journal.jsonl")
    assert collector_calls == [], "the collector was touched with the gc_tuning switch off"
    assert gc.isenabled() and gc.get_freeze_count() == frozen_before
    assert 0 in young_collections  # it collected during the restore, on its own schedule
    assert len(off_updates) == count and off_updates == on_updates
    assert off_state == on_state and len(off_state.entries) > 0


# -- the switches themselves ------------------------------------------------------------------------------


def test_set_tuning_changes_one_switch_and_returns_the_previous() -> None:
    tuning.set_tuning(switch_interval=True, gc_tuning=True)
    previous = tuning.set_tuning(gc_tuning=False)
    assert previous == tuning.Tuning(switch_interval=True, gc_tuning=True)
    assert tuning.tuning() == tuning.Tuning(switch_interval=True, gc_tuning=False)
    tuning.set_tuning(**dataclasses.asdict(previous))
    assert tuning.tuning() == previous
    with pytest.raises(TypeError, match="gc_tuning"):
        tuning.set_tuning(gc_tuning="off")  # type: ignore[arg-type]
    assert tuning.tuning() == previous


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({}, (True, True)),
        ({"SILO_NB_SWITCH_INTERVAL": "0"}, (False, True)),
        ({"SILO_NB_GC_TUNING": "off", "SILO_NB_SWITCH_INTERVAL": "1"}, (True, False)),
        ({"SILO_NB_GC_TUNING": " False", "SILO_NB_SWITCH_INTERVAL": "NO"}, (False, False)),
        ({"SILO_NB_GC_TUNING": "perhaps"}, (True, True)),  # not understood: the default, with a warning
    ],
)
def test_each_switch_has_an_environment_variable(
    environment: dict[str, str],
    expected: tuple[bool, bool],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name in tuning.ENVIRONMENT.values():
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    read = tuning._from_environment()
    assert (read.switch_interval, read.gc_tuning) == expected
    assert ("perhaps" in caplog.text) == ("perhaps" in environment.values())


def test_the_environment_is_read_at_import() -> None:
    code = "from silo_nb.tuning import tuning; t = tuning(); print(t.switch_interval, t.gc_tuning)"
    env = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent), "SILO_NB_GC_TUNING": "0"}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "True False"
