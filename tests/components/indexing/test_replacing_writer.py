"""ReplacingDocumentWriter: new sources are written without a payload-filter scan; changed ones lose stale nodes."""

from __future__ import annotations

from typing import Any

from haystack import Document

from adaptive_retrieval.components.indexing import ReplacingDocumentWriter, SectionSplitter
from adaptive_retrieval.pipelines.store_config import make_store


def _chunks(source: str, text: str) -> list[Document]:
    splitter = SectionSplitter(chunk_words=20, min_chunk_words=5)
    docs = splitter.run(documents=[Document(content=text, meta={"file_path": source})])
    return [Document(id=d.id, content=d.content, meta=d.meta, embedding=[0.1] * 384) for d in docs["documents"]]


class CountingStore:
    """The real local Qdrant store, with its ``filter_documents`` calls counted (a spy, not a mock)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.filters = 0

    def filter_documents(self, *args: Any, **kwargs: Any) -> list[Document]:
        self.filters += 1
        return self.store.filter_documents(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_new_sources_skip_the_scan_and_changed_sources_drop_stale_nodes(store_path: str) -> None:
    store = CountingStore(make_store(path=store_path))
    writer = ReplacingDocumentWriter(document_store=store)
    long_text = "# Title\n\n" + " ".join(f"word{i}" for i in range(100))
    first = _chunks("a.md", long_text) + _chunks("b.md", "# B\n\nshort text about b.")
    assert writer.run(documents=first) == {"documents_written": len(first), "documents_deleted": 0}
    assert store.filters == 0, "new sources need no payload-filter scan"
    assert store.count_documents() == len(first)

    shorter = _chunks("a.md", "# Title\n\nnow only a few words.")
    result = writer.run(documents=shorter)
    a_before = sum(d.meta["source"].endswith("a.md") for d in first)
    assert store.filters == 1, "a source already stored is looked up to find its stale nodes"
    assert result == {"documents_written": len(shorter), "documents_deleted": a_before - len(shorter)}
    assert store.count_documents() == len(first) - a_before + len(shorter)
    # Documents without the splitter's ids are still replaced through the filter.
    foreign = [Document(id="x1", content="x", meta={"doc_id": "custom"}, embedding=[0.1] * 384)]
    writer.run(documents=foreign)
    assert store.filters == 2
