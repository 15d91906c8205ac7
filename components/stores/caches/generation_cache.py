"""A bounded, thread-safe map that holds the values of one store *generation* only.

A generation names a state of an index: it changes with every write. A cache filled from reads of one generation
is emptied as soon as a lookup names another, so a value read before a write is never served after it. Two caches
of this package are built on it: the dense vectors a ``serve --workers`` worker keeps from its store host
(:mod:`.vector_cache`) and the documents an embedded shard keeps in its own process (:mod:`.point_cache`).

Usage::

    cache = GenerationCache(capacity=10_000)
    kept, missing = cache.lookup(generation, ["id-1", "id-2"])
    cache.keep(generation, {"id-2": value})
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Mapping
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class GenerationCache(Generic[K, V]):
    """Up to ``capacity`` values of one generation, by key (thread-safe).

    :param capacity: values kept; when full, the oldest half is dropped.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            msg = f"A cache of the store needs a capacity of at least 1, not {capacity}"
            raise ValueError(msg)
        self.capacity = capacity
        self._generation: Hashable | None = None
        self._values: dict[K, V] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    @property
    def generation(self) -> Hashable | None:
        """The generation whose values the cache holds (``None`` before the first lookup)."""
        return self._generation

    def _sync(self, generation: Hashable) -> None:
        if generation != self._generation:
            self._values.clear()
            self._generation = generation

    def lookup(self, generation: Hashable, keys: Iterable[K]) -> tuple[dict[K, V], list[K]]:
        """The kept values of ``keys`` and the keys not kept, for a read of ``generation`` (another generation than
        the cache's empties it first)."""
        kept: dict[K, V] = {}
        missing: list[K] = []
        with self._lock:
            self._sync(generation)
            values = self._values
            for key in keys:
                if key in values:
                    kept[key] = values[key]
                else:
                    missing.append(key)
        return kept, missing

    def keep(self, generation: Hashable, values: Mapping[K, V]) -> None:
        """Keep ``values`` read in ``generation``; values of another generation than the cache's are not kept."""
        with self._lock:
            if generation != self._generation:
                return
            if len(self._values) + len(values) > self.capacity:
                for old in list(self._values)[: max(len(self._values) // 2, len(values))]:
                    del self._values[old]
            self._values.update(list(values.items())[: self.capacity])
