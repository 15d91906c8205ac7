"""Dense vectors a serving worker keeps from its store host, so that a search's answer need not carry them again.

A search through :class:`~adaptive_retrieval.components.stores.remote_document_store.RemoteDocumentStore` asks the
host for the documents without vectors, fills in the vectors this cache holds, and fetches only the missing ones
(one more call). Unpickling 384 floats per document was most of a worker's cost of a store call, and the host no
longer converts and pickles the vectors of every hit.

Every host answer carries the host's *generation*: its identity and the number of writes made through its open
shard, read before the call ran. A cache holds the vectors of one generation only: an answer of another generation
empties it, so a vector kept from before a write is never used after it. The documents come out as the embedded
store returns them (each vector a new list of the same floats; Qdrant Edge stores them as float32, which is what
the cache keeps, exactly: 1.5 KB per 384-d vector).

Usage::

    cache = VectorCache(capacity=10_000)
    kept, missing = cache.lookup(generation, ["id-1", "id-2"])
    kept.update(cache.keep(generation, {"id-2": [0.1, ...]}))
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

#: Environment variable: how many vectors a serving worker keeps (0: none, every answer carries its vectors).
CAPACITY_ENV = "ADAPTIVE_STORE_VECTOR_CACHE"


class VectorCache:
    """Up to ``capacity`` dense vectors of one store-host generation, by document id (thread-safe).

    :param capacity: vectors kept; when full, the oldest half is dropped.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            msg = f"A vector cache needs a capacity of at least 1, not {capacity}"
            raise ValueError(msg)
        self.capacity = capacity
        self._generation: Hashable | None = None
        self._vectors: dict[str, np.ndarray | None] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def _sync(self, generation: Hashable) -> None:
        if generation != self._generation:
            self._vectors.clear()
            self._generation = generation

    def lookup(self, generation: Hashable, ids: list[str]) -> tuple[dict[str, list[float] | None], list[str]]:
        """The kept vectors of ``ids`` (each a new list; ``None`` for a document stored without one) and the ids
        not kept, for an answer of ``generation`` (another generation than the cache's empties it first)."""
        kept: dict[str, list[float] | None] = {}
        missing: list[str] = []
        with self._lock:
            self._sync(generation)
            for i in ids:
                if i in self._vectors:
                    vector = self._vectors[i]
                    kept[i] = None if vector is None else vector.tolist()
                else:
                    missing.append(i)
        return kept, missing

    def keep(self, generation: Hashable, vectors: Mapping[str, Any]) -> dict[str, list[float] | None]:
        """Keep ``vectors`` (id → list of floats or ``None``) fetched in ``generation``; returns them as lists for
        the documents at hand. Vectors of another generation than the cache's current one are not kept."""
        rows = {i: None if v is None else _row(v) for i, v in vectors.items()}
        with self._lock:
            if generation == self._generation:
                if len(self._vectors) + len(rows) > self.capacity:
                    for old in list(self._vectors)[: max(len(self._vectors) // 2, len(rows))]:
                        del self._vectors[old]
                self._vectors.update(list(rows.items())[: self.capacity])
        return {i: None if v is None else list(v) for i, v in vectors.items()}


def _row(vector: Any) -> np.ndarray:
    """``vector`` as float32 when that holds it exactly (Qdrant Edge's storage type), else as float64."""
    exact = np.asarray(vector, dtype=np.float64)
    single = exact.astype(np.float32)
    return single if np.array_equal(single, exact) else exact
