"""Dense vectors a serving worker keeps from its store host, so that a search's answer need not carry them again.

A search through :class:`~adaptive_retrieval.components.stores.documents.remote_document_store.RemoteDocumentStore` asks
the host for the documents without vectors, fills in the vectors this cache holds, and fetches only the missing ones
(one more call). Unpickling 384 floats per document was most of a worker's cost of a store call, and the host no
longer converts and pickles the vectors of every hit.

Every host answer carries the host's *generation*: its identity and the number of writes made through its open
shard, read before the call ran. A cache holds the vectors of one generation only: an answer of another generation
empties it, so a vector kept from before a write is never used after it. The documents come out as the embedded
store returns them (each vector a new list of the same floats; Qdrant Edge stores them as float32, which is what
the cache keeps, exactly: 1.5 KB per 384-d vector).

A query pipeline holds one store object per component that searches, all over the same index: they share one cache
per process (:func:`shared_vector_cache`), so a vector is kept once however many components read it.

Usage::

    cache = shared_vector_cache(("/run/store.sock", "/data/qdrant", "Document"), capacity=10_000)
    kept, missing = cache.lookup(generation, ["id-1", "id-2"])
    kept.update(cache.keep(generation, {"id-2": [0.1, ...]}))
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from adaptive_retrieval.components.stores.caches.generation_cache import GenerationCache

#: Environment variable: how many vectors a serving worker keeps (0: none, every answer carries its vectors).
CAPACITY_ENV = "ADAPTIVE_STORE_VECTOR_CACHE"


#: The caches in use in this process, by index and capacity; one lives as long as a store holds it.
_SHARED: weakref.WeakValueDictionary[Hashable, VectorCache] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def shared_vector_cache(index: Hashable, capacity: int) -> VectorCache:
    """This process's cache of ``capacity`` vectors for the index that ``index`` names (host socket, folder, index
    name): every store object over that index gets the same one. Each kept its own before, and a query pipeline
    holds several, so a worker kept the same vectors two to three times over (40 MB at 10,000 chunks)."""
    key = (index, capacity)
    with _SHARED_LOCK:
        cache = _SHARED.get(key)
        if cache is None:
            cache = _SHARED[key] = VectorCache(capacity)
        return cache


class VectorCache:
    """Up to ``capacity`` dense vectors of one store-host generation, by document id (thread-safe).

    :param capacity: vectors kept; when full, the oldest half is dropped.
    """

    def __init__(self, capacity: int) -> None:
        self._rows: GenerationCache[str, np.ndarray | None] = GenerationCache(capacity)

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def generation(self) -> Hashable | None:
        """The generation whose vectors the cache holds."""
        return self._rows.generation

    def lookup(self, generation: Hashable, ids: list[str]) -> tuple[dict[str, list[float] | None], list[str]]:
        """The kept vectors of ``ids`` (each a new list; ``None`` for a document stored without one) and the ids
        not kept, for an answer of ``generation`` (another generation than the cache's empties it first)."""
        rows, missing = self._rows.lookup(generation, ids)
        return {i: None if row is None else row.tolist() for i, row in rows.items()}, missing

    def rows(self, generation: Hashable, ids: list[str]) -> tuple[dict[str, np.ndarray | None], list[str]]:
        """:meth:`lookup`, the vectors as the cache holds them (read-only arrays, no list made)."""
        return self._rows.lookup(generation, ids)

    def observe(self, generation: Hashable | None) -> None:
        """An answer of ``generation`` came from the host: a cache of another generation empties (``None``, an
        answer while a write ran, changes nothing). So the kept vectors are always those of the latest answer."""
        if generation is not None and generation != self._rows.generation:
            self._rows.lookup(generation, ())

    def keep(self, generation: Hashable, vectors: Mapping[str, Any]) -> dict[str, list[float] | None]:
        """Keep ``vectors`` (id → floats or ``None``) fetched in ``generation``; returns them as lists for the
        documents at hand. Vectors of another generation than the cache's current one are not kept."""
        rows = self.keep_rows(generation, vectors)
        return {i: None if row is None else row.tolist() for i, row in rows.items()}

    def keep_rows(self, generation: Hashable, vectors: Mapping[str, Any]) -> dict[str, np.ndarray | None]:
        """:meth:`keep`, returning the vectors as the cache holds them (read-only arrays)."""
        rows = {i: vector_row(v) for i, v in vectors.items()}
        self._rows.keep(generation, rows)
        return rows


def float32_row(vector: Any) -> np.ndarray:
    """``vector`` as float32 when that holds it exactly (Qdrant Edge's storage type), else as float64; read-only
    (a cache hands the same array to every reader)."""
    exact = np.array(vector, dtype=np.float64)  # a copy: the caller's array is never made read-only
    single = exact.astype(np.float32)
    row = single if np.array_equal(single, exact) else exact
    row.flags.writeable = False
    return row


def vector_row(vector: Any) -> np.ndarray | None:
    """A document's dense vector (a list of floats, or ``None``) as :func:`float32_row` holds it."""
    return None if vector is None else float32_row(vector)
