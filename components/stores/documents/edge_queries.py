"""Qdrant Edge requests from the store's arguments: pure translation, no shard (as qdrant-haystack keeps its
converters apart from its store).

Usage::

    request = query_request(dense_query(vector, 384, "documents"), top_k=10, filters=None, return_embedding=False)
    records = shard.query(request)
"""

from __future__ import annotations

from typing import Any

import qdrant_edge as qe
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.stores.documents.edge_conversion import DENSE_VECTORS_NAME, SPARSE_VECTORS_NAME
from adaptive_retrieval.components.stores.documents.edge_filters import convert_filters
from adaptive_retrieval.components.stores.documents.vector_search import check_query_dimension

#: Points per page when the store scrolls through a filter's matches.
SCROLL_PAGE = 1024


def dense_query(query_embedding: list[float], dimension: int, index: str) -> Any:
    """A nearest-neighbour query on the dense vector.

    :raises ValueError: when the query's dimension differs from the index's (``dimension``).
    """
    check_query_dimension(query_embedding, dimension, f"index '{index}'")
    return qe.Query.Nearest([float(v) for v in query_embedding], using=DENSE_VECTORS_NAME)


def sparse_query(query_sparse_embedding: SparseEmbedding) -> Any | None:
    """A nearest query on the sparse vector (BM25 with IDF); ``None`` for an empty query vector.

    :raises ValueError: when the query vector repeats an index.
    """
    if len(set(query_sparse_embedding.indices)) != len(query_sparse_embedding.indices):
        msg = "A sparse query vector must not repeat an index"
        raise ValueError(msg)
    if not query_sparse_embedding.indices:
        return None
    vector = qe.SparseVector(
        indices=[int(i) for i in query_sparse_embedding.indices],
        values=[float(v) for v in query_sparse_embedding.values],
    )
    return qe.Query.Nearest(vector, using=SPARSE_VECTORS_NAME)


def query_request(
    query: Any,
    top_k: int,
    filters: dict[str, Any] | None,
    return_embedding: bool,
    score_threshold: float | None = None,
    params: Any = None,
    with_payload: bool = True,
) -> qe.QueryRequest:
    """The request for ``query``: ``top_k`` points matching Haystack ``filters``, with payloads (unless
    ``with_payload`` is False: ids and scores), and the dense vector when ``return_embedding``."""
    return qe.QueryRequest(
        limit=int(top_k),
        query=query,
        filter=convert_filters(filters),
        with_payload=with_payload,
        with_vector=[DENSE_VECTORS_NAME] if return_embedding else False,
        score_threshold=score_threshold,
        params=params,
    )


def scroll_request(offset: Any, edge_filter: qe.Filter | None, vectors: bool) -> qe.ScrollRequest:
    """One page of a scroll from ``offset`` through the points matching ``edge_filter``."""
    return qe.ScrollRequest(
        offset=offset, limit=SCROLL_PAGE, filter=edge_filter, with_payload=True, with_vector=vectors
    )
