"""The document stores the channels search: Qdrant Edge embedded (always), qdrant-haystack's store on
qdrant-client's in-process database (always: the server path's code without a server) and a Qdrant server (when
QDRANT_URL is set) under one contract, plus what only the embedded store has to get right (sharing, locking, bad
folders)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError

from adaptive_retrieval.components.retrieval import DenseRetriever, SparseRetriever
from adaptive_retrieval.components.retrieval.channel import channel_documents
from adaptive_retrieval.components.stores import RemoteDocumentStore
from adaptive_retrieval.components.stores.documents.edge_document_store import EdgeDocumentStore, StoreFormatError
from adaptive_retrieval.components.stores.documents.vector_search import QdrantServerSearch, vector_search
from adaptive_retrieval.pipelines.processes.store_host import StoreHost, serve_store
from adaptive_retrieval.pipelines.store_config import make_store

CHUNKS = {"field": "meta.level", "operator": "==", "value": 0}


def corpus(n: int = 400, dim: int = 384, seed: int = 0) -> list[Document]:
    """Level-1 nodes crowd the collection (3 of every 4 points), as section summaries do."""
    rng = np.random.default_rng(seed)
    return [
        Document(
            id=f"d{i}",
            content=f"node {i}",
            meta={"level": 0 if i % 4 == 0 else 1, "doc_id": f"src{i % 9}"},
            embedding=rng.standard_normal(dim).tolist(),
            sparse_embedding=SparseEmbedding(indices=[i % 7, 7 + i % 5, 20 + i % 11], values=[1.0, 0.5, 0.25]),
        )
        for i in range(n)
    ]


def _server_store():
    url = os.environ.get("QDRANT_URL")
    if not url:
        pytest.skip("QDRANT_URL is not set: no Qdrant server to run the server half of the contract against")
    return make_store(url=url, index="adaptive_contract_test", recreate_index=True)


@pytest.fixture(params=["edge", "remote", "in-process", pytest.param("server", marks=pytest.mark.server)])
def store(request, tmp_path):
    if request.param == "server":
        yield _server_store()
        return
    if request.param == "remote":  # a worker's store of `serve --workers N`: the shard is open in the store host
        host = StoreHost(tmp_path / "edge")
        server = serve_store(host, tmp_path / "store.sock")
        remote = RemoteDocumentStore(socket=str(tmp_path / "store.sock"), path=str(tmp_path / "edge"))
        yield remote
        remote.close()
        server.shutdown()
        server.server_close()
        host.close()
        return
    if request.param == "in-process":
        # The server path's store and retrievers on qdrant-client's in-process database: no network needed.
        local = make_store(url=":memory:", index="adaptive_contract_test")
        yield local
        local.close()
        return
    edge = EdgeDocumentStore(path=str(tmp_path / "edge"))
    yield edge
    edge.close()


def test_contract_dense_and_sparse_searches_filter_natively(store) -> None:
    store.write_documents(corpus())
    search = vector_search(store)
    q = np.random.default_rng(5).standard_normal(384).tolist()
    hits = search.search_dense(q, top_k=12, filters=CHUNKS)
    assert len(hits) == 12 and all(d.meta["level"] == 0 for d in hits)
    assert [d.score for d in hits] == sorted((d.score for d in hits), reverse=True)
    assert hits[0].embedding is not None and len(hits[0].embedding) == 384
    sparse = search.search_sparse(SparseEmbedding(indices=[3, 9], values=[1.0, 1.0]), top_k=8, filters=CHUNKS)
    assert sparse and all(d.meta["level"] == 0 for d in sparse)
    fetched = search.fetch_documents(["d8", "missing", "d4"])
    assert [d.id for d in fetched] == ["d8", "d4"] and fetched[0].embedding is not None


def test_contract_dimension_mismatch_is_a_clear_error(store) -> None:
    store.write_documents(corpus(8))
    with pytest.raises(ValueError, match="dimension 5 .* 384-d"):
        vector_search(store).search_dense([0.1] * 5, top_k=3)


def test_edge_matches_stock_local_mode_results(tmp_path: Path) -> None:
    """Same top 10 as qdrant-client's reference implementation (local mode) on the same points."""
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    docs = corpus(300)
    edge = EdgeDocumentStore(path=str(tmp_path / "edge"))
    stock = QdrantDocumentStore(
        path=str(tmp_path / "local"), embedding_dim=384, use_sparse_embeddings=True, sparse_idf=True, progress_bar=False
    )
    edge.write_documents(copy.deepcopy(docs))
    stock.write_documents(copy.deepcopy(docs))
    stock_search = QdrantServerSearch(stock)  # the stock store through its public retrievers
    for seed in range(5):
        q = np.random.default_rng(seed + 100).standard_normal(384).tolist()
        ours = edge.search_dense(q, top_k=10, filters=CHUNKS)
        theirs = stock_search.search_dense(q, top_k=10, filters=CHUNKS)
        assert [d.id for d in ours] == [d.id for d in theirs]
        assert [d.score for d in ours] == pytest.approx([d.score for d in theirs], abs=1e-5)
    query = SparseEmbedding(indices=[3, 9, 25], values=[1.0, 1.0, 0.5])
    ours = edge.search_sparse(query, top_k=10, filters=CHUNKS)
    theirs = stock_search.search_sparse(query, top_k=10, filters=CHUNKS)
    assert {d.id for d in ours} == {d.id for d in theirs}
    assert sorted(d.score for d in ours) == pytest.approx(sorted(d.score for d in theirs), rel=1e-4)
    stock.close()
    edge.close()


def test_channels_run_on_edge_and_fail_softly(tmp_path: Path) -> None:
    store = EdgeDocumentStore(path=str(tmp_path / "edge"))
    store.write_documents(corpus(60))
    q = np.random.default_rng(1).standard_normal(384).tolist()
    dense = DenseRetriever(document_store=store, filters=CHUNKS, top_k=5)
    assert len(dense.run(query_embedding=q)["documents"]) == 5
    assert dense.run(query_embedding=q, weights={"dense": 0.0})["documents"] == []
    sparse = SparseRetriever(document_store=store, filters=CHUNKS, top_k=5)
    assert sparse.run(query_sparse_embedding=SparseEmbedding(indices=[2], values=[1.0]))["documents"]
    with pytest.raises(ValueError, match="dimension"):
        dense.run(query_embedding=[0.1] * 3)
    store.close()
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    down = QdrantDocumentStore(url="http://127.0.0.1:9", embedding_dim=384, timeout=1, use_sparse_embeddings=True)
    assert DenseRetriever(document_store=down).run(query_embedding=q)["documents"] is None  # skipped by the joiner


def test_two_stores_on_one_folder_share_the_shard(tmp_path: Path) -> None:
    a = make_store(path=str(tmp_path / "q"))
    b = make_store(path=str(tmp_path / "q"))
    a.write_documents([Document(id="1", content="hello", embedding=[0.1] * 384)])
    assert b.count_documents() == 1
    a.close()
    assert b.count_documents() == 1  # the shard stays open while b uses it
    b.close()
    assert make_store(path=str(tmp_path / "q")).count_documents() == 1  # durable across a reopen


def test_another_process_gets_a_clear_lock_error_and_data_survives(tmp_path: Path) -> None:
    store = EdgeDocumentStore(path=str(tmp_path / "q"))
    store.write_documents([Document(id="1", content="kept", embedding=[0.1] * 384)])
    code = (
        "from adaptive_retrieval.components.stores.documents.edge_document_store import EdgeDocumentStore\n"
        f"EdgeDocumentStore(path={str(tmp_path / 'q')!r}).count_documents()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode != 0
    assert "StoreLockedError" in done.stderr and "open in another process" in done.stderr
    assert store.count_documents() == 1


def test_old_local_mode_folder_names_the_reindex_command(tmp_path: Path) -> None:
    old = tmp_path / "qdrant"
    (old / "collection" / "adaptive").mkdir(parents=True)
    (old / "meta.json").write_text("{}")
    with pytest.raises(StoreFormatError, match="local-mode folder.*adaptive-retrieval index --store"):
        EdgeDocumentStore(path=str(old)).count_documents()


def test_other_dimension_on_an_existing_index_is_refused_and_keeps_the_data(tmp_path: Path) -> None:
    store = EdgeDocumentStore(path=str(tmp_path / "q"))
    store.write_documents([Document(id="1", content="kept", embedding=[0.1] * 384)])
    store.close()
    with pytest.raises(StoreFormatError):
        EdgeDocumentStore(path=str(tmp_path / "q"), embedding_dim=768).count_documents()
    with pytest.raises(ValueError, match="dimension 768"):
        EdgeDocumentStore(path=str(tmp_path / "q2"), embedding_dim=384).write_documents(
            [Document(content="x", embedding=[0.1] * 768)]
        )
    assert EdgeDocumentStore(path=str(tmp_path / "q")).count_documents() == 1


@pytest.mark.parametrize("damaged", ["segments/*/segment.json", "edge_config.json"])
def test_a_damaged_shard_is_a_clear_error_and_is_left_as_it_was(tmp_path: Path, damaged: str) -> None:
    store = EdgeDocumentStore(path=str(tmp_path / "q"), payload_fields_to_index={})
    store.write_documents([Document(id="1", content="kept", embedding=[0.1] * 384)])
    store.close()
    [target] = (tmp_path / "q" / "adaptive").glob(damaged)
    target.write_text("{not json")
    before = sorted((p.name, p.stat().st_size) for p in (tmp_path / "q").rglob("*") if p.is_file())
    with pytest.raises(StoreFormatError, match="looks damaged.*Nothing in it was changed"):
        EdgeDocumentStore(path=str(tmp_path / "q")).count_documents()
    assert sorted((p.name, p.stat().st_size) for p in (tmp_path / "q").rglob("*") if p.is_file()) == before


def test_unknown_filter_operator_is_a_clear_error(tmp_path: Path) -> None:
    from haystack.errors import FilterError

    store = EdgeDocumentStore(path=str(tmp_path / "q"))
    with pytest.raises(FilterError, match="Unknown comparison operator 'like'"):
        store.filter_documents({"field": "meta.a", "operator": "like", "value": "x"})


def test_read_only_folder_is_a_clear_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores folder permissions")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    with pytest.raises(DocumentStoreError):
        EdgeDocumentStore(path=str(folder)).count_documents()


def test_writes_beside_concurrent_queries(tmp_path: Path) -> None:
    store = EdgeDocumentStore(path=str(tmp_path / "q"))
    store.write_documents(corpus(200))
    errors: list[BaseException] = []
    q = np.random.default_rng(3).standard_normal(384).tolist()

    def query() -> None:
        try:
            for _ in range(40):
                assert len(store.search_dense(q, top_k=10, filters=CHUNKS)) == 10
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=query) for _ in range(3)]
    for t in threads:
        t.start()
    store.write_documents(corpus(200, seed=9))  # same ids: an overwrite of every point while queries run
    for t in threads:
        t.join()
    assert not errors and store.count_documents() == 200
    assert store.optimize(force=True) in (True, False) and store.count_documents() == 200


def test_channel_documents_travel_without_vectors_or_share_the_dense_one_on_copy() -> None:
    doc = Document(
        id="a",
        content="text",
        meta={"channels": {"dense": 1}},
        embedding=[0.1] * 4,
        sparse_embedding=SparseEmbedding(indices=[1], values=[1.0]),
        score=0.5,
    )
    [lean] = channel_documents([doc])
    assert lean == Document(id="a", content="text", meta={"channels": {"dense": 1}}, score=0.5)
    assert doc.embedding == [0.1] * 4  # the store's document is left as it was
    [out] = channel_documents([doc], dense=True)
    assert out == Document(id="a", content="text", meta={"channels": {"dense": 1}}, embedding=[0.1] * 4, score=0.5)
    copied = copy.deepcopy(out)
    assert copied == out and copied.embedding is out.embedding  # Haystack copies inputs; the vector is shared
    copied.meta["channels"]["sparse"] = 2
    assert out.meta == {"channels": {"dense": 1}}  # everything else is a real copy


def test_releasing_every_shard_while_others_read_waits_for_their_reads(tmp_path: Path) -> None:
    """A CI run failed with "Already borrowed" when every shard was released (as tests and the lab do to simulate a
    fresh process) while another thread was reading one: the close now waits for the reads running, and a read that
    comes after reopens the shard."""
    import threading
    import time

    from adaptive_retrieval.components.stores.documents.edge_document_store import (
        EdgeDocumentStore,
        release_all_clients,
    )

    store = EdgeDocumentStore(path=str(tmp_path / "q"))
    documents = [Document(id=str(i), content=f"doc {i}", embedding=[0.1 + i / 1000] * 384) for i in range(500)]
    store.write_documents(documents)
    failures: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                assert store.count_documents() == 500
                store.filter_documents()
            except BaseException as err:
                failures.append(err)
                return

    readers = [threading.Thread(target=read) for _ in range(3)]
    for thread in readers:
        thread.start()
    for _ in range(30):
        release_all_clients()
        time.sleep(0.01)
    stop.set()
    for thread in readers:
        thread.join(30)
    assert not failures, failures[:3]
    assert store.count_documents() == 500
