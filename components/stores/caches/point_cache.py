"""Documents an embedded Qdrant Edge shard has returned, kept in its process, so that a search asks Edge for ids
and scores only.

Turning a point's payload and 384-float vector into Python objects cost more than Edge's search itself (about
1.3 ms of a 1.6 ms search for 40 hits, and a check of every vector after it). The store asks Edge for the ids and
scores of the hits, takes the documents this cache holds, and reads only the others from the shard, with their
dense vector, checked once as they enter.

The cache holds one *generation* of the shard (:mod:`.generation_cache`): the count of writes through the
process's open shard, which is odd while a write runs. Nothing read while a write runs is kept, and the first read
after a write empties the cache, so a document is never served as it was before a write. One process owns a shard
(Edge locks it), so every write to it goes through that count.

Each document comes out as the shard returns it: a new ``Document`` with its own ``meta``, the search's score, and
the dense vector as a new list of the same floats when asked. A kept document is its fields pickled into one
``bytes`` (unpickling makes the new ``meta`` faster than copying a kept dict would) and its vector as one float32
array (Edge's storage type: 1.5 KB per 384-d vector).

Usage::

    cache = PointCache(capacity=10_000)
    kept, missing = cache.lookup(generation, keys)              # keys: point ids' integers (uuid.UUID.int)
    cache.keep(generation, {key: document})
    document = cache.document(kept[key], score=0.8, with_vector=True)
"""

from __future__ import annotations

import pickle
from collections.abc import Hashable, Iterable, Mapping
from typing import NamedTuple

import numpy as np
from haystack import Document

from adaptive_retrieval.components.stores.caches.generation_cache import GenerationCache
from adaptive_retrieval.components.stores.caches.vector_cache import float32_row

#: Environment variable: how many documents an embedded store keeps in its process (0: every search reads them).
CAPACITY_ENV = "ADAPTIVE_STORE_POINT_CACHE"


class KeptPoint(NamedTuple):
    """A document as the shard returned it: its fields but score and vectors, pickled, and its dense vector."""

    fields: bytes
    vector: np.ndarray | None


#: Fields a kept point does not hold in ``fields``: the score is the search's, the vectors are apart or not kept.
_NOT_KEPT = frozenset({"score", "embedding", "sparse_embedding"})


#: A kept point's key: its point id's 128-bit integer (``uuid.UUID.int``). A ``uuid.UUID`` hashes and compares in
#: Python code; a query looks a few hundred ids up (1.5 ms of a store host's CPU per query as UUIDs).
PointKey = int


class PointCache:
    """Up to ``capacity`` documents of one shard generation, by point key (thread-safe).

    :param capacity: documents kept; when full, the oldest half is dropped.
    """

    def __init__(self, capacity: int) -> None:
        self._points: GenerationCache[PointKey, KeptPoint] = GenerationCache(capacity)

    def __len__(self) -> int:
        return len(self._points)

    def lookup(self, generation: Hashable, ids: Iterable[PointKey]) -> tuple[dict[PointKey, KeptPoint], list]:
        """The kept points of ``ids`` and the ids not kept, for a read of ``generation``."""
        return self._points.lookup(generation, ids)

    def keep(self, generation: Hashable, documents: Mapping[PointKey, Document]) -> dict[PointKey, KeptPoint]:
        """Keep ``documents`` (point key → the document with its dense vector, as read from the shard) read in
        ``generation``; returns them as kept points. Documents of another generation are not kept."""
        points = {
            i: KeptPoint(
                pickle.dumps({k: v for k, v in d.__dict__.items() if k not in _NOT_KEPT}, pickle.HIGHEST_PROTOCOL),
                None if d.embedding is None else float32_row(d.embedding),
            )
            for i, d in documents.items()
        }
        self._points.keep(generation, points)
        return points

    @staticmethod
    def document(point: KeptPoint, score: float | None, with_vector: bool) -> Document:
        """A new document of ``point`` (its own ``meta`` and ``blob``) with ``score``, and the dense vector as a new
        list when ``with_vector``."""
        return document_of_fields(point.fields, score, point.vector if with_vector else None)


def document_of_fields(fields: bytes, score: float | None, vector: np.ndarray | None) -> Document:
    """A new ``Document`` of pickled ``fields`` (a dict of its fields, in field order): the ``score``, the dense
    ``vector`` as a new list of its floats and no sparse vector, each only where ``fields`` lacks that field (a kept
    point's fields lack all three; a document read without the cache carries them)."""
    document = object.__new__(Document)
    # Filled as a deep copy or pickle fills a Document (no __init__, no mutation warning), in field order.
    state = pickle.loads(fields)  # this process's own cache, or its store host: a process of the same user
    document.__dict__.update(state)
    apart: dict[str, object] = {} if "score" in state else {"score": score}
    if "embedding" not in state:
        apart["embedding"] = None if vector is None else vector.tolist()
    if "sparse_embedding" not in state:
        apart["sparse_embedding"] = None
    document.__dict__.update(apart)
    return document
