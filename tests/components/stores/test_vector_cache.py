"""The vectors a `serve --workers N` worker keeps from its store host: searches and fetches answer exactly what
the embedded store answers (every field, in order), a write empties what was kept, a host restart too, and the
cache's own bounds. A real host on a real Unix socket."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.types import DuplicatePolicy

from adaptive_retrieval.components.stores import EdgeDocumentStore, RemoteDocumentStore
from adaptive_retrieval.components.stores.caches.vector_cache import CAPACITY_ENV, VectorCache
from adaptive_retrieval.pipelines.processes.store_host import StoreHost, serve_store

LEVEL0 = {"field": "meta.level", "operator": "==", "value": 0}


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, 384))
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _docs(n: int = 30, seed: int = 1) -> list[Document]:
    return [
        Document(
            id=f"d{i}",
            content=f"text {i} word{i % 4}",
            meta={"level": 0, "source": f"s{i % 3}"},
            embedding=list(v),
            sparse_embedding=SparseEmbedding(indices=[i % 4, 10 + i], values=[1.0, 0.5]),
        )
        for i, v in enumerate(_unit(np.random.default_rng(seed), n))
    ]


@pytest.fixture
def host(tmp_path: Path):
    folder = tmp_path / "qdrant"
    writer = EdgeDocumentStore(path=str(folder))
    writer.write_documents(_docs())
    writer.close()
    store_host = StoreHost(folder)
    server = serve_store(store_host, tmp_path / "store.sock")
    yield {"folder": str(folder), "socket": str(tmp_path / "store.sock"), "host": store_host}
    server.shutdown()
    server.server_close()
    store_host.close()


def _stores(host, monkeypatch) -> tuple[RemoteDocumentStore, RemoteDocumentStore]:
    monkeypatch.setenv(CAPACITY_ENV, "0")
    plain = RemoteDocumentStore(socket=host["socket"], path=host["folder"], create=False)
    monkeypatch.setenv(CAPACITY_ENV, "1000")
    kept = RemoteDocumentStore(socket=host["socket"], path=host["folder"], create=False)
    assert plain._vectors is None and kept._vectors is not None
    return plain, kept


def _same(a: list[Document], b: list[Document]) -> None:
    assert [d.to_dict() for d in a] == [d.to_dict() for d in b]
    assert [list(d.__dict__) for d in a] == [list(d.__dict__) for d in b]  # field order too


def test_searches_answer_as_without_the_cache(host, monkeypatch) -> None:
    plain, kept = _stores(host, monkeypatch)
    queries = _unit(np.random.default_rng(7), 6)
    for _ in range(2):  # the second round answers from kept vectors only
        for q in queries:
            _same(
                plain.search_dense(list(q), top_k=8, filters=LEVEL0),
                kept.search_dense(list(q), top_k=8, filters=LEVEL0),
            )
        sparse = SparseEmbedding(indices=[1, 2], values=[1.0, 1.0])
        _same(plain.search_sparse(sparse, top_k=10), kept.search_sparse(sparse, top_k=10))
        ids = ["d5", "missing", "d1", "d5", "d29"]
        _same(plain.fetch_documents(ids), kept.fetch_documents(ids))
        _same(plain.fetch_documents(ids, sparse=True), kept.fetch_documents(ids, sparse=True))
        without = kept.fetch_documents(ids, dense=False)
        _same(plain.fetch_documents(ids, dense=False), without)
        assert without and all(d.embedding is None for d in without)
    assert len(kept._vectors) > 0
    # Without vectors asked for, nothing changes either.
    _same(
        plain.search_dense(list(queries[0]), top_k=5, return_embedding=False),
        kept.search_dense(list(queries[0]), top_k=5, return_embedding=False),
    )
    # Each document has its own vector list: changing one does not change what is kept.
    first = kept.search_dense(list(queries[0]), top_k=1)[0]
    first.embedding[0] = 99.0
    assert kept.search_dense(list(queries[0]), top_k=1)[0].embedding[0] != 99.0


def test_a_write_empties_the_kept_vectors(host, monkeypatch) -> None:
    plain, kept = _stores(host, monkeypatch)
    query = list(_unit(np.random.default_rng(7), 1)[0])
    before = kept.search_dense(query, top_k=30)
    # The same ids written again with other vectors (through the host, as an upload is).
    writer = RemoteDocumentStore(socket=host["socket"], path=host["folder"])
    writer.write_documents(_docs(seed=2), policy=DuplicatePolicy.OVERWRITE)
    after = kept.search_dense(query, top_k=30)
    _same(plain.search_dense(query, top_k=30), after)
    old = {d.id: d.embedding for d in before}
    assert any(d.embedding != old[d.id] for d in after)


def test_a_restarted_host_is_another_generation(host, monkeypatch) -> None:
    _, kept = _stores(host, monkeypatch)
    query = list(_unit(np.random.default_rng(7), 1)[0])
    kept.search_dense(query, top_k=5)
    generation = kept._vectors.generation
    host["host"].token = "restarted"  # what a new host process has: another token, its write count from 0
    kept.search_dense(query, top_k=5)
    assert kept._vectors.generation != generation and kept._vectors.generation[0] == "restarted"


def test_the_stores_of_one_index_keep_each_vector_once(host, monkeypatch) -> None:
    # A query pipeline holds a store object per component; one cache per index and process serves them all.
    _, kept = _stores(host, monkeypatch)
    other = RemoteDocumentStore(socket=host["socket"], path=host["folder"], create=False)
    assert other._vectors is kept._vectors
    hits = kept.search_dense(list(_unit(np.random.default_rng(7), 1)[0]), top_k=8)
    assert other._vectors.lookup(other._vectors.generation, [d.id for d in hits])[1] == []
    monkeypatch.setenv(CAPACITY_ENV, "5")
    assert RemoteDocumentStore(socket=host["socket"], path=host["folder"], create=False)._vectors is not kept._vectors
    elsewhere = RemoteDocumentStore(socket=host["socket"], path=host["folder"], index="Other", create=False)
    assert elsewhere._vectors is not kept._vectors


def test_the_cache_keeps_one_generation_within_its_capacity() -> None:
    cache = VectorCache(capacity=4)
    cache.lookup("g1", [])
    rows = {f"d{i}": [float(i), 0.5] for i in range(3)}
    assert cache.keep("g1", rows) == rows
    kept, missing = cache.lookup("g1", ["d0", "d1", "x"])
    assert kept == {"d0": [0.0, 0.5], "d1": [1.0, 0.5]} and missing == ["x"]
    cache.keep("g1", {"d3": [3.0, 0.0], "d4": None})  # over capacity: the oldest half goes
    assert len(cache) <= 4 and cache.lookup("g1", ["d4"])[0] == {"d4": None}
    assert cache.lookup("g2", ["d3"]) == ({}, ["d3"])  # another generation: emptied
    cache.keep("g1", {"d9": [9.0, 9.0]})  # a late answer of the old generation is not kept
    assert len(cache) == 0
    precise = [0.1, 0.2]  # not a float32 value: kept as float64, exactly
    cache.keep("g2", {"p": precise})
    assert cache.lookup("g2", ["p"])[0] == {"p": precise}
    with pytest.raises(ValueError, match="at least 1"):
        VectorCache(0)


def test_dense_vectors_by_id_come_from_the_kept_vectors_and_follow_writes(host, monkeypatch) -> None:
    plain, kept = _stores(host, monkeypatch)
    ids = ["d5", "missing", "d1", "d5"]
    stored = {d.id: d.embedding for d in plain.fetch_documents(ids)}
    assert {i: v.tolist() for i, v in plain.dense_vectors(ids).items()} == stored
    assert {i: v.tolist() for i, v in kept.dense_vectors(ids).items()} == stored  # asked from the host, then kept
    assert kept._vectors.rows(kept._vectors.generation, ["d5", "d1"])[1] == []
    calls = []
    monkeypatch.setattr(kept, "_call_tagged", lambda *a, **k: calls.append(a))  # a spy: kept vectors need no call
    assert {i: v.tolist() for i, v in kept.dense_vectors(["d1", "d5"]).items()} == {
        "d1": stored["d1"],
        "d5": stored["d5"],
    }
    assert calls == []
    monkeypatch.undo()
    # A write through the host: the next answer any store of this index gets empties the kept vectors.
    writer = RemoteDocumentStore(socket=host["socket"], path=host["folder"])
    writer.write_documents(_docs(seed=2), policy=DuplicatePolicy.OVERWRITE)
    kept.count_documents()
    rewritten = {d.id: d.embedding for d in plain.fetch_documents(ids)}
    assert rewritten != stored
    assert {i: v.tolist() for i, v in kept.dense_vectors(ids).items()} == rewritten
