"""Qdrant document store that shares one client per local path (or ``:memory:``) inside a process.

Qdrant's local mode locks its folder, so the stock ``QdrantDocumentStore`` fails as soon as a pipeline loaded
from YAML holds two components that each deserialise their own store (and with ``:memory:`` each instance is a
separate database). ``SharedQdrantDocumentStore`` hands every instance that points at the same local storage
the same client, guarded by a lock because local mode is not thread-safe. With ``url=`` it is the stock store.

Local mode keeps two caches per collection beside the client, both emptied by any write through it: a
:class:`~components.stores.local_sparse_index.LocalSparseIndex` that answers sparse queries with Qdrant's own
scores (local mode itself scores every stored vector in Python), and a
:class:`~components.stores.local_point_cache.LocalPointCache` of converted documents, so that a hit costs a copy
instead of a payload deep copy plus a conversion. Set ``ADAPTIVE_LOCAL_CACHE=0`` to use neither.

Usage::

    store = SharedQdrantDocumentStore(path=".adaptive/qdrant", embedding_dim=384,
                                      use_sparse_embeddings=True, sparse_idf=True)
    same = SharedQdrantDocumentStore(path=".adaptive/qdrant", embedding_dim=384,
                                     use_sparse_embeddings=True, sparse_idf=True)  # no lock error
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import qdrant_client
from haystack import Document, default_to_dict
from haystack.dataclasses import SparseEmbedding
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from haystack_integrations.document_stores.qdrant.converters import convert_id
from haystack_integrations.document_stores.qdrant.document_store import DENSE_VECTORS_NAME, SPARSE_VECTORS_NAME

from components.stores.local_point_cache import ALL_VECTORS, NO_VECTORS, LocalPointCache
from components.stores.local_sparse_index import LocalSparseIndex

logger = logging.getLogger(__name__)

_REGISTRY: dict[str, _SharedClient] = {}
_REGISTRY_LOCK = threading.Lock()


class _SharedClient:
    """A local-mode client plus its reference count; every call runs under one re-entrant lock."""

    def __init__(self, client: qdrant_client.QdrantClient) -> None:
        self.client = client
        self.refs = 0
        self.lock = threading.RLock()
        # Bumped by every call that may write; the caches below hold what the collections held at `caches_version`.
        self.version = 0
        self.caches_version = 0
        self.sparse_indexes: dict[str, LocalSparseIndex] = {}
        self.point_caches: dict[str, LocalPointCache] = {}

    def _current(self) -> None:
        if self.caches_version != self.version:
            self.sparse_indexes.clear()
            for cache in self.point_caches.values():
                cache.clear()
            self.caches_version = self.version

    def sparse_index(self, collection_name: str, vector_name: str) -> LocalSparseIndex:
        """The collection's :class:`LocalSparseIndex`, rebuilt when anything was written since the last build
        (call under :attr:`lock`)."""
        self._current()
        index = self.sparse_indexes.get(collection_name)
        if index is None:
            index = LocalSparseIndex.from_collection(self.client, collection_name, vector_name)
            self.sparse_indexes[collection_name] = index
        return index

    def point_cache(self, collection_name: str) -> LocalPointCache:
        """The collection's :class:`LocalPointCache`, emptied when anything was written (call under :attr:`lock`)."""
        self._current()
        return self.point_caches.setdefault(collection_name, LocalPointCache())


# Client methods that never change stored points; any other call empties the local caches (sparse index, points).
_READ_ONLY_METHODS = frozenset(
    {
        "collection_exists",
        "count",
        "facet",
        "get_aliases",
        "get_collection",
        "get_collection_aliases",
        "get_collections",
        "info",
        "query_batch_points",
        "query_points",
        "query_points_groups",
        "retrieve",
        "scroll",
        "search_matrix_offsets",
        "search_matrix_pairs",
    }
)


class _LockedClient:
    """Proxy that serialises calls to a local-mode client shared across threads (Hayhooks runs sync
    pipelines in a thread pool), and counts the calls that may write."""

    def __init__(self, shared: _SharedClient) -> None:
        self._shared = shared

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._shared.client, name)
        if not callable(attr):
            return attr

        writes = name not in _READ_ONLY_METHODS

        @functools.wraps(attr)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._shared.lock:
                try:
                    return attr(*args, **kwargs)
                finally:
                    if writes:
                        self._shared.version += 1

        return locked


LOCAL_CACHE_ENV = "ADAPTIVE_LOCAL_CACHE"


def _local_cache_enabled() -> bool:
    """``ADAPTIVE_LOCAL_CACHE=0`` sends every local-mode search and lookup to Qdrant itself (for comparisons)."""
    return os.environ.get(LOCAL_CACHE_ENV, "1") != "0"


def local_storage_key(location: str | None, path: str | None) -> str | None:
    """Registry key of a local-mode store, or ``None`` for a server."""
    if path:
        return "path:" + str(Path(path).expanduser().resolve())
    if location == ":memory:":
        return "memory:"
    return None


def release_all_clients() -> None:
    """Close every shared local client (tests use it to simulate a fresh process)."""
    with _REGISTRY_LOCK:
        for shared in _REGISTRY.values():
            shared.client.close()
        _REGISTRY.clear()


class SharedQdrantDocumentStore(QdrantDocumentStore):
    """``QdrantDocumentStore`` whose local-mode instances share one client per storage path.

    Accepts every ``QdrantDocumentStore`` parameter; ``url`` (plus ``api_key`` as a ``Secret``,
    ``shard_number``, ``replication_factor``...) switches to a server or cluster with no other change.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("path") or kwargs.get("location") == ":memory:":
            # Local mode checks the creating thread; the lock in _LockedClient makes sharing safe.
            kwargs.setdefault("force_disable_check_same_thread", True)
        super().__init__(*args, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the stock store's parameters (the API key stays a ``Secret`` reference)."""
        params = inspect.signature(QdrantDocumentStore.__init__).parameters
        init_params = {k: getattr(self, k) for k in params if k != "self"}
        init_params["api_key"] = self.api_key.to_dict() if self.api_key else None
        return default_to_dict(self, **init_params)

    @property
    def is_local(self) -> bool:
        """True for Qdrant local mode (on-disk path or ``:memory:``)."""
        return local_storage_key(self.location, self.path) is not None

    def _initialize_client(self) -> None:
        key = local_storage_key(self.location, self.path)
        if self._client is not None or key is None:
            super()._initialize_client()
            return
        with _REGISTRY_LOCK:
            shared = _REGISTRY.get(key)
            if shared is None:
                if self.path:
                    Path(self.path).expanduser().mkdir(parents=True, exist_ok=True)
                shared = _SharedClient(qdrant_client.QdrantClient(**self._prepare_client_params()))
                _REGISTRY[key] = shared
                logger.info("Opened Qdrant local storage %s", key)
            shared.refs += 1
        self._client = _LockedClient(shared)  # type: ignore[assignment]
        self._set_up_collection(
            self.index,
            self.embedding_dim,
            self.recreate_index,
            self.similarity,
            self.use_sparse_embeddings,
            self.sparse_idf,
            self.on_disk,
            self.payload_fields_to_index,
        )

    async def _initialize_async_client(self) -> None:
        if self.is_local and self._async_client is None:
            msg = (
                "Qdrant local mode is synchronous here: run the pipeline with Pipeline.run (Hayhooks wrappers do), "
                "or point the store at a Qdrant server with url=..."
            )
            raise RuntimeError(msg)
        await super()._initialize_async_client()

    def close(self) -> None:
        """Release this instance's reference; the shared client closes with its last user."""
        key = local_storage_key(self.location, self.path)
        if key is None or self._client is None:
            super().close()
            return
        with _REGISTRY_LOCK:
            shared = _REGISTRY.get(key)
            if shared is not None:
                shared.refs -= 1
                if shared.refs <= 0:
                    shared.client.close()
                    del _REGISTRY[key]
        self._client = None

    def _local_shared(self, filters: Any = None, group_by: str | None = None, scale_score: bool = False) -> Any:
        """The shared local client when a search can use the local caches, else ``None`` (Qdrant answers).

        Filtered, grouped and score-scaled searches, servers, and ``ADAPTIVE_LOCAL_CACHE=0`` go to Qdrant.
        """
        if filters or group_by or scale_score or not self.is_local or not _local_cache_enabled():
            return None
        self._initialize_client()
        return getattr(self._client, "_shared", None)

    def cached_documents(self, ids: list[str], vectors: str = ALL_VECTORS) -> list[Document] | None:
        """Documents of ``ids`` (in that order, missing ones left out) from the local point cache.

        :param vectors: ``"all"`` (as ``get_documents_by_id``), ``"dense"`` or ``"none"``.
        :returns: ``None`` where the cache does not apply (a server, or the cache switched off).
        """
        shared = self._local_shared()
        if shared is None:
            return None
        with shared.lock:
            return shared.point_cache(self.index).documents(
                shared.client, self.index, [convert_id(i) for i in ids], vectors, self.use_sparse_embeddings
            )

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        """Documents by id with their vectors; from the local point cache in local mode."""
        cached = self.cached_documents(ids)
        return super().get_documents_by_id(ids) if cached is None else cached

    def _query_by_embedding(self, query_embedding: list[float], **options: Any) -> list[Document]:
        """Dense search (the stock store's parameters); in local mode Qdrant ranks the points and the documents
        come from the point cache."""
        return self._search(super()._query_by_embedding, self._dense_hits, query_embedding, options)

    def _query_by_sparse(self, query_sparse_embedding: SparseEmbedding, **options: Any) -> list[Document]:
        """Sparse search (the stock store's parameters); in local mode a :class:`LocalSparseIndex` ranks the
        points (Qdrant's scores, without scoring every stored vector in Python) and the documents come from the
        point cache."""
        if not self.use_sparse_embeddings:
            return super()._query_by_sparse(query_sparse_embedding, **options)  # the stock error
        return self._search(super()._query_by_sparse, self._sparse_hits, query_sparse_embedding, options)

    def _search(
        self,
        stock: Callable[..., list[Document]],
        rank: Callable[[_SharedClient, Any, int, float | None], list[tuple[Any, float]]],
        query: Any,
        options: dict[str, Any],
    ) -> list[Document]:
        shared = self._local_shared(options.get("filters"), options.get("group_by"), options.get("scale_score", False))
        if shared is None:
            return stock(query, **options)
        with shared.lock:
            hits = rank(shared, query, options.get("top_k", 10), options.get("score_threshold"))
            return shared.point_cache(self.index).documents(
                shared.client,
                self.index,
                [point_id for point_id, _ in hits],
                ALL_VECTORS if options.get("return_embedding") else NO_VECTORS,
                self.use_sparse_embeddings,
                scores=[score for _, score in hits],
            )

    def _dense_hits(
        self, shared: _SharedClient, query: list[float], top_k: int, score_threshold: float | None
    ) -> list[tuple[Any, float]]:
        points = shared.client.query_points(
            self.index,
            query=query,
            using=DENSE_VECTORS_NAME if self.use_sparse_embeddings else None,
            limit=top_k,
            with_payload=False,
            with_vectors=False,
            score_threshold=score_threshold,
        ).points
        return [(p.id, p.score) for p in points]

    def _sparse_hits(
        self, shared: _SharedClient, query: SparseEmbedding, top_k: int, score_threshold: float | None
    ) -> list[tuple[Any, float]]:
        index = shared.sparse_index(self.index, SPARSE_VECTORS_NAME)
        return index.top(query.indices, query.values, top_k, score_threshold)

    @property
    def client(self) -> Any:
        """The (shared, locked) Qdrant client, opened on first use."""
        self._initialize_client()
        return self._client


def store_from_init_parameters(data: dict[str, Any]) -> dict[str, Any]:
    """Deserialise ``data["init_parameters"]["document_store"]`` with the class its ``type`` names.

    The stock Qdrant retrievers always rebuild a plain ``QdrantDocumentStore``, which loses the shared client.
    """
    from haystack.core.serialization import import_class_by_name

    store_data = data["init_parameters"]["document_store"]
    if isinstance(store_data, dict):
        store_cls = import_class_by_name(store_data["type"])
        if not issubclass(store_cls, QdrantDocumentStore):
            msg = f"document_store type {store_data['type']} is not a QdrantDocumentStore"
            raise TypeError(msg)
        data["init_parameters"]["document_store"] = store_cls.from_dict(store_data)
    return data
