"""EdgeDocumentStore passes Haystack's own document-store test suites, plus the searches the channels need."""

from __future__ import annotations

import pytest
from haystack import Document
from haystack.testing.document_store import (
    CountDocumentsByFilterTest,
    DeleteAllTest,
    DeleteByFilterTest,
    DocumentStoreBaseTests,
)

from adaptive_retrieval.components.stores import EdgeDocumentStore


class TestEdgeDocumentStoreHaystackSuites(
    DocumentStoreBaseTests, DeleteAllTest, DeleteByFilterTest, CountDocumentsByFilterTest
):
    """Haystack's count, write, delete, filter, delete-all, delete-by-filter and count-by-filter suites."""

    @pytest.fixture
    def document_store(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=768, payload_fields_to_index={})
        yield store
        store.close()

    def assert_documents_are_equal(self, received: list[Document], expected: list[Document]) -> None:
        """Order by id, and compare embeddings by direction: Qdrant stores cosine vectors normalised."""
        assert len(received) == len(expected)
        received, expected = sorted(received, key=lambda d: d.id), sorted(expected, key=lambda d: d.id)
        for got, want in zip(received, expected, strict=True):
            assert (got.id, got.content, got.meta, got.score) == (want.id, want.content, want.meta, want.score)
            assert (got.embedding is None) == (want.embedding is None)
            if want.embedding is not None:
                norm = sum(v * v for v in want.embedding) ** 0.5
                assert got.embedding == pytest.approx([v / norm for v in want.embedding], rel=1e-4, abs=1e-6)

    def test_write_documents(self, document_store: EdgeDocumentStore) -> None:
        """The default policy (NONE) overwrites, as qdrant-haystack's store does."""
        doc = Document(content="first")
        assert document_store.write_documents([doc]) == 1
        assert document_store.write_documents([Document(id=doc.id, content="second")]) == 1
        assert [d.content for d in document_store.filter_documents()] == ["second"]


def test_hnsw_ef_is_validated_serialised_and_searched_with(tmp_path) -> None:
    """``hnsw_ef`` reaches the engine's search (both settings find the nearest document) and the YAML."""
    with pytest.raises(ValueError, match="hnsw_ef"):
        EdgeDocumentStore(path=str(tmp_path / "bad"), hnsw_ef=0)
    docs = [Document(content=f"doc {i}", embedding=[1.0, float(i), 0.5, 0.0]) for i in range(20)]
    for ef in (None, 512):
        store = EdgeDocumentStore(path=str(tmp_path / f"ef{ef}"), embedding_dim=4, hnsw_ef=ef)
        try:
            store.write_documents(docs)
            assert store.to_dict()["init_parameters"]["hnsw_ef"] == ef
            assert EdgeDocumentStore.from_dict(store.to_dict()).hnsw_ef == ef
            assert store.search_dense([1.0, 7.0, 0.5, 0.0], top_k=1)[0].content == "doc 7"
        finally:
            store.close()


def test_point_layout_is_qdrant_haystacks() -> None:
    """The embedded store writes what qdrant-haystack writes to a server: same vector names, same point ids."""
    from haystack_integrations.document_stores.qdrant import converters

    from adaptive_retrieval.components.stores.documents import edge_conversion

    assert edge_conversion.DENSE_VECTORS_NAME == converters.DENSE_VECTORS_NAME
    assert edge_conversion.SPARSE_VECTORS_NAME == converters.SPARSE_VECTORS_NAME
    for document_id in ("a", "doc-1#chunk-0", "é" * 300, ""):
        assert edge_conversion.point_id(document_id).hex == converters.convert_id(document_id)


def test_a_query_on_the_embedded_store_never_imports_qdrant_client(tmp_path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from haystack import Document\n"
        "from adaptive_retrieval.components.stores.documents.edge_document_store import EdgeDocumentStore\n"
        f"store = EdgeDocumentStore(path={str(tmp_path / 'q')!r}, embedding_dim=3)\n"
        "store.write_documents([Document(content='x', embedding=[1.0, 0.0, 0.0], meta={'level': 0})])\n"
        "store.filter_documents({'field': 'meta.level', 'operator': '==', 'value': 0})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'qdrant_client'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
