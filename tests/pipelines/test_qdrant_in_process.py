"""The scale-out path (qdrant-haystack's ``QdrantDocumentStore``, what ``$QDRANT_URL`` selects) exercised end to
end without a server: qdrant-client's in-process mode speaks the same client API, so the YAML pipelines index and
answer through the very store class and retrievers a Qdrant server or cluster gets. Sharding and replication are
a server's: run the store contract against one with
``QDRANT_URL=http://HOST:6333 pytest -m server tests/test_store_contract.py``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

from adaptive_retrieval.pipelines.indexer import index_paths
from adaptive_retrieval.pipelines.query_pipeline import run_query
from adaptive_retrieval.pipelines.store_config import in_process_location, make_store, release_in_process_stores
from adaptive_retrieval.pipelines.yaml_io import load_pipeline

TOPICS = ("try", "with", "lambda", "import")


def _stores(*pipelines) -> set[int]:
    return {id(c.document_store) for p in pipelines for _, c in p.walk() if hasattr(c, "document_store")}


def test_qdrant_url_names_the_in_process_modes_and_keeps_server_urls() -> None:
    assert in_process_location(":memory:") == {"location": ":memory:"}
    assert in_process_location("file:///data/qdrant") == {"path": "/data/qdrant"}
    assert in_process_location("http://qdrant:6333") is None
    with pytest.raises(ValueError, match="file:///absolute/folder"):
        in_process_location("file:relative/folder")
    server = make_store(url="http://qdrant:6333")  # lazy: nothing is contacted here
    assert isinstance(server, QdrantDocumentStore) and server.url == "http://qdrant:6333" and server.location is None
    local = make_store(url=":memory:")
    assert local.location == ":memory:" and local.url is None


@pytest.mark.parametrize("mode", ["memory", "folder"])
def test_yaml_pipelines_index_and_answer_on_the_in_process_store(
    mode: str, tmp_path: Path, reference_corpus: Path, monkeypatch: pytest.MonkeyPatch, model_dir: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in TOPICS:
        shutil.copy(reference_corpus / f"{name}.txt", corpus)
    url = ":memory:" if mode == "memory" else (tmp_path / "qdrant-local").as_uri()
    monkeypatch.setenv("QDRANT_URL", url)
    monkeypatch.setenv("ADAPTIVE_GRAPH_PATH", str(tmp_path / "graph.sqlite"))
    try:
        indexing = load_pipeline("indexing")
        counts = index_paths(indexing, [corpus])
        assert counts["chunks_written"] > 0
        query = load_pipeline("query")
        query.warm_up()
        # One client for the whole process: every component of both pipelines holds the same store.
        (store_id,) = _stores(indexing, query)
        store = next(c.document_store for _, c in query.walk() if hasattr(c, "document_store"))
        assert isinstance(store, QdrantDocumentStore) and id(store) == store_id
        result = run_query(query, "What does the finally clause of a try statement do?")
        assert not result.failed, result.failed
        assert Path(result.documents[0].meta["source"]).name == "try.txt"
        if mode == "folder":  # the folder keeps the index: a fresh client (another process, later) finds it
            release_in_process_stores()
            again = load_pipeline("query")
            again.warm_up()
            assert run_query(again, "lambda expressions").documents
    finally:
        release_in_process_stores()
