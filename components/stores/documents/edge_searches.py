"""The searches of the Qdrant Edge store (what :class:`~.vector_search.VectorSearch` asks of it): dense and sparse
top-k with payload filters, documents and dense vectors by id, answered from the process's point cache
(:mod:`.point_cache`) when no write runs. A base of :class:`~.edge_document_store.EdgeDocumentStore`, which opens the
shard and reads it (``_opened``, ``shard``, ``_read``)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from typing import Any

import numpy as np
import qdrant_edge as qe
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.stores.caches.point_cache import KeptPoint, PointCache
from adaptive_retrieval.components.stores.caches.vector_cache import vector_row
from adaptive_retrieval.components.stores.documents.edge_checks import score_problem, vector_problem
from adaptive_retrieval.components.stores.documents.edge_conversion import (
    DENSE_VECTORS_NAME,
    SPARSE_VECTORS_NAME,
    point_id,
    point_to_document,
)
from adaptive_retrieval.components.stores.documents.edge_errors import (
    vector_damage,
)
from adaptive_retrieval.components.stores.documents.edge_queries import dense_query, query_request, sparse_query
from adaptive_retrieval.components.stores.documents.edge_shards import (
    OpenShard,
)
from adaptive_retrieval.components.stores.documents.wire_documents import WireDocuments

logger = logging.getLogger(__name__)


class EdgeSearches:
    """The searches of :class:`~.edge_document_store.EdgeDocumentStore` (its base; see the module docstring)."""

    def search_dense(
        self,
        query_embedding: list[float],
        *,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = True,
        score_threshold: float | None = None,
    ) -> list[Document]:
        """The ``top_k`` documents nearest to ``query_embedding`` among those matching ``filters``.

        :raises ValueError: when the query's dimension differs from the index's.
        """
        return self._search_dense(query_embedding, top_k, filters, return_embedding, score_threshold, wire=False)

    def _search_dense(
        self,
        query_embedding: list[float],
        top_k: int,
        filters: dict[str, Any] | None,
        return_embedding: bool,
        score_threshold: float | None,
        wire: bool,
    ) -> list[Document] | WireDocuments:
        self._opened()  # an index built with other settings is named as such, before the query is blamed
        self._check_ledger()
        query = dense_query(query_embedding, self.embedding_dim, self.index)
        params = qe.SearchParams(hnsw_ef=self.hnsw_ef) if self.hnsw_ef is not None else None
        return self._query(query, top_k, filters, return_embedding, score_threshold, params, wire=wire)

    def search_sparse(
        self,
        query_sparse_embedding: SparseEmbedding,
        *,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = True,
        score_threshold: float | None = None,
    ) -> list[Document]:
        """The ``top_k`` documents by sparse (BM25 with IDF) score among those matching ``filters``."""
        return self._search_sparse(
            query_sparse_embedding, top_k, filters, return_embedding, score_threshold, wire=False
        )

    def _search_sparse(
        self,
        query_sparse_embedding: SparseEmbedding,
        top_k: int,
        filters: dict[str, Any] | None,
        return_embedding: bool,
        score_threshold: float | None,
        wire: bool,
    ) -> list[Document] | WireDocuments:
        if not self.use_sparse_embeddings:
            msg = f"The index '{self.index}' was created without sparse vectors (use_sparse_embeddings=False)."
            raise ValueError(msg)
        query = sparse_query(query_sparse_embedding)
        if query is None:
            return WireDocuments([]) if wire else []
        self._check_ledger()
        return self._query(query, top_k, filters, return_embedding, score_threshold, wire=wire)

    def fetch_documents(self, ids: list[str], *, sparse: bool = False, dense: bool = True) -> list[Document]:
        """Documents by id, in the order given (missing ids left out), with the dense vector (unless ``dense`` is
        False) and, if asked, the sparse one; a vector that cannot be right raises :class:`StoreDamagedError`, as
        in a search's answer (the query path reads through here; the cache of :mod:`.point_cache` serves it)."""
        return self._fetch_documents(ids, sparse, dense, wire=False)

    def _fetch_documents(self, ids: list[str], sparse: bool, dense: bool, wire: bool) -> list[Document] | WireDocuments:
        wanted = {point_id(i): i for i in dict.fromkeys(ids)}
        kept = None if sparse or not wanted else self._kept_by_id([p.int for p in wanted])
        if kept is not None:
            points = [(point, None) for p in wanted if (point := kept.get(p.int)) is not None]
            return WireDocuments.of_points(points, dense) if wire else [PointCache.document(*p, dense) for p in points]
        documents = self._retrieve(wanted, sparse=sparse, dense=dense) if wanted else []
        self._check_vectors(documents)
        return WireDocuments.of_documents(documents) if wire else documents

    # -- the same, as a store host sends them to its workers (:mod:`.wire_documents`) -----------------------------

    def wire_search_dense(
        self,
        query_embedding: list[float],
        *,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = True,
        score_threshold: float | None = None,
    ) -> WireDocuments:
        """:meth:`search_dense`'s documents as a store host sends them."""
        return self._search_dense(query_embedding, top_k, filters, return_embedding, score_threshold, wire=True)

    def wire_search_sparse(
        self,
        query_sparse_embedding: SparseEmbedding,
        *,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = True,
        score_threshold: float | None = None,
    ) -> WireDocuments:
        """:meth:`search_sparse`'s documents as a store host sends them."""
        return self._search_sparse(query_sparse_embedding, top_k, filters, return_embedding, score_threshold, wire=True)

    def wire_fetch_documents(self, ids: list[str], *, sparse: bool = False, dense: bool = True) -> WireDocuments:
        """:meth:`fetch_documents`'s documents as a store host sends them."""
        return self._fetch_documents(ids, sparse, dense, wire=True)

    def dense_vectors(self, ids: list[str]) -> dict[str, np.ndarray | None]:
        """The dense vector of each of ``ids`` the store holds (ids it does not hold are left out; ``None``: stored
        without one), as a read-only array of the stored values (float32), checked as :meth:`fetch_documents`
        checks them. No ``Document`` is made: the query pipeline's MMR reads the vectors of its candidates here,
        by id, from this process's cache of the shard (:mod:`.point_cache`)."""
        wanted = {point_id(i).int: i for i in dict.fromkeys(ids)}
        kept = self._kept_by_id(list(wanted)) if wanted else None
        if kept is not None:
            return {wanted[k]: point.vector for k in wanted if (point := kept.get(k)) is not None}
        return {d.id: vector_row(d.embedding) for d in self.fetch_documents(list(wanted.values()))}

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        """Documents by id with all their vectors (as ``QdrantDocumentStore.get_documents_by_id``), as stored: the
        indexing side and ``stats --verify`` read a damaged index through it, so nothing is checked or cached."""
        if not ids:
            return []
        return self._retrieve({point_id(i): i for i in dict.fromkeys(ids)}, sparse=self.use_sparse_embeddings)

    def _query(
        self,
        query: Any,
        top_k: int,
        filters: dict[str, Any] | None,
        return_embedding: bool,
        score_threshold: float | None,
        params: Any = None,
        *,
        wire: bool = False,
    ) -> list[Document] | WireDocuments:
        """The hits of ``query`` as documents, or as :class:`.WireDocuments` when ``wire``."""
        opened = self._opened()
        generation = opened.stable_generation()
        if opened.points is not None and generation is not None:
            # Ids and scores from Edge, the documents from this process's cache (:mod:`.point_cache`).
            request = query_request(query, top_k, filters, False, score_threshold, params, with_payload=False)
            hits = self._read(self.shard.query, request)
            if problem := score_problem(hits):
                raise vector_damage(self.shard_path, self.folder, problem)
            keys = [h.id.int for h in hits]  # each read of `id` makes a new uuid.UUID
            kept = self._kept_points(opened, generation, keys)
            if kept is not None and len(kept) == len(hits):
                points = [(kept[k], h.score) for k, h in zip(keys, hits, strict=True)]
                if wire:
                    return WireDocuments.of_points(points, return_embedding)
                return [PointCache.document(point, score, return_embedding) for point, score in points]
            # A write since the search (the hits are of another state): searched again, as without the cache.
        request = query_request(query, top_k, filters, return_embedding, score_threshold, params)
        documents = [point_to_document(p, p.score) for p in self._read(self.shard.query, request)]
        self._check_vectors(documents)
        return WireDocuments.of_documents(documents) if wire else documents

    def _retrieve(self, wanted: dict[Any, str], *, sparse: bool, dense: bool = True) -> list[Document]:
        """The documents of ``wanted`` (point id → document id) the shard holds, in that order, read from it."""
        vectors = [DENSE_VECTORS_NAME] * dense + [SPARSE_VECTORS_NAME] * sparse or False
        records = self._read(self.shard.retrieve, list(wanted), with_payload=True, with_vector=vectors)
        found = {d.id: d for d in (point_to_document(r) for r in records)}
        return [found[i] for i in wanted.values() if i in found]

    def _check_vectors(self, documents: Iterable[Document]) -> None:
        """:class:`StoreDamagedError` for vectors or scores read from the shard that cannot be right."""
        if problem := vector_problem(documents, normalised=self.similarity == "cosine"):
            raise vector_damage(self.shard_path, self.folder, problem)

    def _kept_by_id(self, ids: list[int]) -> dict[int, KeptPoint] | None:
        """:meth:`_kept_points` of ``ids`` (point keys) as of now; ``None`` without a cache or while a write runs."""
        opened = self._opened()
        generation = opened.stable_generation()
        if opened.points is None or generation is None:
            return None
        return self._kept_points(opened, generation, ids)

    def _kept_points(self, opened: OpenShard, generation: int, ids: list[int]) -> dict[int, KeptPoint] | None:
        """The kept points of ``ids`` (point keys: :data:`~.point_cache.PointKey`) as of ``generation``: those the
        cache holds, the others read from the shard with their dense vector (checked as a search checks its vectors)
        and kept; ids the shard does not hold are left out. ``None`` when a write started since ``generation`` was
        read (the search or the cache may then be of two states: the caller reads as without the cache)."""
        assert opened.points is not None
        kept, missing = opened.points.lookup(generation, ids)
        if missing:
            points = [uuid.UUID(int=k) for k in missing]
            records = self._read(self.shard.retrieve, points, with_payload=True, with_vector=[DENSE_VECTORS_NAME])
            documents = {r.id.int: point_to_document(r) for r in records}
            self._check_vectors(documents.values())
            if opened.writes != generation:
                return None
            kept.update(opened.points.keep(generation, documents))
        # Every write changes the count as it starts: the same count now means no write since it was read.
        return kept if opened.writes == generation else None
