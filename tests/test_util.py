"""``util.gc_paused``: no collection while a restore builds its objects, and what it built promoted to the
oldest generation on the way out (issue 10: no young-generation walk over a journal's worth of objects)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from silo_nb.util import gc_paused


@pytest.fixture(autouse=True)
def collector_as_it_was() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    if not enabled:
        gc.disable()


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_a_big_build_goes_to_the_oldest_generation_without_a_walk() -> None:
    with gc_paused():
        assert not gc.isenabled()
        built = [[i] for i in range(gc_paused.PROMOTE_AFTER + 1_000)]
    assert gc.isenabled()
    assert gc.get_count()[0] < 100  # nothing left for the next young collection to walk
    assert _in_generation(built[0], 2) and _in_generation(built[-1], 2)
    assert gc.get_freeze_count() == 0


def test_a_small_build_is_left_to_the_collector() -> None:
    with gc_paused():
        built = [[i] for i in range(100)]
    assert gc.isenabled()
    assert _in_generation(built[-1], 0)


def test_a_cycle_built_meanwhile_is_still_collected() -> None:
    class Node:
        other: object = None

    with gc_paused():
        bulk = [[i] for i in range(gc_paused.PROMOTE_AFTER)]
        a, b = Node(), Node()
        a.other, b.other = b, a
        probe = [a]
    del a, b, bulk
    probe.pop()
    assert gc.collect() >= 2  # the full collection finds the two nodes (and their dicts)


def test_objects_the_program_froze_stay_frozen() -> None:
    frozen = [object()]
    gc.freeze()
    before = gc.get_freeze_count()
    with gc_paused():
        built = [[i] for i in range(gc_paused.PROMOTE_AFTER + 1_000)]
    assert gc.get_freeze_count() == before  # not unfrozen: promotion is skipped
    assert not _in_generation(built[-1], 2)
    assert frozen


def test_a_collector_the_program_disabled_stays_disabled() -> None:
    gc.disable()
    with gc_paused():
        built = [[i] for i in range(gc_paused.PROMOTE_AFTER + 1_000)]
    assert not gc.isenabled()
    assert gc.get_count()[0] >= len(built)  # left as the program had it
