"""Document ↔ Edge point conversion and the write-side helpers: pure functions, no store."""

from __future__ import annotations

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.stores.documents.edge_conversion import (
    DENSE_VECTORS_NAME,
    SPARSE_VECTORS_NAME,
    check_documents,
    document_to_point,
    first_per_id,
    last_per_id,
    point_id,
    write_bytes,
)
from adaptive_retrieval.components.stores.documents.edge_queries import dense_query, query_request, sparse_query


def test_point_ids_are_deterministic_uuids() -> None:
    assert point_id("a") == point_id("a") != point_id("b")


def test_a_document_becomes_a_point_with_named_vectors() -> None:
    document = Document(
        id="d1",
        content="text",
        meta={"level": 0},
        embedding=[0.1, 0.2],
        sparse_embedding=SparseEmbedding(indices=[3], values=[1.5]),
    )
    point = document_to_point(document)
    text = repr(point)
    assert DENSE_VECTORS_NAME in text and SPARSE_VECTORS_NAME in text and "d1" in text


def test_duplicates_keep_the_last_or_the_first() -> None:
    docs = [Document(id="a", content="1"), Document(id="a", content="2"), Document(id="b", content="3")]
    assert [d.content for d in last_per_id(docs)] == ["2", "3"]
    assert [d.content for d in first_per_id(docs)] == ["1", "3"]


def test_write_bytes_grows_with_the_text() -> None:
    small, large = [Document(content="a")], [Document(content="a" * 10_000)]
    assert write_bytes(large, 384) > write_bytes(small, 384) > 0


def test_check_documents_refuses_wrong_input() -> None:
    with pytest.raises(ValueError, match="list of haystack Document"):
        check_documents("not a list", 2, "idx")
    with pytest.raises(ValueError, match="dimension 3"):
        check_documents([Document(content="x", embedding=[0.0, 0.0, 0.0])], 2, "idx")
    check_documents([Document(content="x", embedding=[0.0, 0.0])], 2, "idx")


def test_queries_are_checked_before_they_reach_the_engine() -> None:
    with pytest.raises(ValueError, match="dimension 2"):
        dense_query([0.1, 0.2], 384, "idx")
    with pytest.raises(ValueError, match="repeat an index"):
        sparse_query(SparseEmbedding(indices=[1, 1], values=[1.0, 2.0]))
    assert sparse_query(SparseEmbedding(indices=[], values=[])) is None
    request = query_request(dense_query([0.0] * 4, 4, "idx"), 5, None, return_embedding=False)
    assert "limit: 5" in repr(request) or "limit=5" in repr(request)
