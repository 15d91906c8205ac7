"""Small real indexes of the retrieval tests: one-chunk passages keyed by title, embedded (BM25 + ONNX dense) and
written to a Qdrant Edge store."""

from __future__ import annotations

from typing import Any

from haystack import Document

from adaptive_retrieval.components.ids import stable_id
from adaptive_retrieval.components.models import Bm25DocumentEmbedder, OnnxDocumentEmbedder


def passage(title: str, text: str) -> Document:
    """A one-chunk passage as the indexing pipeline writes it (level 0, its own document)."""
    return Document(
        id=stable_id("test", title),
        content=text,
        meta={"doc_id": stable_id("doc", title), "title": title, "level": 0, "section_path": []},
    )


class PassageWriter:
    """Embeds passages with BM25 and ONNX dense vectors (title included, as the indexing YAML does) and writes
    them to ``store``."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.sparse = Bm25DocumentEmbedder(meta_fields_to_embed=["title"], progress_bar=False)
        self.dense = OnnxDocumentEmbedder(meta_fields_to_embed=["title"], progress_bar=False)

    def write(self, passages: dict[str, str]) -> list[Document]:
        """Write ``{title: text}`` (overwriting passages of the same title); returns the documents, unembedded."""
        docs = [passage(t, x) for t, x in passages.items()]
        embedded = self.dense.run(documents=self.sparse.run(documents=docs)["documents"])["documents"]
        self.store.write_documents(embedded, policy="overwrite")
        return docs
