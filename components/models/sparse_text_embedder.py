"""Sparse BM25 query embedding for Qdrant's sparse channel."""

from __future__ import annotations

from typing import Any

from haystack import component
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.models.bm25_encoder import bm25_model


@component
class Bm25TextEmbedder:
    """Turns a query into a sparse vector of its distinct (stemmed, stop-word-free) terms.

    Usage::

        embedder = Bm25TextEmbedder()
        sparse = embedder.run("__init__ keyword arguments")["sparse_embedding"]
    """

    def __init__(self, language: str = "english", engine: str = "fastembed") -> None:
        """:param language: Snowball stemmer and stop-word language (must match the document embedder).
        :param engine: ``fastembed`` or ``edge`` (Qdrant Edge's BM25); must match the document embedder."""
        self.language = language
        self.engine = engine
        self._model: Any = None

    def warm_up(self) -> None:
        """Load the BM25 tokenizer and stemmer."""
        if self._model is None:
            self._model = bm25_model(self.language, engine=self.engine)

    @component.output_types(sparse_embedding=SparseEmbedding)
    def run(self, text: str) -> dict[str, Any]:
        """Sparse embedding of ``text`` (empty when it holds only stop words)."""
        if not isinstance(text, str) or not text.strip():
            msg = "The query is empty: pass a non-empty question or keywords."
            raise ValueError(msg)
        self.warm_up()
        emb = next(iter(self._model.query_embed(text)))
        return {"sparse_embedding": SparseEmbedding(indices=emb.indices.tolist(), values=emb.values.tolist())}
