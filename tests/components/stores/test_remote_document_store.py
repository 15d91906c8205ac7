"""The store of a `serve --workers N` worker: every call runs in the store host on its one open Edge shard, over a
real Unix socket. The contract suite (tests/test_store_contract.py) runs on it too; here: the rest of the protocol,
errors that come back as the embedded store raises them, the socket's privacy and the YAML switch."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy

from adaptive_retrieval.components.stores.documents.edge_document_store import IndexNotFoundError
from adaptive_retrieval.components.stores.documents.remote_document_store import (
    SOCKET_ENV,
    WAIT_ENV,
    RemoteDocumentStore,
    StoreHostUnavailableError,
)
from adaptive_retrieval.pipelines.processes.store_host import StoreHost, serve_store


@pytest.fixture
def host(tmp_path: Path):
    folder = tmp_path / "qdrant"
    store_host = StoreHost(folder)
    server = serve_store(store_host, tmp_path / "store.sock")
    yield {"folder": folder, "socket": str(tmp_path / "store.sock")}
    server.shutdown()
    server.server_close()
    store_host.close()


def _docs(n: int = 20) -> list[Document]:
    rng = np.random.default_rng(1)
    return [
        Document(id=f"d{i}", content=f"text {i}", meta={"level": 0, "source": f"s{i % 3}"}, embedding=list(v))
        for i, v in enumerate(rng.standard_normal((n, 384)).astype(float))
    ]


def test_the_document_store_protocol_runs_in_the_host(host) -> None:
    store = RemoteDocumentStore(socket=host["socket"], path=str(host["folder"]))
    assert store.write_documents(_docs()) == 20
    assert store.count_documents() == 20
    by_source = {"field": "meta.source", "operator": "==", "value": "s1"}
    assert store.count_documents_by_filter(by_source) == 7
    assert {d.id for d in store.filter_documents(by_source)} == {f"d{i}" for i in range(1, 20, 3)}
    with pytest.raises(DuplicateDocumentError):
        store.write_documents(_docs(2), policy=DuplicatePolicy.FAIL)
    assert store.delete_by_filter(by_source) == 7
    store.delete_documents(["d0", "missing"])
    assert store.count_documents() == 12
    assert [d.id for d in store.get_documents_by_id(["d2", "d0"])] == ["d2"]
    assert store.info()["points"] == 12
    # A second store (another worker's) sees the same shard at once.
    other = RemoteDocumentStore(socket=host["socket"], path=str(host["folder"]), create=False)
    assert other.count_documents() == 12
    store.close()
    other.close()


def test_errors_come_back_as_the_embedded_store_raises_them(host, tmp_path: Path) -> None:
    reader = RemoteDocumentStore(socket=host["socket"], path=str(host["folder"]), create=False)
    with pytest.raises(IndexNotFoundError, match="No index"):
        reader.count_documents()  # the query side never creates an index
    elsewhere = RemoteDocumentStore(socket=host["socket"], path=str(tmp_path / "other"))
    with pytest.raises(ValueError, match="serves the index"):
        elsewhere.count_documents()
    with pytest.raises(ValueError, match="dimension 3"):
        reader.search_dense([0.1, 0.2, 0.3])


def test_the_socket_is_private(host) -> None:
    mode = os.stat(host["socket"]).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600


def test_an_unreachable_host_is_a_clear_error_after_the_wait(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(WAIT_ENV, "0.3")
    store = RemoteDocumentStore(socket=str(tmp_path / "none.sock"), path=str(tmp_path / "qdrant"))
    with pytest.raises(StoreHostUnavailableError, match="did not answer"):
        store.count_documents()


def test_a_worker_loads_the_query_yaml_with_remote_stores_keeping_their_settings(tmp_path: Path, monkeypatch) -> None:
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    monkeypatch.setenv(SOCKET_ENV, str(tmp_path / "store.sock"))
    pipeline = load_pipeline("query")
    stores = [
        c.document_store
        for _, c in pipeline.walk()
        if isinstance(getattr(c, "document_store", None), RemoteDocumentStore)
    ]
    assert stores, "no component holds a RemoteDocumentStore"
    assert all(s.create is False and s.socket == str(tmp_path / "store.sock") for s in stores)
