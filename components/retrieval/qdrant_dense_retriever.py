"""Dense channel: Qdrant vector search that skips itself when the router gives it no weight."""

from __future__ import annotations

import functools
from typing import Any

from haystack import Document, component, default_from_dict
from haystack_integrations.components.retrievers.qdrant import QdrantEmbeddingRetriever

from components.retrieval.channel import (
    asearch_or_none,
    channel_enabled,
    qdrant_channel_search,
    search_or_none,
)
from components.stores.qdrant_store import store_from_init_parameters


@component
class QdrantDenseRetriever(QdrantEmbeddingRetriever):
    """``QdrantEmbeddingRetriever`` as an adaptive channel named ``dense``.

    Differences from the stock retriever: it returns embeddings by default (MMR reuses them), checks the query
    dimension against the store with a clear error, skips the search when ``weights["dense"] == 0``, and keeps
    the shared-client store type when loaded from YAML.

    Usage::

        retriever = QdrantDenseRetriever(document_store=store, top_k=20)
        docs = retriever.run(query_embedding=vector, weights={"dense": 0.5})["documents"]
    """

    channel = "dense"

    def __init__(self, document_store: Any, top_k: int = 20, return_embedding: bool = True, **kwargs: Any) -> None:
        """Same parameters as ``QdrantEmbeddingRetriever`` (``filters``, ``scale_score``, ``score_threshold``...)."""
        # @component rebuilds the class, so zero-argument super() cannot be used here.
        QdrantEmbeddingRetriever.__init__(
            self, document_store=document_store, top_k=top_k, return_embedding=return_embedding, **kwargs
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QdrantDenseRetriever:
        """Deserialise, keeping the document store's own class."""
        return default_from_dict(cls, store_from_init_parameters(data))

    @component.output_types(documents=list[Document] | None)
    def run(
        self,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        weights: dict[str, float] | None = None,
    ) -> dict[str, list[Document] | None]:
        """Top ``top_k`` chunks by cosine similarity; no search when the router disabled this channel.

        A failing store (e.g. a server that is down) is logged and gives ``documents=None``, which the joiner
        skips, so the query goes on with the other channels.

        :raises ValueError: when the query embedding's dimension differs from the collection's.
        """
        if not channel_enabled(self.channel, weights):
            return {"documents": []}

        def search() -> list[Document]:
            # Opening the store first surfaces a collection/config dimension conflict with Qdrant's own message.
            self._document_store._initialize_client()
            expected = self._document_store.embedding_dim
            if len(query_embedding) != expected:
                msg = (
                    f"Query embedding has dimension {len(query_embedding)} but the collection "
                    f"'{self._document_store.index}' stores {expected}-d vectors: use the model the index was "
                    "built with."
                )
                raise ValueError(msg)
            store_query = functools.partial(self._document_store._query_by_embedding, query_embedding=query_embedding)
            return qdrant_channel_search(
                self,
                store_query,
                lambda: QdrantEmbeddingRetriever.run(
                    self, query_embedding=query_embedding, filters=filters, top_k=top_k
                ),
                filters,
                top_k,
            )

        return {"documents": search_or_none(self.channel, search)}

    @component.output_types(documents=list[Document] | None)
    async def run_async(
        self,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        weights: dict[str, float] | None = None,
    ) -> dict[str, list[Document] | None]:
        """Async variant of :meth:`run` (needs a Qdrant server: local mode is synchronous)."""
        if not channel_enabled(self.channel, weights):
            return {"documents": []}

        async def search() -> list[Document]:
            found = await QdrantEmbeddingRetriever.run_async(
                self, query_embedding=query_embedding, filters=filters, top_k=top_k
            )
            return found["documents"]

        return {"documents": await asearch_or_none(self.channel, search)}
