"""Small shared pieces: ``Disposable``, a listener set whose failing listeners never propagate, and
``gc_paused`` for the bulk builds of a restore."""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable
from types import TracebackType
from typing import Generic, ParamSpec

from silo_nb.tuning import tuning

__all__ = ["Disposable", "ListenerSet", "gc_paused"]

log = logging.getLogger("silo_nb")

P = ParamSpec("P")


class Disposable:
    """Undo a registration with :meth:`dispose` (idempotent) or by leaving a ``with`` block."""

    def __init__(self, on_dispose: Callable[[], None]) -> None:
        self._on_dispose: Callable[[], None] | None = on_dispose

    def dispose(self) -> None:
        callback, self._on_dispose = self._on_dispose, None
        if callback is not None:
            callback()

    @property
    def disposed(self) -> bool:
        return self._on_dispose is None

    def __enter__(self) -> Disposable:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.dispose()


class ListenerSet(Generic[P]):
    """Listeners called in registration order; one that raises is logged and the rest still run."""

    def __init__(self, what: str) -> None:
        self._what = what
        # A tuple, replaced on add/remove: emit iterates a snapshot without copying (it runs per update).
        self._listeners: tuple[Callable[P, None], ...] = ()

    def add(self, listener: Callable[P, None]) -> Disposable:
        if not callable(listener):
            raise TypeError(f"a {self._what} listener must be callable, got {type(listener).__name__}")
        self._listeners = (*self._listeners, listener)
        return Disposable(lambda: self._remove(listener))

    def _remove(self, listener: Callable[P, None]) -> None:
        if listener in self._listeners:
            listeners = list(self._listeners)
            listeners.remove(listener)
            self._listeners = tuple(listeners)

    def emit(self, *args: P.args, **kwargs: P.kwargs) -> None:
        for listener in self._listeners:
            try:
                listener(*args, **kwargs)
            except Exception:
                log.exception("a %s listener raised", self._what)

    def emit_checked(self, *args: P.args, **kwargs: P.kwargs) -> Exception | None:
        """:meth:`emit`, returning the first exception a listener raised (each is logged, as there)."""
        first: Exception | None = None
        for listener in self._listeners:
            try:
                listener(*args, **kwargs)
            except Exception as exc:
                log.exception("a %s listener raised", self._what)
                first = first or exc
        return first

    def clear(self) -> None:
        self._listeners = ()

    def __len__(self) -> int:
        return len(self._listeners)

    def __bool__(self) -> bool:
        return bool(self._listeners)


class gc_paused:
    """No cyclic GC while a journal's lines become objects or a transcript is folded from them: each
    collection would walk every object the kernel holds (a resumed session keeps its journal parsed), and
    these builds make many, none of them cyclic garbage. A 100,000-update journal's read takes less than
    half the time it takes with the collector running; the fold after it gains little (RESULTS.md,
    "Interpreter tuning switches: on vs off").

    ``promote`` (a build the caller expects to be big): the young generations are collected first (their
    garbage goes now: cheap, they are small), and on the way out, when the build left at least
    ``PROMOTE_AFTER`` tracked objects, everything young goes straight to the oldest generation
    (``gc.freeze()`` then ``gc.unfreeze()``: two list splices, no walk) instead of being walked by the next
    young collection and again by the middle one (100,000 updates: ~460,000 objects, 0.17 s a walk,
    measured). Not done while objects are frozen (the program's own ``gc.freeze()``, or CPython 3.12,
    which starts with some): unfreezing would release them; the build is then collected as usual.

    Nothing of this while the ``gc_tuning`` switch is off (``silo_nb.tuning``, asked as each build
    starts): the collector is the user's, and then it runs through the build as it would anyway.

    A class, not ``contextlib.contextmanager``: with a generator's context manager around it, the loop
    it guards ran 25-50% slower (CPython 3.11, measured: the journal read 0.75 s -> 0.94 s)."""

    PROMOTE_AFTER = 20_000
    __slots__ = ("_paused", "_promote")

    def __init__(self, *, promote: bool = False) -> None:
        self._promote = promote

    def __enter__(self) -> None:
        # Paused only if the collector runs (one the program disabled is left so) and the switch allows.
        self._paused = gc.isenabled() and tuning().gc_tuning
        if not self._paused:
            return
        self._promote = self._promote and gc.get_freeze_count() == 0
        if self._promote:
            gc.collect(1)  # garbage cycles made before the build are freed, not promoted with it
        gc.disable()

    def __exit__(self, *_: object) -> None:
        if self._paused:
            if self._promote and gc.get_count()[0] >= self.PROMOTE_AFTER and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
