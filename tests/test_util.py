"""``util.gc_paused``: no collection while a restore builds its objects; with ``promote``, young garbage
collected first and what the build made promoted to the oldest generation on the way out (issue 10: no
young-generation walk over a journal's worth of objects)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from silo_nb import util
from silo_nb.util import gc_paused

BIG = gc_paused.PROMOTE_AFTER + 1_000


@pytest.fixture(autouse=True)
def collector_as_it_was() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.enable()
    yield
    if not enabled:
        gc.disable()


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
    assert gc.isenabled()
    assert not _in_generation(unasked[-1], 2)  # young: walked by the next collections, as ever
    with gc_paused(promote=True):
        small = [[i] for i in range(100)]
    assert gc.isenabled()
    assert not _in_generation(small[-1], 2)


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
    assert freezes == [] and gc.isenabled()
    assert not _in_generation(built[-1], 2)


def test_a_collector_the_program_disabled_stays_disabled() -> None:
    gc.disable()
    with gc_paused(promote=True):
        built = [[i] for i in range(BIG)]
    assert not gc.isenabled()  # left as the program had it
    assert not _in_generation(built[-1], 2)
