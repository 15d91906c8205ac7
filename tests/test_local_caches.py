"""Local-mode caches of SharedQdrantDocumentStore (sparse index, converted points) give exactly what Qdrant gives."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.types import DuplicatePolicy
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

from components.stores import local_sparse_index
from components.stores.local_sparse_index import LocalSparseIndex
from pipelines.store_config import make_store

VOCABULARY = 400


def _sparse(rng: np.random.Generator, terms: int) -> SparseEmbedding:
    # Zipf-like term choice, so document frequencies (hence IDF) vary from 1 to most of the corpus.
    weights = 1.0 / np.arange(1, VOCABULARY + 1)
    chosen = rng.choice(VOCABULARY, size=terms, replace=False, p=weights / weights.sum())
    return SparseEmbedding(indices=sorted(int(i) for i in chosen), values=list(rng.uniform(0.2, 3.0, terms)))


def _documents(rng: np.random.Generator, count: int, start: int = 0) -> list[Document]:
    return [
        Document(
            id=f"doc-{i}",
            content=f"passage {i}",
            meta={"level": i % 2},
            embedding=list(rng.normal(size=384)),
            sparse_embedding=_sparse(rng, int(rng.integers(3, 30))),
        )
        for i in range(start, start + count)
    ]


def _stock(store: QdrantDocumentStore, query: SparseEmbedding, **kwargs: object) -> list[Document]:
    """Qdrant's own local-mode sparse search (the stock method, bypassing the index)."""
    return QdrantDocumentStore._query_by_sparse(store, query, **kwargs)


def _assert_same(fast: list[Document], stock: list[Document], exact: bool = True) -> None:
    if exact:
        assert [d.score for d in fast] == [d.score for d in stock]  # bit-identical float32 scores
    else:
        # Qdrant's dense scores vary in the last float32 bits between identical calls (BLAS alignment).
        assert [d.score for d in fast] == pytest.approx([d.score for d in stock], rel=1e-5)
    assert [d.id for d in fast] == [d.id for d in stock]
    assert [d.meta for d in fast] == [d.meta for d in stock]


@pytest.mark.parametrize("sparse_idf", [True, False])
def test_same_documents_and_scores_as_qdrant(store_path: str, sparse_idf: bool) -> None:
    rng = np.random.default_rng(7)
    store = make_store(path=store_path, sparse_idf=sparse_idf)
    store.write_documents(_documents(rng, 300))
    queries = [_sparse(rng, int(rng.integers(1, 8))) for _ in range(40)]
    client = store.client._shared.client

    def not_called(*args: object, **kwargs: object) -> None:
        raise AssertionError("the index path must not run Qdrant's search")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(client, "query_points", not_called)
        fast = [store._query_by_sparse(query, top_k=25) for query in queries]
    for query, found in zip(queries, fast, strict=True):
        _assert_same(found, _stock(store, query, top_k=25))


def test_threshold_scaling_and_embeddings_match(store_path: str) -> None:
    rng = np.random.default_rng(3)
    store = make_store(path=store_path)
    store.write_documents(_documents(rng, 120))
    query = _sparse(rng, 5)
    scores = [d.score for d in _stock(store, query, top_k=50)]
    threshold = float(np.median(scores))
    for kwargs in ({"score_threshold": threshold}, {"scale_score": True}, {"return_embedding": True}):
        fast = store._query_by_sparse(query, top_k=50, **kwargs)
        stock = _stock(store, query, top_k=50, **kwargs)
        _assert_same(fast, stock)
        assert [d.embedding for d in fast] == [d.embedding for d in stock]
        assert [d.sparse_embedding for d in fast] == [d.sparse_embedding for d in stock]
    assert all(d.score > threshold for d in store._query_by_sparse(query, top_k=50, score_threshold=threshold))


def test_writes_overwrites_and_deletes_rebuild_the_index(store_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[str] = []
    original = LocalSparseIndex.from_collection.__func__  # type: ignore[attr-defined]

    def counting(cls: type[LocalSparseIndex], client: object, name: str, vector: str) -> LocalSparseIndex:
        builds.append(name)
        return original(cls, client, name, vector)

    monkeypatch.setattr(local_sparse_index.LocalSparseIndex, "from_collection", classmethod(counting))
    rng = np.random.default_rng(11)
    store = make_store(path=store_path)
    store.write_documents(_documents(rng, 100))
    query = SparseEmbedding(indices=[0, 1, 2], values=[1.0, 1.0, 1.0])

    def check() -> list[Document]:
        fast = store._query_by_sparse(query, top_k=200)
        _assert_same(fast, _stock(store, query, top_k=200))
        return fast

    check()
    check()
    assert len(builds) == 1  # reads reuse the index

    store.write_documents(_documents(rng, 50, start=100))  # new points, new document frequencies
    assert len(check()) > 0 and len(builds) == 2

    changed = replace(
        _documents(rng, 1, start=5)[0], sparse_embedding=SparseEmbedding(indices=[0, 1, 2], values=[50.0] * 3)
    )
    store.write_documents([changed], policy=DuplicatePolicy.OVERWRITE)
    assert check()[0].id == "doc-5" and len(builds) == 3

    store.delete_documents(["doc-5"])
    assert "doc-5" not in [d.id for d in check()] and len(builds) == 4


def test_filters_go_to_qdrant_and_bad_queries_fail_clearly(store_path: str) -> None:
    rng = np.random.default_rng(5)
    store = make_store(path=store_path)
    store.write_documents(_documents(rng, 60))
    query = _sparse(rng, 6)
    where = {"field": "meta.level", "operator": "==", "value": 0}
    filtered = store._query_by_sparse(query, filters=where, top_k=10)
    _assert_same(filtered, _stock(store, query, filters=where, top_k=10))
    assert all(d.meta["level"] == 0 for d in filtered)
    with pytest.raises(ValueError, match="unique"):
        store._query_by_sparse(SparseEmbedding(indices=[1, 1], values=[1.0, 2.0]), top_k=5)
    assert store._query_by_sparse(SparseEmbedding(indices=[10**9], values=[1.0]), top_k=5) == []


def test_empty_collection_returns_nothing(store_path: str) -> None:
    store = make_store(path=store_path)
    assert store._query_by_sparse(SparseEmbedding(indices=[1], values=[1.0]), top_k=5) == []


# -- the point cache behind local-mode dense/sparse searches and id lookups ------------------------------------------


def _stock_dense(store: QdrantDocumentStore, query: list[float], **kwargs: object) -> list[Document]:
    return QdrantDocumentStore._query_by_embedding(store, query, **kwargs)


def test_dense_search_and_lookups_match_qdrant(store_path: str) -> None:
    rng = np.random.default_rng(21)
    store = make_store(path=store_path)
    documents = _documents(rng, 150)
    store.write_documents(documents)
    for _ in range(10):
        query = list(rng.normal(size=384))
        for return_embedding in (False, True):
            fast = store._query_by_embedding(query, top_k=30, return_embedding=return_embedding)
            stock = _stock_dense(store, query, top_k=30, return_embedding=return_embedding)
            _assert_same(fast, stock, exact=False)
            # Local mode re-normalises its stored vectors in place on every cosine search (an ulp of drift).
            for got, want in zip(fast, stock, strict=True):
                assert (got.embedding is None) == (want.embedding is None)
                assert got.embedding is None or np.allclose(got.embedding, want.embedding, rtol=0, atol=1e-6)
            assert [d.sparse_embedding for d in fast] == [d.sparse_embedding for d in stock]
    ids = ["doc-3", "missing", "doc-7", "doc-3"]
    got, want = store.get_documents_by_id(ids), QdrantDocumentStore.get_documents_by_id(store, ids)
    assert [(d.id, d.content, d.meta, d.sparse_embedding) for d in got] == [
        (d.id, d.content, d.meta, d.sparse_embedding) for d in want
    ]
    dense_only = store.cached_documents(["doc-7"], vectors="dense")
    assert dense_only is not None and dense_only[0].sparse_embedding is None
    assert np.allclose(
        dense_only[0].embedding, QdrantDocumentStore.get_documents_by_id(store, ["doc-7"])[0].embedding, atol=1e-6
    )


def test_handed_out_documents_are_copies_and_writes_clear_the_cache(store_path: str) -> None:
    rng = np.random.default_rng(4)
    store = make_store(path=store_path)
    store.write_documents(_documents(rng, 40))
    first = store.get_documents_by_id(["doc-1"])[0]
    first.meta["level"] = 99  # a caller changing its copy (Haystack warns about this, users still do it)
    first.embedding[0] = 123.0
    again = store.get_documents_by_id(["doc-1"])[0]
    assert again.meta["level"] == 1 and again.embedding[0] != 123.0

    store.write_documents([replace(again, content="rewritten", meta={"level": 5})], policy=DuplicatePolicy.OVERWRITE)
    now = store.get_documents_by_id(["doc-1"])[0]
    assert now.content == "rewritten" and now.meta == {"level": 5}
    store.delete_documents(["doc-1"])
    assert store.get_documents_by_id(["doc-1"]) == []


def test_cache_is_bounded_and_can_be_switched_off(store_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from components.stores.local_point_cache import LocalPointCache

    rng = np.random.default_rng(9)
    store = make_store(path=store_path)
    store.write_documents(_documents(rng, 30))
    shared = store.client._shared
    shared.point_caches[store.index] = LocalPointCache(capacity=10)
    store.get_documents_by_id([f"doc-{i}" for i in range(30)])
    assert len(shared.point_caches[store.index]) == 10
    monkeypatch.setenv("ADAPTIVE_LOCAL_CACHE", "0")
    assert store.cached_documents(["doc-1"]) is None
    assert [d.id for d in store.get_documents_by_id(["doc-1"])] == ["doc-1"]
