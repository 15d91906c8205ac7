"""Sparse (BM25 with IDF) channel: Qdrant sparse-vector search that skips itself at zero weight."""

from __future__ import annotations

import functools
from typing import Any

from haystack import Document, component, default_from_dict
from haystack.dataclasses import SparseEmbedding
from haystack_integrations.components.retrievers.qdrant import QdrantSparseEmbeddingRetriever

from components.retrieval.channel import (
    asearch_or_none,
    channel_enabled,
    qdrant_channel_search,
    search_or_none,
)
from components.stores.qdrant_store import store_from_init_parameters


@component
class QdrantSparseRetriever(QdrantSparseEmbeddingRetriever):
    """``QdrantSparseEmbeddingRetriever`` as an adaptive channel named ``sparse``.

    The collection is created with ``sparse_idf=True``, so Qdrant scores BM25 term weights with IDF. Documents
    come back with their dense embedding, which MMR reuses.

    Usage::

        retriever = QdrantSparseRetriever(document_store=store, top_k=20)
        docs = retriever.run(query_sparse_embedding=sparse, weights={"sparse": 0.5})["documents"]
    """

    channel = "sparse"

    def __init__(self, document_store: Any, top_k: int = 20, return_embedding: bool = True, **kwargs: Any) -> None:
        """Same parameters as ``QdrantSparseEmbeddingRetriever``."""
        # @component rebuilds the class, so zero-argument super() cannot be used here.
        QdrantSparseEmbeddingRetriever.__init__(
            self, document_store=document_store, top_k=top_k, return_embedding=return_embedding, **kwargs
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QdrantSparseRetriever:
        """Deserialise, keeping the document store's own class."""
        return default_from_dict(cls, store_from_init_parameters(data))

    @component.output_types(documents=list[Document] | None)
    def run(
        self,
        query_sparse_embedding: SparseEmbedding,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        weights: dict[str, float] | None = None,
    ) -> dict[str, list[Document] | None]:
        """Top ``top_k`` chunks by BM25; nothing when the query has no indexable term or the channel is off.

        A failing store is logged and gives ``documents=None``, which the joiner skips.
        """
        if not channel_enabled(self.channel, weights) or not query_sparse_embedding.indices:
            return {"documents": []}

        def search() -> list[Document]:
            store_query = functools.partial(
                self._document_store._query_by_sparse, query_sparse_embedding=query_sparse_embedding
            )
            return qdrant_channel_search(
                self,
                store_query,
                lambda: QdrantSparseEmbeddingRetriever.run(
                    self, query_sparse_embedding=query_sparse_embedding, filters=filters, top_k=top_k
                ),
                filters,
                top_k,
            )

        return {"documents": search_or_none(self.channel, search)}

    @component.output_types(documents=list[Document] | None)
    async def run_async(
        self,
        query_sparse_embedding: SparseEmbedding,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        weights: dict[str, float] | None = None,
    ) -> dict[str, list[Document] | None]:
        """Async variant of :meth:`run` (needs a Qdrant server: local mode is synchronous)."""
        if not channel_enabled(self.channel, weights) or not query_sparse_embedding.indices:
            return {"documents": []}

        async def search() -> list[Document]:
            found = await QdrantSparseEmbeddingRetriever.run_async(
                self, query_sparse_embedding=query_sparse_embedding, filters=filters, top_k=top_k
            )
            return found["documents"]

        return {"documents": await asearch_or_none(self.channel, search)}
