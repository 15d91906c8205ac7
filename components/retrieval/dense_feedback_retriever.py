"""Dense search with pseudo-relevance feedback (Rocchio) as the channel ``dense_prf``: the query vector moved
toward its first hits, searched again.

A short or oddly worded information need embeds away from the documents that answer it; its best first hits are
closer to them. Rocchio's update without negatives (Rocchio, 1971) moves the unit query vector toward the mean of
the ``feedback_docs`` first hits' unit vectors (``query_weight`` for the query) and runs one more dense search. The
first hits are the dense and BM25 channels' best, fused by reciprocal rank
(:mod:`~adaptive_retrieval.components.retrieval.feedback_hits`), and they carry their vectors already: nothing is
embedded again. Cost: one dense search.

Usage::

    prf = DenseFeedbackRetriever(document_store=store)
    docs = prf.run(query_embedding=vector, query_sparse_embedding=bm25_query, nearest=dense_hits,
                   lexical=sparse_hits)["documents"]
"""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.models.query_vector import QueryEmbedding, as_float_list
from adaptive_retrieval.components.retrieval.channel import (
    channel_enabled,
    declare_outputs,
    search_or_failure,
    skipped_output,
)
from adaptive_retrieval.components.retrieval.feedback import check_feedback_parameters, rocchio
from adaptive_retrieval.components.retrieval.feedback_hits import first_hits
from adaptive_retrieval.components.retrieval.ranked_hits import HitsInput
from adaptive_retrieval.components.stores.documents.vector_search import VectorSearch, vector_search
from adaptive_retrieval.components.stores.serialization import store_from_init_parameters, to_dict_with_stores
from adaptive_retrieval.components.strategy import WeightsInput


@component
class DenseFeedbackRetriever:
    """Rocchio pseudo-relevance feedback on the dense channel, as the channel ``dense_prf``.

    :param document_store: an ``EdgeDocumentStore`` or a qdrant-haystack ``QdrantDocumentStore``.
    :param filters: Haystack filters applied to every search (the registry passes chunks only).
    :param feedback_docs: first hits the query moves toward.
    :param query_weight: the query's share of the moved vector (1: no feedback).

    The defaults (5 documents, half the query) are a common Rocchio setting for dense retrievers, not tuned here:
    the fit chooses only the channel's weight per profile.
    :param top_k: chunks returned (the router's ``fetch_k`` overrides it per query).
    :param rrf_k: reciprocal-rank constant fusing the dense and BM25 first hits.
    :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (typed
        ``Iterable[Document]``, for the joiner) instead of a list; the query pipeline sets it (see ``declare_outputs``).
    """

    channel = "dense_prf"

    def __init__(
        self,
        document_store: Any,
        filters: dict[str, Any] | None = None,
        feedback_docs: int = 5,
        query_weight: float = 0.5,
        top_k: int = 20,
        rrf_k: int = 60,
        share_documents: bool = False,
    ) -> None:
        check_feedback_parameters(feedback_docs, query_weight, "query_weight")
        for name, value in (("top_k", top_k), ("rrf_k", rrf_k)):
            if not isinstance(value, int) or value < 1:
                msg = f"{name} must be a positive integer, got {value!r}"
                raise ValueError(msg)
        self.document_store = document_store
        self.filters = filters
        self.feedback_docs = feedback_docs
        self.query_weight = query_weight
        self.top_k = top_k
        self.share_documents = share_documents
        declare_outputs(self, share_documents)
        self.rrf_k = rrf_k
        self._search: VectorSearch = vector_search(document_store)

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the store's own dictionary."""
        return to_dict_with_stores(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DenseFeedbackRetriever:
        """Deserialise, keeping the store's class."""
        return default_from_dict(cls, store_from_init_parameters(data))

    def run(
        self,
        query_embedding: QueryEmbedding,
        query_sparse_embedding: SparseEmbedding,
        nearest: HitsInput = None,
        lexical: HitsInput = None,
        top_k: int | None = None,
        weights: WeightsInput = None,
    ) -> dict[str, Any]:
        """Chunks nearest to the moved query vector; ``[]`` when the channel has no weight, ``None`` when the
        store failed.

        :raises ValueError: when the query embedding's dimension differs from the index's.
        """
        if not channel_enabled(self.channel, weights):
            return skipped_output(self.share_documents)
        query = as_float_list(query_embedding)

        def search() -> list[Document]:
            hits = first_hits(
                self._search,
                self.filters,
                self.feedback_docs,
                self.rrf_k,
                query,
                query_sparse_embedding,
                nearest,
                lexical,
            )
            vectors = [d.embedding for d in hits if d.embedding is not None]
            moved = rocchio(query, vectors, self.query_weight)
            return self._search.search_dense(moved, top_k=top_k or self.top_k, filters=self.filters)

        return search_or_failure(self.channel, search, self.share_documents)
