"""Sparse BM25 document embeddings (term-frequency weights) for Qdrant's sparse channel."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from haystack import Document, component
from haystack.dataclasses import SparseEmbedding
from tqdm.auto import tqdm

from adaptive_retrieval.components.models.bm25_encoder import bm25_model


@component
class Bm25DocumentEmbedder:
    """Adds a BM25 ``sparse_embedding`` to each document; Qdrant supplies the IDF at query time.

    Usage::

        embedder = Bm25DocumentEmbedder(meta_fields_to_embed=["title"])
        docs = embedder.run([Document(content="The while statement")])["documents"]
    """

    def __init__(
        self,
        language: str = "english",
        batch_size: int = 256,
        progress_bar: bool = True,
        meta_fields_to_embed: list[str] | None = None,
        engine: str = "fastembed",
    ) -> None:
        """
        :param language: Snowball stemmer and stop-word language.
        :param batch_size: documents per batch.
        :param progress_bar: show a tqdm bar.
        :param meta_fields_to_embed: meta fields indexed with the content (titles make good keywords).
        :param engine: ``fastembed`` or ``edge`` (Qdrant Edge's BM25); the query embedder must use the same.
        """
        self.engine = engine
        self.language = language
        self.batch_size = batch_size
        self.progress_bar = progress_bar
        self.meta_fields_to_embed = meta_fields_to_embed or []
        self._model: Any = None

    def warm_up(self) -> None:
        """Load the BM25 tokenizer and stemmer."""
        if self._model is None:
            self._model = bm25_model(self.language, engine=self.engine)

    def _text(self, doc: Document) -> str:
        parts = []
        for field in self.meta_fields_to_embed:
            value = doc.meta.get(field)
            if value:
                parts.append(" ".join(value) if isinstance(value, list) else str(value))
        parts.append(doc.content or "")
        return "\n".join(parts)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Return copies of ``documents`` with ``sparse_embedding`` set."""
        self.warm_up()
        texts = [self._text(d) for d in documents]
        out: list[Document] = []
        with tqdm(total=len(texts), desc="sparse embedding", unit="doc", disable=not self.progress_bar) as bar:
            for doc, emb in zip(documents, self._model.embed(texts, batch_size=self.batch_size), strict=True):
                sparse = SparseEmbedding(indices=emb.indices.tolist(), values=emb.values.tolist())
                out.append(replace(doc, sparse_embedding=sparse))
                bar.update(1)
        return {"documents": out}
