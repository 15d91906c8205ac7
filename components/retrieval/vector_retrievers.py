"""The dense and sparse channels: top-k vector searches that skip themselves at zero weight and fail softly.

Both search the store through :func:`~adaptive_retrieval.components.stores.documents.vector_search.vector_search`
(Qdrant Edge embedded, or a Qdrant server through qdrant-haystack), filter natively (the collection's payload
indexes), and differ only in the query they send. Their shared part is :class:`_VectorChannel`.

Usage::

    dense = DenseRetriever(document_store=store, filters={"field": "meta.level", "operator": "==", "value": 0})
    docs = dense.run(query_embedding=vector, weights={"dense": 0.5})["documents"]
    sparse = SparseRetriever(document_store=store)
    docs = sparse.run(query_sparse_embedding=bm25_query, weights={"sparse": 0.3})["documents"]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from haystack import Document, component
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.types import FilterPolicy, apply_filter_policy

from adaptive_retrieval.components.models.query_vector import QueryEmbedding, as_float_list
from adaptive_retrieval.components.retrieval.channel import (
    channel_enabled,
    declare_outputs,
    search_or_failure,
    skipped_output,
)
from adaptive_retrieval.components.retrieval.ranked_hits import RankedHits
from adaptive_retrieval.components.stores.documents.vector_search import VectorSearch, vector_search
from adaptive_retrieval.components.strategy import WeightsInput


class _VectorChannel:
    """Init parameters, validation, the skip rule and the soft-failing search both vector channels share: each
    ``run`` only names its query and the store's search for it."""

    channel = ""

    def __init__(
        self,
        document_store: Any,
        filters: dict[str, Any] | None = None,
        top_k: int = 20,
        return_embedding: bool = False,
        score_threshold: float | None = None,
        filter_policy: FilterPolicy | str = FilterPolicy.REPLACE,
        share_documents: bool = False,
    ) -> None:
        if not isinstance(top_k, int) or top_k < 1:
            msg = f"top_k must be a positive integer, got {top_k!r}"
            raise ValueError(msg)
        self.document_store = document_store
        self.filters = filters
        self.top_k = top_k
        self.share_documents = share_documents
        declare_outputs(self, share_documents, hits=RankedHits)
        self.return_embedding = return_embedding
        self.score_threshold = score_threshold
        policy = FilterPolicy.from_str(filter_policy) if isinstance(filter_policy, str) else filter_policy
        self.filter_policy = policy.value  # serialised as its plain value
        self._filter_policy = policy
        self._search: VectorSearch = vector_search(document_store)

    def _run(
        self,
        search: Callable[..., list[Document]],
        query: Any,
        filters: dict[str, Any] | None,
        top_k: int | None,
        weights: WeightsInput,
        empty: bool = False,
    ) -> dict[str, Any]:
        """``documents``: ``[]`` when the router gave the channel no weight or the query is ``empty`` (nothing to
        search for), ``None`` when the store failed, else the top ``top_k`` hits; after a search, the same list as
        ``hits`` (:class:`~adaptive_retrieval.components.retrieval.ranked_hits.RankedHits`, what the graph and
        bridge channels read)."""
        if empty or not channel_enabled(self.channel, weights):
            return skipped_output(self.share_documents)
        effective = apply_filter_policy(self._filter_policy, self.filters, filters)

        def run_search() -> list[Document]:
            return search(
                query,
                top_k=top_k or self.top_k,
                filters=effective,
                return_embedding=self.return_embedding,
                score_threshold=self.score_threshold,
            )

        found = search_or_failure(self.channel, run_search, self.share_documents)
        if found["documents"] is not None:
            found["hits"] = RankedHits.of(found["documents"])
        return found


@component
class DenseRetriever(_VectorChannel):
    """Vector search as the adaptive channel ``dense``; its documents travel without their vectors, as every
    channel's (MMR reads them from the store by id).

    :param document_store: an ``EdgeDocumentStore`` or a qdrant-haystack ``QdrantDocumentStore``.
    :param filters: Haystack filters applied to every search (``filter_policy`` says how run-time filters combine).
    :param top_k: hits per search (the router's ``fetch_k`` overrides it per query).
    :param return_embedding: ask the store for the vectors too (the channel's output drops them all the same:
        kept for YAML written before).
    :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (typed
        ``Iterable[Document]``, for the joiner) instead of a list; the query pipeline sets it (see ``declare_outputs``).
    """

    channel = "dense"

    def run(
        self,
        query_embedding: QueryEmbedding,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        weights: WeightsInput = None,
    ) -> dict[str, Any]:
        """Top ``top_k`` documents by similarity; nothing when the router gave this channel no weight.

        A failing store is logged and gives ``documents=None``, which the joiner skips.

        :raises ValueError: when the query embedding's dimension differs from the index's.
        """
        return self._run(self._search.search_dense, as_float_list(query_embedding), filters, top_k, weights)


@component
class SparseRetriever(_VectorChannel):
    """Sparse (BM25 with IDF) search as the adaptive channel ``sparse``; its documents travel without vectors.

    :param document_store: an ``EdgeDocumentStore`` or a qdrant-haystack ``QdrantDocumentStore``.
    :param filters: Haystack filters applied to every search.
    :param top_k: hits per search (the router's ``fetch_k`` overrides it per query).
    :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (typed
        ``Iterable[Document]``, for the joiner) instead of a list; the query pipeline sets it (see ``declare_outputs``).
    """

    channel = "sparse"

    def run(
        self,
        query_sparse_embedding: SparseEmbedding,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        weights: WeightsInput = None,
    ) -> dict[str, Any]:
        """Top ``top_k`` documents by BM25; nothing when the query has no indexable term or the channel is off."""
        empty = not query_sparse_embedding.indices
        return self._run(self._search.search_sparse, query_sparse_embedding, filters, top_k, weights, empty)
