"""Answers of the SQLite graph store's per-key reads, kept in its process for one state of the graph file.

The graph channel asks the store, for every query, which entities its n-grams name, the chunks that mention its
seed entities, their neighbours and the entities of its top hits: ~280 keys and ~1,100 rows per query at 1,000
chunks, 4-5 ms of SQLite and row building. Queries share most of those keys (the same entities recur: 60-87 % of
the keys of 200 synthetic queries had been asked by an earlier one), so each answer per key is kept, absent keys
included.

A kept answer belongs to one *generation* of the file (:mod:`.generation_cache`): SQLite's ``PRAGMA
data_version``, which changes when another connection (another process: the indexer, a store host) commits, with
the process's own connection's ``total_changes``, which counts its own writes. A read while the process's own
connection has a transaction open keeps nothing. The first read of a new generation empties the cache, so an
answer is never served as it was before a write.

Each answer comes out as a new container (the caller may change it); the tuples and names inside are immutable.

Usage::

    cache = GraphReadCache(capacity=4096)
    chunks = cache.read("entity_chunks", generation, keys, fetch_missing, extra=(limit,))
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any

from adaptive_retrieval.components.stores.caches.generation_cache import GenerationCache

#: Environment variable: keys kept per kind of read (0: every read asks SQLite).
CAPACITY_ENV = "ADAPTIVE_GRAPH_READ_CACHE"

#: What a key the graph does not hold is kept as (its absence is an answer too).
_ABSENT = object()


def _copy(value: Any) -> Any:
    """A new outer container of a kept answer (lists and dicts); immutable answers as they are."""
    if type(value) is list:
        return list(value)
    if type(value) is dict:
        return dict(value)
    return value


class GraphReadCache:
    """Per-key answers of a graph store's reads, by kind of read, for one generation of the graph (thread-safe).

    :param capacity: keys kept per kind of read; when full, the oldest half of that kind is dropped.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            msg = f"A graph read cache needs a capacity of at least 1, not {capacity}"
            raise ValueError(msg)
        self.capacity = capacity
        self._kinds: dict[str, GenerationCache[Hashable, Any]] = {}

    def read(
        self,
        kind: str,
        generation: Hashable | None,
        keys: Iterable[Hashable],
        fetch: Callable[[list], dict],
        extra: tuple = (),
    ) -> dict:
        """``{key: answer}`` for the ``keys`` the graph holds: kept answers, and ``fetch(missing keys)`` for the rest.

        :param kind: the read (answers of different kinds, or of another ``extra``, never mix).
        :param generation: the graph's state now; ``None`` reads everything through ``fetch`` and keeps nothing.
        :param fetch: reads ``{key: answer}`` for the keys given; a key it leaves out is not in the graph.
        :param extra: the read's other arguments (e.g. a limit), part of every kept key.
        """
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        if generation is None:
            return fetch(wanted)
        cache = self._kinds.get(kind)
        if cache is None:
            cache = self._kinds.setdefault(kind, GenerationCache(self.capacity))
        kept_keys = [(key, *extra) for key in wanted]
        kept, missing = cache.lookup(generation, kept_keys)
        fresh: dict = {}
        if missing:
            fresh = fetch([k[0] for k in missing])
            cache.keep(generation, {k: fresh.get(k[0], _ABSENT) for k in missing})
        out = {}
        for key, kept_key in zip(wanted, kept_keys, strict=True):
            value = kept.get(kept_key, _ABSENT)
            if value is _ABSENT:
                value = fresh.get(key, _ABSENT)
            if value is not _ABSENT:
                # A copy of the outer container, whether kept before or just now: the caller owns what it gets.
                out[key] = _copy(value)
        return out
