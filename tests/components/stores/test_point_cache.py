"""The documents an embedded store keeps in its process: searches and fetches answer exactly what the shard
answers without the cache (every field, in order), a write (overwrite, delete) is seen by the next search,
nothing read while a write runs is kept, and the cache's own bounds. A real Qdrant Edge shard."""

from __future__ import annotations

import pickle
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.stores.caches.generation_cache import GenerationCache
from adaptive_retrieval.components.stores.caches.point_cache import CAPACITY_ENV, PointCache
from adaptive_retrieval.components.stores.documents.edge_document_store import EdgeDocumentStore, release_all_clients

LEVEL0 = {"field": "meta.level", "operator": "==", "value": 0}


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, 384))
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _docs(n: int = 30, seed: int = 1, text: str = "text") -> list[Document]:
    return [
        Document(
            id=f"d{i}",
            content=f"{text} {i} word{i % 4}",
            meta={"level": i % 2, "source": f"s{i % 3}", "path": ["a", {"b": i}]},
            embedding=list(v),
            sparse_embedding=SparseEmbedding(indices=[i % 4, 10 + i], values=[1.0, 0.5]),
        )
        for i, v in enumerate(_unit(np.random.default_rng(seed), n))
    ]


def _fields(documents: list[Document]) -> list[dict]:
    return [dict(d.__dict__) for d in documents]


@pytest.fixture
def stores(tmp_path: Path, monkeypatch):
    """The same folder read with the cache and, in another process-like registry entry, without it."""
    writer = EdgeDocumentStore(path=str(tmp_path / "qdrant"))
    writer.write_documents(_docs())
    writer.close()
    release_all_clients()
    monkeypatch.setenv(CAPACITY_ENV, "1000")
    cached = EdgeDocumentStore(path=str(tmp_path / "qdrant"))
    assert cached._opened().points is not None
    yield cached
    cached.close()
    release_all_clients()


def _plain(store: EdgeDocumentStore, call):
    """What ``call(store)`` answers when the shard is read without the cache."""
    opened = store._opened()
    points, opened.points = opened.points, None
    try:
        return call(store)
    finally:
        opened.points = points


CALLS = {
    "dense with vectors": lambda s: s.search_dense(list(_unit(np.random.default_rng(7), 1)[0]), top_k=12),
    "dense without vectors": lambda s: s.search_dense(
        list(_unit(np.random.default_rng(8), 1)[0]), top_k=12, return_embedding=False
    ),
    "dense filtered": lambda s: s.search_dense(list(_unit(np.random.default_rng(9), 1)[0]), top_k=8, filters=LEVEL0),
    "sparse": lambda s: s.search_sparse(SparseEmbedding(indices=[1, 12], values=[1.0, 1.0]), top_k=10),
    "fetch": lambda s: s.fetch_documents(["d3", "nope", "d1", "d3"]),
    "fetch without vectors": lambda s: s.fetch_documents(["d5", "d2"], dense=False),
    "fetch with sparse": lambda s: s.fetch_documents(["d5", "d2"], sparse=True),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_answers_equal_the_shard_read_without_the_cache(stores: EdgeDocumentStore, name: str) -> None:
    call = CALLS[name]
    expected = _plain(stores, call)
    assert expected
    for _ in range(2):  # the first call fills the cache, the second is answered from it
        assert _fields(call(stores)) == _fields(expected)


def test_answers_are_copies_a_caller_may_change(stores: EdgeDocumentStore) -> None:
    call = CALLS["dense with vectors"]
    first = call(stores)
    first[0].meta["path"][1]["b"] = "changed"
    first[0].embedding[0] = 9.0
    assert _fields(call(stores)) == _fields(_plain(stores, call))


def test_a_write_is_seen_by_the_next_search(stores: EdgeDocumentStore) -> None:
    call = CALLS["dense with vectors"]
    call(stores)
    assert len(stores._opened().points) > 0
    stores.write_documents(_docs(text="rewritten"))  # same ids, new content
    assert all(d.content.startswith("rewritten") for d in call(stores))
    gone = [d.id for d in call(stores)[:3]]
    stores.delete_documents(gone)
    assert not {d.id for d in call(stores)} & set(gone)
    assert _fields(call(stores)) == _fields(_plain(stores, call))


def test_nothing_read_while_a_write_runs_is_kept(stores: EdgeDocumentStore) -> None:
    opened = stores._opened()
    opened.begin_write()
    try:
        assert opened.stable_generation() is None
        CALLS["dense with vectors"](stores)
        assert len(opened.points) == 0
    finally:
        opened.end_write()
    CALLS["dense with vectors"](stores)
    assert len(opened.points) > 0


def test_searches_during_writes_answer_one_state_or_the_other(stores: EdgeDocumentStore) -> None:
    """Each round rewrites every document with new text and a new vector; every answer read meanwhile must pair
    each hit's score with its own vector (a hit of one state served with a document kept from another would not)."""
    query = _unit(np.random.default_rng(7), 1)[0]
    ids = {d.id for d in _docs()}
    stop = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for round_ in range(20):
                stores.write_documents(_docs(seed=100 + round_, text=f"round{round_}"))
        except BaseException as err:
            errors.append(err)
        finally:
            stop.set()

    writer = threading.Thread(target=write)
    writer.start()
    answers = 0
    while not stop.is_set():
        for document in stores.search_dense(list(query), top_k=12):
            assert document.id in ids and document.embedding is not None
            assert abs(document.score - float(np.dot(query, document.embedding))) < 1e-4
        answers += 1
        # A pause between reads: a reader that never lets go of the GIL starves the writer, whose every return from
        # the shard waits out the 5 ms switch interval (8 rounds took 12 s to 278 s; with the pause, under 2 s).
        time.sleep(0.0005)
    writer.join()
    assert not errors and answers >= 20
    call = CALLS["dense with vectors"]
    assert _fields(call(stores)) == _fields(_plain(stores, call))


def test_a_read_that_spans_a_write_is_not_served_from_the_cache(stores: EdgeDocumentStore) -> None:
    """The count read before a search no longer matches once a write has started: the kept documents of the
    earlier state are then not paired with hits of the later one (the search is made again without the cache)."""
    opened = stores._opened()
    CALLS["dense with vectors"](stores)
    before = opened.stable_generation()
    ids = list(opened.points._points._values)[:3]
    assert stores._kept_points(opened, before, ids) is not None
    stores.write_documents(_docs(text="rewritten"))
    assert stores._kept_points(opened, before, ids) is None


def test_zero_turns_the_cache_off(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(CAPACITY_ENV, "0")
    store = EdgeDocumentStore(path=str(tmp_path / "qdrant"))
    store.write_documents(_docs(5))
    assert store._opened().points is None
    assert len(CALLS["dense with vectors"](store)) == 5
    store.close()
    release_all_clients()


def test_the_cache_keeps_one_generation_within_its_capacity() -> None:
    cache: GenerationCache[str, int] = GenerationCache(capacity=4)
    cache.lookup(2, [])
    cache.keep(2, {"a": 1, "b": 2, "c": 3})
    assert cache.lookup(2, ["a", "x"]) == ({"a": 1}, ["x"])
    cache.keep(2, {"d": 4, "e": 5})  # over capacity: the oldest half goes
    assert len(cache) <= 4 and cache.lookup(2, ["e"])[0] == {"e": 5}
    assert cache.lookup(4, ["e"]) == ({}, ["e"])  # another generation: emptied
    cache.keep(2, {"z": 0})  # a late read of the old generation is not kept
    assert len(cache) == 0
    with pytest.raises(ValueError, match="at least 1"):
        PointCache(0)


def test_dense_vectors_by_id_are_the_documents_own_with_and_without_the_cache(stores: EdgeDocumentStore) -> None:
    ids = ["d3", "nope", "d1", "d3"]
    expected = {d.id: d.embedding for d in _plain(stores, lambda s: s.fetch_documents(ids))}
    for read in (lambda s: s.dense_vectors(ids), lambda s: _plain(s, lambda t: t.dense_vectors(ids))):
        vectors = read(stores)
        assert set(vectors) == {"d3", "d1"}  # an id the shard does not hold is left out
        for i, vector in vectors.items():
            assert vector.dtype == np.float32 and vector.tolist() == expected[i]  # the stored values, exactly
            with pytest.raises(ValueError, match="read-only"):
                vector[0] = 9.0  # the cache's own row: nobody may change it
    assert stores.dense_vectors([]) == {}


# -- the same answers as a store host sends them (components/stores/documents/wire_documents.py) -------------------

WIRE_CALLS = {
    "dense with vectors": lambda s: s.wire_search_dense(list(_unit(np.random.default_rng(7), 1)[0]), top_k=12),
    "dense without vectors": lambda s: s.wire_search_dense(
        list(_unit(np.random.default_rng(8), 1)[0]), top_k=12, return_embedding=False
    ),
    "dense filtered": lambda s: s.wire_search_dense(
        list(_unit(np.random.default_rng(9), 1)[0]), top_k=8, filters=LEVEL0
    ),
    "sparse": lambda s: s.wire_search_sparse(SparseEmbedding(indices=[1, 12], values=[1.0, 1.0]), top_k=10),
    "fetch": lambda s: s.wire_fetch_documents(["d3", "nope", "d1", "d3"]),
    "fetch without vectors": lambda s: s.wire_fetch_documents(["d5", "d2"], dense=False),
    "fetch with sparse": lambda s: s.wire_fetch_documents(["d5", "d2"], sparse=True),
}


@pytest.mark.parametrize("name", list(WIRE_CALLS))
@pytest.mark.parametrize("cached", [True, False], ids=["cached", "uncached"])
def test_wire_answers_unpack_to_the_documents_the_store_returns(stores: EdgeDocumentStore, name: str, cached: bool):
    expected = _plain(stores, CALLS[name])
    for _ in range(2):  # the first call fills the cache, the second is answered from it
        wire = WIRE_CALLS[name](stores) if cached else _plain(stores, WIRE_CALLS[name])
        arrived = pickle.loads(pickle.dumps(wire, pickle.HIGHEST_PROTOCOL))
        documents = arrived.documents()
        assert [list(d.__dict__) for d in documents] == [list(d.__dict__) for d in expected]  # field order too
        assert _fields(documents) == _fields(expected)
        assert all(type(d) is Document for d in documents)


def test_an_empty_wire_answer_unpacks_to_no_documents(stores: EdgeDocumentStore) -> None:
    assert stores.wire_fetch_documents([]).documents() == []
    assert stores.wire_search_sparse(SparseEmbedding(indices=[], values=[])).documents() == []
