"""The first hits both feedback channels widen a query with: the dense and BM25 channels' lists (their ``hits``:
ids and texts, the documents fetched here by id with their vectors and fields), or the same searches run here when
the router gave those channels no weight (so a feedback channel's list never depends on another channel's
weight)."""

from __future__ import annotations

from typing import Any

from haystack import Document
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.models.query_vector import QueryEmbedding, as_float_list
from adaptive_retrieval.components.retrieval.feedback import feedback_documents
from adaptive_retrieval.components.retrieval.ranked_hits import HitsInput
from adaptive_retrieval.components.stores.documents.vector_search import VectorSearch


def first_hits(
    search: VectorSearch,
    filters: dict[str, Any] | None,
    n: int,
    rrf_k: int,
    query_embedding: QueryEmbedding,
    query_sparse_embedding: SparseEmbedding,
    nearest: HitsInput,
    lexical: HitsInput,
) -> list[Document]:
    """The ``n`` feedback documents: ``nearest`` and ``lexical`` (dense and BM25 hits, best first) fused by
    reciprocal rank; a list that is missing or shorter than ``n`` is searched for here (its ``n`` best, with
    embeddings). Each list is cut to its first ``n``, so the feedback never depends on how deep the channels
    searched (their ``fetch_k``).

    Store errors propagate: the caller turns them into the channel's failure.
    """
    if not nearest or len(nearest) < n:
        dense = search.search_dense(as_float_list(query_embedding), top_k=n, filters=filters, return_embedding=True)
    else:
        dense = search.fetch_documents([h.id for h in nearest[:n]])
    if (not lexical or len(lexical) < n) and query_sparse_embedding.indices:
        sparse = search.search_sparse(query_sparse_embedding, top_k=n, filters=filters, return_embedding=True)
    else:
        sparse = search.fetch_documents([h.id for h in (lexical or [])[:n]])
    return feedback_documents([dense[:n], sparse[:n]], n, rrf_k)
