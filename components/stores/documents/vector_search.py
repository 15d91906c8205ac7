"""The one interface the retrieval channels use to search a vector store, embedded or server.

:class:`~adaptive_retrieval.components.stores.documents.edge_document_store.EdgeDocumentStore` implements
:class:`VectorSearch` itself. A qdrant-haystack ``QdrantDocumentStore`` (a Qdrant server or cluster, ``url=``) is
searched through the stock qdrant-haystack retrievers, its public API, by :class:`QdrantServerSearch`.
:func:`vector_search` picks the one for a store, so a channel never calls a private method of either store.

Usage::

    search = vector_search(store)
    hits = search.search_dense(vector, top_k=20, filters={"field": "meta.level", "operator": "==", "value": 0})
    chunks = search.fetch_documents(["chunk-id-1", "chunk-id-2"])
    vectors = search.dense_vectors(["chunk-id-1", "chunk-id-2"])   # {id: float32 array}, no Document made
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.document_copy import with_fields
from adaptive_retrieval.components.stores.caches.vector_cache import vector_row


def check_query_dimension(query_embedding: Any, dimension: int, where: str) -> None:
    """Refuse a dense query vector whose length is not the index's, naming both (``where``: "index 'x'", ...).

    :raises ValueError: when ``len(query_embedding) != dimension``.
    """
    if len(query_embedding) != dimension:
        msg = (
            f"Query embedding has dimension {len(query_embedding)} but the {where} stores {dimension}-d vectors: "
            "use the model the index was built with."
        )
        raise ValueError(msg)


@runtime_checkable
class VectorSearch(Protocol):
    """Dense and sparse top-k searches with Haystack filters, and documents by id."""

    embedding_dim: int

    def search_dense(
        self,
        query_embedding: list[float],
        *,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = True,
        score_threshold: float | None = None,
    ) -> list[Document]:
        """The ``top_k`` nearest documents that match ``filters``, best first."""
        ...

    def search_sparse(
        self,
        query_sparse_embedding: SparseEmbedding,
        *,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = True,
        score_threshold: float | None = None,
    ) -> list[Document]:
        """The ``top_k`` documents by sparse score that match ``filters``, best first."""
        ...

    def fetch_documents(self, ids: list[str], *, sparse: bool = False, dense: bool = True) -> list[Document]:
        """Documents by id in the order given (missing ones left out), with their dense vector unless ``dense`` is
        False."""
        ...

    def dense_vectors(self, ids: list[str]) -> dict[str, np.ndarray | None]:
        """The dense vector of each id the store holds (missing ones left out; ``None``: stored without one), as a
        read-only array of the stored values: what the query pipeline's MMR reads, by id, for the channels'
        documents, which travel without their vectors."""
        ...


class QdrantServerSearch:
    """:class:`VectorSearch` over a qdrant-haystack ``QdrantDocumentStore`` through its stock retrievers."""

    def __init__(self, store: Any) -> None:
        from haystack_integrations.components.retrievers.qdrant import (
            QdrantEmbeddingRetriever,
            QdrantSparseEmbeddingRetriever,
        )

        self.store = store
        self.embedding_dim = store.embedding_dim
        self._dense = {
            flag: QdrantEmbeddingRetriever(document_store=store, return_embedding=flag) for flag in (True, False)
        }
        self._sparse = {
            flag: QdrantSparseEmbeddingRetriever(document_store=store, return_embedding=flag) for flag in (True, False)
        }

    def search_dense(
        self,
        query_embedding: list[float],
        *,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = True,
        score_threshold: float | None = None,
    ) -> list[Document]:
        """Dense search on the server."""
        check_query_dimension(query_embedding, self.embedding_dim, f"collection '{self.store.index}'")
        retriever = self._dense[return_embedding]
        found = retriever.run(query_embedding=query_embedding, filters=filters, top_k=top_k)["documents"]
        return _above(found, score_threshold)

    def search_sparse(
        self,
        query_sparse_embedding: SparseEmbedding,
        *,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = True,
        score_threshold: float | None = None,
    ) -> list[Document]:
        """Sparse search on the server."""
        retriever = self._sparse[return_embedding]
        found = retriever.run(query_sparse_embedding=query_sparse_embedding, filters=filters, top_k=top_k)
        return _above(found["documents"], score_threshold)

    def fetch_documents(self, ids: list[str], *, sparse: bool = False, dense: bool = True) -> list[Document]:
        """Documents by id (``get_documents_by_id``), in the order given (without the dense vector unless
        ``dense``)."""
        found = {d.id: d for d in self.store.get_documents_by_id(list(dict.fromkeys(ids)))} if ids else {}
        documents = [found[i] for i in dict.fromkeys(ids) if i in found]
        return documents if dense else [with_fields(d, embedding=None) for d in documents]

    def dense_vectors(self, ids: list[str]) -> dict[str, np.ndarray | None]:
        """The dense vectors of ``ids`` (:meth:`fetch_documents`'s)."""
        return {d.id: vector_row(d.embedding) for d in self.fetch_documents(ids)}


def _above(documents: list[Document], threshold: float | None) -> list[Document]:
    if threshold is None:
        return documents
    return [d for d in documents if d.score is not None and d.score >= threshold]


def vector_search(store: Any) -> VectorSearch:
    """The :class:`VectorSearch` of ``store``: the store itself when it implements it, else the server adapter
    (build it once per component, e.g. in ``__init__``: the adapter holds two stock retrievers).

    :raises TypeError: for a store that is neither.
    """
    if isinstance(store, VectorSearch):
        return store
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    if isinstance(store, QdrantDocumentStore):
        return QdrantServerSearch(store)
    msg = (
        f"{type(store).__name__} cannot be searched by the adaptive channels: use EdgeDocumentStore (a local "
        "folder) or qdrant-haystack's QdrantDocumentStore (a Qdrant server)."
    )
    raise TypeError(msg)
