"""A bounded least-recently-used cache, for results that depend only on their key (a rendering of an
immutable entry, a diff of two texts): it never changes what a call returns, only how often it is made.

Bounded by the number of items and by a size the caller measures (characters, say), whichever binds
first; the newest item always stays.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["LruCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """``get_or_make(key, make)``: the kept value, or ``make()``'s, kept (see the module docstring)."""

    def __init__(self, *, items: int, size: int, size_of: Callable[[K, V], int]) -> None:
        self._items, self._size_limit, self._size_of = items, size, size_of
        self._kept: OrderedDict[K, V] = OrderedDict()
        self._size = 0

    def get(self, key: K) -> V | None:
        value = self._kept.get(key)
        if value is not None:
            self._kept.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> V:
        old = self._kept.pop(key, None)
        if old is not None:
            self._size -= self._size_of(key, old)
        self._kept[key] = value
        self._size += self._size_of(key, value)
        while len(self._kept) > self._items or (self._size > self._size_limit and len(self._kept) > 1):
            dropped_key, dropped = self._kept.popitem(last=False)
            self._size -= self._size_of(dropped_key, dropped)
        return value

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        value = self.get(key)
        return value if value is not None else self.put(key, make())

    def clear(self) -> None:
        self._kept.clear()
        self._size = 0

    def __len__(self) -> int:
        return len(self._kept)
