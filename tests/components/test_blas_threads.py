"""one_blas_thread: the components' scoped BLAS limit, and that it never leaves the process limited."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from haystack import Document, Pipeline
from threadpoolctl import threadpool_info, threadpool_limits

from adaptive_retrieval.components.blas_threads import BLAS_THREADS_ENV, one_blas_thread
from adaptive_retrieval.components.models import Bm25DocumentEmbedder, OnnxDocumentEmbedder
from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import SQLiteGraphStore, release_all_connections
from adaptive_retrieval.pipelines import build_query_pipeline, make_store


def blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads(monkeypatch: pytest.MonkeyPatch):
    """The process's BLAS at two threads (what an application on a multi-core machine has), restored after."""
    monkeypatch.delenv(BLAS_THREADS_ENV, raising=False)
    np.ones((2, 2)) @ np.ones((2, 2))  # BLAS loaded
    with threadpool_limits(limits=2, user_api="blas"):
        yield


class TestOneBlasThread:
    def test_limits_inside_and_restores_after(self, two_blas_threads):
        assert set(blas_threads()) == {2}
        with one_blas_thread():
            assert set(blas_threads()) == {1}
        assert set(blas_threads()) == {2}

    def test_nested_blocks_restore_once_the_outer_leaves(self, two_blas_threads):
        with one_blas_thread():
            with one_blas_thread():
                assert set(blas_threads()) == {1}
            assert set(blas_threads()) == {1}
        assert set(blas_threads()) == {2}

    def test_restores_after_an_error(self, two_blas_threads):
        with pytest.raises(RuntimeError), one_blas_thread():
            raise RuntimeError("boom")
        assert set(blas_threads()) == {2}

    def test_overlapping_blocks_in_threads_leave_the_process_as_it_was(self, two_blas_threads):
        # Thread A enters, B enters, A leaves while B is still inside, B leaves: a stack of saved limits would
        # restore 1 last; the count restores 2.
        a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

        def first() -> None:
            with one_blas_thread():
                a_in.set()
                b_in.wait(5)
            a_out.set()

        def second() -> None:
            a_in.wait(5)
            with one_blas_thread():
                b_in.set()
                a_out.wait(5)

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert set(blas_threads()) == {2}

    def test_zero_leaves_blas_alone(self, two_blas_threads, monkeypatch: pytest.MonkeyPatch):
        monkeypatch.setenv(BLAS_THREADS_ENV, "0")
        with one_blas_thread():
            assert set(blas_threads()) == {2}

    def test_a_query_pipeline_leaves_blas_as_it_found_it(self, two_blas_threads, query_pipeline: Pipeline):
        result = query_pipeline.run({"loop": {"query": "What does the with statement do?"}})
        assert result["answer"]["documents"]
        assert set(blas_threads()) == {2}


@pytest.fixture(scope="module")
def query_pipeline(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    """The packaged query pipeline over a few real passages (dense + BM25), warm."""
    texts = [
        "The with statement wraps a block with methods defined by a context manager.",
        "The while statement repeats a block as long as an expression is true.",
        "The try statement specifies exception handlers and cleanup code.",
        "A lambda expression creates an anonymous function.",
    ]
    docs = [Document(content=t, meta={"title": t.split()[1], "level": 0}) for t in texts]
    docs = OnnxDocumentEmbedder(model=str(model_dir), progress_bar=False).run(docs)["documents"]
    docs = Bm25DocumentEmbedder(progress_bar=False).run(docs)["documents"]
    root = tmp_path_factory.mktemp("blas")
    store = make_store(path=str(root / "qdrant"))
    store.write_documents(docs)
    graph = SQLiteGraphStore(path=str(root / "graph.sqlite"))
    pipeline = build_query_pipeline(store=store, model=str(model_dir), graph_store=graph)
    pipeline.warm_up()
    yield pipeline
    release_all_clients()
    release_all_connections()
