"""QualityGate, its signals and the corrective loop of the query pipeline, on a real Qdrant index."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

from components.gating.quality_gate import QualityGate
from components.gating.retry_loop import RetryLoop
from components.gating.signals import content_terms, gate_signals
from components.models.document_embedder import OnnxDocumentEmbedder
from components.models.onnx_encoder import OnnxEncoder
from components.models.sparse_document_embedder import Bm25DocumentEmbedder
from components.retrieval.vector_retrievers import SparseRetriever
from components.routing.intent_router import IntentRouter
from components.routing.profiles import escalate_strategy
from components.stores.edge_document_store import release_all_clients
from components.stores.sqlite_graph_store import SQLiteGraphStore, release_all_connections
from pipelines.query_pipeline import build_query_pipeline, run_query
from pipelines.store_config import make_store

STRONG = "What happens to the else clause suite when the while loop expression is false?"
WEAK = "Which river flows through the capital city of Mongolia?"


def doc(id_: str, content: str, channels: dict[str, int] | None = None, embedding=None, title: str = "") -> Document:
    return Document(id=id_, content=content, embedding=embedding, meta={"channels": channels or {}, "title": title})


# -- signals ------------------------------------------------------------------------------------------------


def test_signals_measure_what_they_claim() -> None:
    e = np.eye(4, dtype=np.float32)
    docs = [
        doc("a", "The Eiffel Tower was built in 1889.", {"dense": 1, "sparse": 1}, e[0].tolist(), "Eiffel Tower"),
        doc("b", "Paris is the capital of France.", {"dense": 2}, (e[0] * 0.6 + e[1] * 0.8).tolist()),
        doc("c", "Unrelated text about gardening.", {"sparse": 2}, e[2].tolist()),
    ]
    s = gate_signals(docs, "When was the Eiffel Tower built?", e[0].tolist(), ["dense", "sparse"], k=3)
    assert s["top_score"] == pytest.approx(1.0)
    assert s["margin"] == pytest.approx(1.0 - (0.6 + 0.0) / 2)
    assert s["coverage"] == pytest.approx(1.0)  # eiffel, tower, built (stemmed) all in the top 3
    assert s["agreement"] == pytest.approx((1 + 0 + 0) / 3)  # only "a" was found by both channels
    assert s["redundancy"] == pytest.approx((0.6 + 0.0 + 0.0) / 3)
    # Coverage only looks at the top k; stop words do not count.
    top1 = gate_signals(docs, "Eiffel gardening", e[0].tolist(), k=1)
    assert top1["coverage"] == pytest.approx(0.5) and top1["margin"] == pytest.approx(0.4)
    assert content_terms("What is the tower?") == {"tower"}
    assert gate_signals([], "anything", e[0].tolist())["top_score"] == 0.0
    with pytest.raises(ValueError, match="dimension"):
        gate_signals(docs, "x", [1.0, 0.0], k=2)


# -- gate decisions -----------------------------------------------------------------------------------------


def test_gate_decides_pass_retry_insufficient() -> None:
    e = np.eye(4, dtype=np.float32)
    strong = [doc("a", "The Eiffel Tower was built in 1889.", {"dense": 1, "sparse": 1}, e[0].tolist())]
    weak = [doc("z", "Gardening with tomatoes.", {"dense": 1}, e[3].tolist())]
    query, vector = "When was the Eiffel Tower built?", e[0].tolist()
    gate = QualityGate(max_retries=1)

    out = gate.run(documents=strong, query=query, query_embedding=vector)
    assert out["decision"] == "pass" and out["attempt"] == 0 and "retry" not in out

    first = gate.run(documents=weak, query=query, query_embedding=vector, attempt=0)
    assert set(first) == {"retry"} and first["retry"]["attempt"] == 1
    previous = first["retry"]["previous"]
    assert previous["attempts"][0]["decision"] == "retry"

    # The retry found nothing better: insufficient, with the better of the two attempts returned.
    worse = [doc("y", "Knitting patterns.", {}, (-e[0]).tolist())]
    final = gate.run(documents=worse, query=query, query_embedding=vector, attempt=1, previous=previous)
    assert final["decision"] == "insufficient"
    assert final["attempt"] == 0 and final["documents"][0].id == "z"
    assert [a["decision"] for a in final["attempts"]] == ["retry", "insufficient"]

    # A retry that passes wins.
    passed = gate.run(documents=strong, query=query, query_embedding=vector, attempt=1, previous=previous)
    assert passed["decision"] == "pass" and passed["attempt"] == 1 and passed["documents"][0].id == "a"

    no_loop = QualityGate(max_retries=0).run(documents=weak, query=query, query_embedding=vector)
    assert no_loop["decision"] == "insufficient"


def test_gate_and_loop_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        QualityGate(max_retries=-1)
    with pytest.raises(ValueError, match="Unknown signal"):
        QualityGate(weights={"vibes": 1.0})
    with pytest.raises(ValueError, match="pass_threshold"):
        QualityGate(pass_threshold=1.0)
    loop = RetryLoop()
    assert loop.run(query="q") == {"query": "q", "attempt": 0, "previous": None}
    assert loop.run(query="q", retry={"attempt": 2, "previous": {}})["attempt"] == 2
    with pytest.raises(ValueError, match="empty"):
        loop.run(query=" ")
    with pytest.raises(ValueError, match="attempt"):
        loop.run(query="q", retry={"attempt": 0, "previous": {}})


def test_escalation_widens_the_strategy(model_dir: Path) -> None:
    base = {"weights": {"dense": 0.5, "sparse": 0.5, "graph_global": 0.0}, "top_k": 10, "fetch_k": 30}
    assert escalate_strategy(base, 0) is base
    wider = escalate_strategy(base, 1, depth=2.0, floor=0.1)
    assert wider["top_k"] == 20 and wider["fetch_k"] == 60
    assert wider["weights"]["graph_global"] == pytest.approx(0.1 / 1.1, abs=1e-4)
    assert sum(wider["weights"].values()) == pytest.approx(1.0, abs=1e-3)
    assert escalate_strategy(base, 3, max_fetch_k=100)["fetch_k"] == 100

    router = IntentRouter(model=str(model_dir))
    vector = OnnxEncoder.get(str(model_dir), "int8").encode([STRONG])[0].tolist()
    first = router.run(query=STRONG, query_embedding=vector)
    second = router.run(query=STRONG, query_embedding=vector, escalation=1)
    assert second["intent"] == first["intent"] and second["routing"]["escalation"] == 1
    assert second["fetch_k"] > first["fetch_k"] and second["top_k"] > first["top_k"]
    assert min(second["weights"].values()) > 0  # every channel is asked on a retry
    with pytest.raises(ValueError, match="escalation"):
        IntentRouter(model=str(model_dir), escalation_depth=0.5)


# -- the loop in the pipeline -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def indexed(model_dir: Path, reference_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """A small real index: the first paragraphs of the Python reference topics as chunks (level 0), dense + BM25."""
    root = tmp_path_factory.mktemp("gate-index")
    docs = []
    for path in sorted(reference_corpus.glob("*.txt")):
        paragraphs = [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if len(p.strip()) > 60]
        docs += [
            Document(content=p, meta={"title": path.stem, "source": path.name, "position": i, "level": 0})
            for i, p in enumerate(paragraphs[:6])
        ]
    docs = OnnxDocumentEmbedder(model=str(model_dir), meta_fields_to_embed=["title"], progress_bar=False).run(docs)
    docs = Bm25DocumentEmbedder(progress_bar=False).run(docs["documents"])["documents"]
    store = make_store(path=str(root / "qdrant"))
    store.write_documents(docs)
    yield {"store": store, "graph_path": str(root / "graph.sqlite"), "model": str(model_dir)}
    release_all_clients()
    release_all_connections()


def pipeline_for(indexed: dict, max_retries: int = 1):
    graph = SQLiteGraphStore(path=indexed["graph_path"])
    pipeline = build_query_pipeline(store=indexed["store"], model=indexed["model"], graph_store=graph)
    pipeline.get_component("gate").max_retries = max_retries
    pipeline.warm_up()
    return pipeline


def test_strong_query_passes_without_retry(indexed: dict) -> None:
    result = run_query(pipeline_for(indexed), STRONG)
    gate = result["gate"]
    assert gate["decision"] == "pass" and gate["attempt"] == 0 and len(gate["attempts"]) == 1
    assert result["routing"]["escalation"] == 0
    assert result["documents"][0].meta["title"] == "while"
    assert result["fusion"]["sizes"]["dense"] > 0 and result["fusion"]["sizes"]["sparse"] > 0
    assert set(gate["signals"]) == {"top_score", "margin", "coverage", "agreement", "redundancy"}


def test_weak_query_retries_wider_then_reports_insufficient(indexed: dict) -> None:
    pipeline = pipeline_for(indexed)
    result = run_query(pipeline, WEAK)
    gate = result["gate"]
    assert [a["decision"] for a in gate["attempts"]] == ["retry", "insufficient"]
    assert gate["decision"] == "insufficient" and gate["attempt"] in (0, 1)
    # The second pass ran with the escalated strategy: deeper, and every channel asked.
    assert result["routing"]["escalation"] == 1
    router = pipeline.get_component("router")
    vector = OnnxEncoder.get(indexed["model"], "int8").encode([WEAK])[0].tolist()
    assert result["strategy"]["fetch_k"] == router.run(query=WEAK, query_embedding=vector, escalation=1)["fetch_k"]
    assert result["strategy"]["fetch_k"] > router.run(query=WEAK, query_embedding=vector)["fetch_k"]
    assert min(result["strategy"]["weights"].values()) > 0
    assert gate["attempts"][1]["documents"] >= gate["attempts"][0]["documents"]


def test_loop_terminates_at_the_bound(indexed: dict) -> None:
    result = run_query(pipeline_for(indexed, max_retries=3), WEAK)
    attempts = result["gate"]["attempts"]
    assert [a["attempt"] for a in attempts] == [0, 1, 2, 3]
    assert [a["decision"] for a in attempts] == ["retry", "retry", "retry", "insufficient"]
    assert result["routing"]["escalation"] == 3
    once = run_query(pipeline_for(indexed, max_retries=0), WEAK)
    assert len(once["gate"]["attempts"]) == 1 and once["gate"]["decision"] == "insufficient"


@pytest.mark.filterwarnings("ignore:Failed to obtain server version")
def test_failing_channel_does_not_fail_the_query(indexed: dict) -> None:
    # A real Qdrant client pointed at a port nobody listens on: every sparse search fails to connect.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = QdrantDocumentStore(url=f"http://127.0.0.1:{port}", embedding_dim=384, timeout=2, use_sparse_embeddings=True)
    pipeline = pipeline_for(indexed)
    pipeline.remove_component("sparse")
    pipeline.add_component("sparse", SparseRetriever(document_store=down))
    pipeline.connect("sparse_embedder.sparse_embedding", "sparse.query_sparse_embedding")
    pipeline.connect("router.weights", "sparse.weights")
    pipeline.connect("router.fetch_k", "sparse.top_k")
    pipeline.connect("sparse.documents", "joiner.sparse")

    result = run_query(pipeline, STRONG)
    assert result["fusion"]["failed"] == ["sparse"] and "sparse" in result["fusion"]["skipped"]
    assert "sparse" not in result["weights"] and sum(result["weights"].values()) == pytest.approx(1.0)
    assert result["documents"] and result["documents"][0].meta["title"] == "while"
    assert "dense" in result["documents"][0].meta["channels"]
    assert all("sparse" not in d.meta["channels"] for d in result["documents"])
