"""QualityGate, its signals and the corrective loop of the query pipeline, on a real Qdrant index."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

from adaptive_retrieval.components.gating import RetryLoop
from adaptive_retrieval.components.gating.attempts import Attempt, RetryState
from adaptive_retrieval.components.gating.calibration import (
    auroc,
    calibration_path,
    fit_logistic,
    load_calibration,
    predict,
    save_calibration,
)
from adaptive_retrieval.components.gating.quality_gate import DEFAULT_WEIGHTS, QualityGate
from adaptive_retrieval.components.gating.retry_policy import same_candidates
from adaptive_retrieval.components.gating.signals import SIGNALS, gate_signals
from adaptive_retrieval.components.models import Bm25DocumentEmbedder, OnnxDocumentEmbedder
from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.retrieval import SparseRetriever
from adaptive_retrieval.components.routing import IntentRouter
from adaptive_retrieval.components.routing.profiles import escalate_strategy
from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import SQLiteGraphStore, release_all_connections
from adaptive_retrieval.components.strategy import Strategy
from adaptive_retrieval.components.text.names import query_names
from adaptive_retrieval.components.text.terms import content_terms
from adaptive_retrieval.pipelines.gate_calibration import (
    calibrate_pipeline,
    pass_threshold,
    pseudo_queries,
)
from adaptive_retrieval.pipelines.query_pipeline import build_query_pipeline, run_query
from adaptive_retrieval.pipelines.store_config import make_store

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


def test_names_signal_asks_that_every_name_of_the_query_is_somewhere_in_the_list() -> None:
    assert query_names("Who wrote The Age of Reason in 1794?") == ["The Age of Reason", "1794"]
    assert query_names("What did the actress in My Fair Lady win a Tony for?") == ["My Fair Lady", "Tony"]
    # A comma ends a name; possessives and the sentence's first stop word are not part of one.
    assert query_names("What was Forced Vengeance's producer in Walker, Texas Ranger?") == [
        "Forced Vengeance",
        "Walker",
        "Texas Ranger",
    ]
    assert query_names("Which is older, the Bank of England or J. P. Morgan?") == ["Bank of England", "J P Morgan"]
    assert query_names("how tall is the tower?") == []
    # The first word is a name only when the next one continues it; "and" separates two names.
    assert query_names("Give an overview of the topics Python covers") == ["Python"]
    assert query_names("Phu Luong is in which province?") == ["Phu Luong"]
    assert query_names("Were Never Cry Wolf and Big Hero 6 released by one label?") == ["Never Cry Wolf", "Big Hero 6"]
    e = np.eye(4, dtype=np.float32)
    docs = [
        doc("a", "Thomas Paine wrote Common Sense in 1776.", embedding=e[0].tolist()),
        doc("b", "Unrelated text about gardening.", embedding=e[1].tolist()),
        doc("c", "The Age of Reason is a deist work.", embedding=e[2].tolist()),  # third: beyond k=2, still read
    ]
    query = "Was Common Sense written by the author of The Age of Reason?"
    assert gate_signals(docs, query, e[0].tolist(), k=2)["names"] == 1.0  # two names, two documents
    assert gate_signals(docs[:2], query, e[0].tolist(), k=2)["names"] == 0.0  # "The Age of Reason" is nowhere
    # Names match as whole phrases, whatever the case, accents or punctuation; words scattered do not count.
    assert gate_signals([doc("d", "SENSE and common folk")], "Where is Common Sense?", k=1)["names"] == 0.0
    assert gate_signals([doc("d", "Zoë's common-sense guide")], "Where is Zoe Common Sense?", k=1)["names"] == 1.0
    assert gate_signals([doc("d", "zoe's sense")], "Where is Zoë, Common Sense?", k=1)["names"] == 0.0
    assert gate_signals(docs, "how tall is the tower?", k=1)["names"] == 1.0  # nothing named: no evidence of a miss


def test_names_title_counts_the_names_a_returned_document_is_about() -> None:
    query = "Was Common Sense written by the author of The Age of Reason?"
    paine = doc("a", "Thomas Paine wrote Common Sense and The Age of Reason.", title="Thomas Paine")
    sense = doc("b", "A pamphlet of 1776.", title="Common Sense (pamphlet)")  # the title holds the name
    assert gate_signals([paine], query, k=1)["names_title"] == 0.0  # both named, neither page is about them
    assert gate_signals([paine, sense], query, k=1)["names_title"] == 0.5  # read beyond the top k, as names
    # The name inside a title (a paper named before its subtitle) or a title inside the name both count.
    bert = doc("c", "Masked language modelling.", title="BERT: Pre-training of Deep Bidirectional Transformers")
    assert gate_signals([bert], "How does BERT mask tokens?", k=1)["names_title"] == 1.0
    band = doc("d", "A rock trio from Toronto.", title="Danko Jones")
    assert gate_signals([band], "Who runs Danko Jones Records?", k=1)["names_title"] == 1.0
    assert gate_signals([band], "Who runs Bad Taste Records?", k=1)["names_title"] == 0.0
    assert gate_signals([paine], "how tall is the tower?", k=1)["names_title"] == 1.0  # nothing named


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
    assert set(first) == {"retry"} and first["retry"].attempt == 1
    previous = first["retry"]
    assert previous.history[0].decision == "retry" and previous.best.documents[0].id == "z"

    # The retry found nothing better: insufficient, with the better of the two attempts returned.
    worse = [doc("y", "Knitting patterns.", {}, (-e[0]).tolist())]
    final = gate.run(documents=worse, query=query, query_embedding=vector, attempt=1, previous=previous)
    assert final["decision"] == "insufficient"
    assert final["attempt"] == 0 and final["documents"][0].id == "z"
    assert [a.decision for a in final["attempts"]] == ["retry", "insufficient"]

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
    state = RetryState(2, Attempt(1, [], 0.1))
    assert loop.run(query="q", retry=state) == {"query": "q", "attempt": 2, "previous": state}
    with pytest.raises(ValueError, match="empty"):
        loop.run(query=" ")
    with pytest.raises(TypeError, match="RetryState"):
        loop.run(query="q", retry={"attempt": 2, "previous": {}})
    with pytest.raises(ValueError, match="attempt 1 or later"):
        RetryState(0, Attempt(0, [], 0.1))


def test_the_loop_folds_the_query_as_the_indexer_folds_documents() -> None:
    """Issue 41 #11: documents are NFKC-normalised when indexed; a fullwidth query was not, so its words met no
    indexed word. The loop is where every surface's query enters the pipeline, on every attempt."""
    loop = RetryLoop()
    assert loop.run(query="ｗｉｔｈ　ｓｔａｔｅｍｅｎｔ")["query"] == "with statement"
    assert loop.run(query="ﬁle Ⅸ", retry=RetryState(1, Attempt(0, [], 0.0)))["query"] == "file IX"


def test_escalation_widens_the_strategy(model_dir: Path) -> None:
    base = {"weights": {"dense": 0.5, "sparse": 0.5, "graph_global": 0.0}, "top_k": 10, "fetch_k": 30}
    assert escalate_strategy(base, 0) is base
    wider = escalate_strategy(base, 1, depth=2.0, floor=0.1)
    assert wider["top_k"] == 20 and wider["fetch_k"] == 60
    assert wider["weights"]["graph_global"] == pytest.approx(0.1 / 1.1, abs=1e-4)
    assert sum(wider["weights"].values()) == pytest.approx(1.0, abs=1e-3)
    assert escalate_strategy(base, 3, max_fetch_k=100)["fetch_k"] == 100

    router = IntentRouter(model=str(model_dir))
    vector = get_encoder(str(model_dir), "int8").encode([STRONG])[0].tolist()
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
            Document(
                content=p,
                meta={"title": path.stem, "source": path.name, "doc_id": path.stem, "position": i, "level": 0},
            )
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
    gate = result.gate
    assert gate.decision == "pass" and gate.attempt == 0 and len(gate.attempts) == 1
    assert result.routing["escalation"] == 0
    assert result.documents[0].meta["title"] == "while"
    assert result.fusion["sizes"]["dense"] > 0 and result.fusion["sizes"]["sparse"] > 0
    assert set(gate.signals) == set(SIGNALS)


def test_weak_query_retries_wider_then_reports_insufficient(indexed: dict) -> None:
    pipeline = pipeline_for(indexed)
    result = run_query(pipeline, WEAK)
    gate = result.gate
    assert [a.decision for a in gate.attempts] == ["retry", "insufficient"]
    assert gate.decision == "insufficient" and gate.attempt in (0, 1)
    # The second pass ran with the escalated strategy: deeper, and every channel asked.
    assert result.routing["escalation"] == 1
    router = pipeline.get_component("router")
    vector = get_encoder(indexed["model"], "int8").encode([WEAK])[0].tolist()
    assert result.strategy.fetch_k == router.run(query=WEAK, query_embedding=vector, escalation=1)["fetch_k"]
    assert result.strategy.fetch_k > router.run(query=WEAK, query_embedding=vector)["fetch_k"]
    assert min(result.strategy.weights.values()) > 0
    assert gate.attempts[1].documents >= gate.attempts[0].documents


def test_loop_terminates_at_the_bound(indexed: dict) -> None:
    pipeline = pipeline_for(indexed, max_retries=3)
    pipeline.get_component("gate").skip_same_retries = False  # the small index runs out of new candidates
    result = run_query(pipeline, WEAK)
    attempts = result.gate.attempts
    assert [a.attempt for a in attempts] == [0, 1, 2, 3]
    assert [a.decision for a in attempts] == ["retry", "retry", "retry", "insufficient"]
    assert result.routing["escalation"] == 3
    once = run_query(pipeline_for(indexed, max_retries=0), WEAK)
    assert len(once.gate.attempts) == 1 and once.gate.decision == "insufficient"


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
    pipeline.connect("sparse.failure", "joiner.sparse_failure")

    result = run_query(pipeline, STRONG)
    assert list(result.failed) == ["sparse"] and "sparse" in result.fusion["skipped"]
    # The reason came as data, on the channel's failure socket: the client's own connection error.
    assert "connect" in result.failed["sparse"].lower()
    assert "sparse" not in result.weights and sum(result.weights.values()) == pytest.approx(1.0)
    assert result.documents and result.documents[0].meta["title"] == "while"
    assert "dense" in result.documents[0].meta["channels"]
    assert all("sparse" not in d.meta["channels"] for d in result.documents)


# -- retries that change something --------------------------------------------------------------------------


def test_same_candidates_compares_what_a_retry_would_fetch() -> None:
    now = Strategy({"dense": 0.5, "sparse": 0.5}, top_k=10, fetch_k=30, mmr_lambda=0.8, rerank=False)
    deeper = replace(now, top_k=20, fetch_k=60)
    assert same_candidates(now, replace(now, top_k=20), {})  # a longer cut of the same list is no new evidence
    assert not same_candidates(now, deeper, {"dense": 30, "sparse": 30})  # both channels had more to give
    assert not same_candidates(now, deeper, {"dense": 12, "sparse": 30})
    assert same_candidates(now, deeper, {"dense": 12, "sparse": 7})  # both exhausted: deeper finds nothing new
    assert not same_candidates(now, deeper, {"dense": 12})  # sparse did not deliver: unknown, so retry
    assert not same_candidates(now, replace(now, weights={"dense": 0.45, "sparse": 0.45, "graph_local": 0.1}), {})
    assert not same_candidates(now, replace(now, weights={"dense": 0.6, "sparse": 0.4}), {})
    assert same_candidates(now, replace(now, weights={"dense": 0.5002, "sparse": 0.4998}), {})  # rounding
    assert not same_candidates(now, replace(now, mmr_lambda=0.5), {})
    assert not same_candidates(now, replace(now, rerank=True), {})
    assert not same_candidates(None, now, {}) and not same_candidates(now, None, {})


def test_gate_skips_a_retry_that_would_change_nothing() -> None:
    e = np.eye(4, dtype=np.float32)
    weak = [doc("z", "Gardening with tomatoes.", {"dense": 1}, e[3].tolist())]
    query, vector = "When was the Eiffel Tower built?", e[0].tolist()
    now = Strategy({"dense": 1.0}, top_k=10, fetch_k=30, mmr_lambda=0.8, rerank=False)
    fusion = {"weights": {"dense": 1.0}, "sizes": {"dense": 1}}  # the channel returned all it had
    gate = QualityGate(max_retries=1)
    out = gate.run(
        documents=weak,
        query=query,
        query_embedding=vector,
        fusion=fusion,
        strategy=now,
        next_strategy=replace(now, top_k=20, fetch_k=60),
    )
    assert out["decision"] == "insufficient" and out["retry_skipped"] == "same strategy"
    assert out["attempts"][0].retry_skipped == "same strategy" and out["documents"][0].id == "z"
    # The channel could have returned more: the retry runs.
    full = {"weights": {"dense": 1.0}, "sizes": {"dense": 30}}
    again = gate.run(
        documents=weak,
        query=query,
        query_embedding=vector,
        fusion=full,
        strategy=now,
        next_strategy=replace(now, fetch_k=60),
    )
    assert set(again) == {"retry"}


def test_pipeline_reports_a_skipped_retry(indexed: dict) -> None:
    # Every channel is weighted already and the index is smaller than the escalated depth: a second retry would
    # ask the same channels with the same weights for more than they hold.
    pipeline = pipeline_for(indexed, max_retries=3)
    result = run_query(pipeline, WEAK)
    gate = result.gate
    assert gate.decision == "insufficient" and gate.retry_skipped == "same strategy"
    assert len(gate.attempts) < 4 and gate.attempts[-1].retry_skipped == "same strategy"
    assert all(a.retry_skipped is None for a in gate.attempts[:-1])
    last = pipeline.get_component("router").run(
        query=WEAK,
        query_embedding=get_encoder(indexed["model"], "int8").encode([WEAK])[0].tolist(),
        escalation=len(gate.attempts) - 1,
    )
    # The router weighs exactly the pipeline's channels (the joiner's), so no channel filter is needed.
    channels = pipeline.get_component("joiner").channels
    assert list(last["weights"]) == sorted(channels) and list(last["next_strategy"].weights) == sorted(channels)
    assert same_candidates(last["strategy"], last["next_strategy"], result.fusion["sizes"])


# -- self-calibration ---------------------------------------------------------------------------------------


def test_logistic_fit_separates_and_leans_on_its_prior() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 5))  # any number of signals
    y = (x[:, 0] + 0.5 * x[:, 2] + 0.3 * rng.normal(size=200) > 0).astype(int)
    bias, w = fit_logistic(x, y, l2=1.0)
    assert auroc(predict(bias, w, x), y) > 0.95 and w[0] > w[1]
    prior = np.asarray([0.0, 3.0, 0.0, 0.0, 0.0])
    _, pulled = fit_logistic(x, y, l2=1e6, prior=prior)  # a huge penalty: the prior is the answer
    assert pulled == pytest.approx(prior, abs=0.05)


def test_pass_threshold_keeps_the_priors_false_pass_share() -> None:
    y = np.array([1] * 10 + [0] * 10)
    prior = np.concatenate([np.linspace(0.5, 0.99, 10), np.linspace(0.01, 0.46, 10)])
    # The prior passes 2 of the 10 excluded rows at its threshold 0.4 ...
    assert (prior[y == 0] >= 0.4).sum() == 2
    # ... so the fitted model, on its own scale (here everything sits lower), passes 2 of them as well.
    fitted = prior / 2
    cut = pass_threshold(fitted, y, prior, 0.4)
    assert (fitted[y == 0] >= cut).sum() == 2 and cut < 0.4
    # A prior that passes no excluded row: nothing excluded passes the fitted model either.
    cut = pass_threshold(fitted, y, prior, 0.9)
    assert not (fitted[y == 0] >= cut).any() and (fitted[y == 1] >= cut).any()
    assert 0.01 <= pass_threshold(np.full(20, 0.001), y, prior, 0.01) <= 0.99  # clipped into (0, 1)


def test_calibration_file_round_trip_and_errors(tmp_path: Path) -> None:
    model = {"weights": {"top_score": 2.0, "coverage": 3.0}, "bias": -3.0, "pass_threshold": 0.6, "report": {"n": 1}}
    path = save_calibration(calibration_path(tmp_path), model)
    loaded = load_calibration(path)
    assert loaded["weights"] == model["weights"] and loaded["report"] == {"n": 1} and loaded["version"] == 1
    with pytest.raises(ValueError, match="Unknown signal"):
        save_calibration(tmp_path / "x.json", {**model, "weights": {"vibes": 1.0}})
    with pytest.raises(ValueError, match="pass_threshold"):
        save_calibration(tmp_path / "x.json", {**model, "pass_threshold": 1.5})
    path.write_text("{not json")
    gate = QualityGate(calibration_path=str(path))
    with pytest.raises(ValueError, match="not valid JSON"):
        gate.warm_up()  # a corrupt calibration is an error, not a silent fall-back


def test_pseudo_queries_name_a_document_not_a_heading_every_document_has() -> None:
    text = "The model is trained on a large corpus of books and web pages with a masked objective."
    chunks = [
        Document(content=text, meta={"doc_id": "bert", "title": "BERT: Pre-training", "section_path": ["1. Intro"]}),
        Document(content=text, meta={"doc_id": "gpt", "title": "GPT-3 Study", "section_path": ["1 INTRO"]}),
        Document(content=text, meta={"doc_id": "t5", "title": "T5", "section_path": ["3.2 Denoising objectives"]}),
        # A year is not a section number: these two headings are distinct, each names its document.
        Document(content=text, meta={"doc_id": "o84", "title": "x", "section_path": ["1984 Summer Olympics"]}),
        Document(content=text, meta={"doc_id": "o08", "title": "y", "section_path": ["2008 Summer Olympics"]}),
    ]
    names = {q.sources[0]: q.text for q in pseudo_queries(chunks, 60, seed=0) if q.kind == "named"}
    assert set(names) == {"bert", "gpt", "t5", "o84", "o08"}
    assert " BERT," in names["bert"] and "Intro" not in names["bert"]  # the title's name, not its subtitle
    assert " GPT-3 Study," in names["gpt"] and "INTRO" not in names["gpt"]
    assert "3.2 Denoising objectives," in names["t5"]
    assert "1984 Summer Olympics," in names["o84"] and "2008 Summer Olympics," in names["o08"]


def assert_names_found_in_sources(queries: list, chunks: list[Document]) -> None:
    """Names stay whole, as a question writes them: the names signal of a query with its sources present is 1."""
    for q in queries:
        sources = [c for c in chunks if c.meta["doc_id"] in q.sources]
        assert gate_signals(sources, q.text, k=2)["names"] == 1.0, q.text


def test_pseudo_queries_remember_their_sources() -> None:
    chunks = [
        Document(
            content="Alpha Centauri is the closest star system to the Sun at four light years.",
            meta={"doc_id": "a", "title": "Alpha Centauri"},
        ),
        Document(
            content="The Sun is a star. Alpha Centauri appears in the southern sky near the Southern Cross.",
            meta={"doc_id": "b", "title": "Sun"},
        ),
        Document(
            content="Tomatoes grow best in warm sunny gardens with regular watering and rich soil.",
            meta={"doc_id": "c", "title": "Tomato"},
        ),
    ]
    queries = pseudo_queries(chunks, 30, seed=1)
    assert len(queries) == 30 and queries == pseudo_queries(chunks, 30, seed=1)
    assert {q.kind for q in queries} == {"named", "bridge"}
    assert all(q.text.endswith("?") and set(q.sources) <= {"a", "b", "c"} for q in queries)
    bridges = [q for q in queries if q.kind == "bridge"]
    assert bridges and all(len(q.sources) == 2 for q in bridges)
    assert_names_found_in_sources(queries, chunks)
    assert any("Alpha Centauri," in q.text or "Southern Cross" in q.text for q in queries)
    with pytest.raises(ValueError, match="at least 2"):
        pseudo_queries(chunks[:1], 5)


def test_pseudo_query_names_keep_accents_and_abbreviations_whole() -> None:
    # "Agüero" once became "Ag" and "U.S." became "U": names the text never writes, so a pseudo-query with its
    # source present read as one without (names = 0) and dragged the calibrated threshold down.
    chunks = [
        Document(
            content="Sergio Agüero joined Manchester City from Atlético Madrid after winning titles in the U.S. tour.",
            meta={"doc_id": "a", "title": "Sergio Agüero"},
        ),
        Document(
            content="Lake Alūksne lies in northeastern Latvia near the border with Estonia and has several islands.",
            meta={"doc_id": "b", "title": "Alūksne"},
        ),
    ]
    queries = pseudo_queries(chunks, 40, seed=3)
    assert_names_found_in_sources(queries, chunks)
    text = " ".join(q.text for q in queries)
    assert "Agüero" in text and "Alūksne" in text and "U.S." in text
    assert not any(name in query_names(text) for name in ("Ag", "U", "Lake Al"))


def test_self_calibration_is_saved_with_the_index_and_used_by_the_gate(indexed: dict) -> None:
    pipeline = pipeline_for(indexed)
    gate = pipeline.get_component("gate")
    target = gate.calibration_file()
    assert target == calibration_path(indexed["store"].to_dict()["init_parameters"]["path"])
    assert gate.calibration == "prior" and gate.weights == DEFAULT_WEIGHTS
    fitted = calibrate_pipeline(pipeline, queries=16)
    report = fitted["report"]
    assert report["pseudo_queries"] == 16 and 0.0 <= report["auroc_in_sample"] <= 1.0
    assert gate.max_retries == 1  # restored after the loop-free calibration runs
    try:
        save_calibration(target, fitted)
        result = run_query(pipeline, STRONG)  # the gate notices the new file at run time
        assert result.gate.calibration == "index"
        assert gate.weights == fitted["weights"] and gate.pass_threshold == fitted["pass_threshold"]
        # A fresh pipeline from YAML-equivalent parameters picks it up at warm_up.
        fresh = pipeline_for(indexed).get_component("gate")
        assert fresh.calibration == "index" and fresh.to_dict()["init_parameters"]["weights"] is None  # the prior file
    finally:
        target.unlink()
    assert run_query(pipeline, STRONG).gate.calibration == "prior" and gate.weights == DEFAULT_WEIGHTS
