"""Smoke test of scripts/lab/evaluate.py: every system on a tiny JSONL corpus, the JSON shape, the index cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_modules import load_script

from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients

PASSAGES = {
    "volcano": ("Mount Etna", "Mount Etna is an active stratovolcano on the east coast of Sicily, Italy."),
    "violin": ("Stradivarius", "Antonio Stradivari built violins in Cremona; his instruments are prized by players."),
    "tides": ("Tides", "Tides are the rise and fall of sea levels caused by the gravity of the Moon and the Sun."),
    "bread": ("Sourdough", "Sourdough bread is leavened by wild yeast and lactobacilli in a fermented starter."),
    "chess": ("Chess openings", "The Sicilian Defence is a chess opening that begins 1.e4 c5 and favours Black."),
    "bees": ("Honey bees", "Honey bees communicate the location of flowers to the hive with a waggle dance."),
    "rust": ("Rust language", "Rust is a systems programming language whose borrow checker prevents data races."),
    "glacier": ("Glaciers", "Glaciers form where snow accumulates faster than it melts and compacts into ice."),
    "opera": ("La Traviata", "La Traviata is an opera by Giuseppe Verdi first performed in Venice in 1853."),
    "coffee": ("Coffee", "Coffee beans are the roasted seeds of Coffea plants, first cultivated in Yemen."),
    "eclipse": ("Solar eclipse", "A solar eclipse happens when the Moon passes between the Earth and the Sun."),
    "penguin": ("Emperor penguin", "Emperor penguins breed in the Antarctic winter and the males incubate the eggs."),
}
QUESTIONS = [
    ("q1", "Which volcano is on the east coast of Sicily?", ["volcano"], "factual"),
    ("q2", "How do honey bees tell the hive where flowers are?", ["bees"], "factual"),
    ("q3", "Which two bodies cause tides and eclipses?", ["tides", "eclipse"], "comparison"),
    ("q4", "What prevents data races in Rust?", ["rust"], "factual"),
]


@pytest.fixture
def jsonl(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": pid, "title": t, "text": text}) + "\n" for pid, (t, text) in PASSAGES.items())
    )
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "".join(
            json.dumps({"id": qid, "question": q, "gold_ids": gold, "type": qtype}) + "\n"
            for qid, q, gold, qtype in QUESTIONS
        )
    )
    return corpus, questions


def test_evaluate_all_systems_on_a_tiny_corpus(jsonl: tuple[Path, Path], tmp_path: Path, model_dir: Path) -> None:
    evaluate = load_script("evaluate")
    corpus, questions = jsonl
    out = tmp_path / "report.json"
    args = ["--corpus", str(corpus), "--questions", str(questions), "--root", str(tmp_path / "idx"), "--json", str(out)]
    try:
        evaluate.main(args)
        report = json.loads(out.read_text())
        assert set(report["systems"]) == {
            "stock_bm25",
            "stock_dense",
            "stock_hybrid_rrf",
            "stock_hybrid_mmr",
            "adaptive",
        }
        for name, summary in report["systems"].items():
            for metric in ("recall@5", "recall@10", "full@10", "mrr", "ndcg@10"):
                assert 0.0 <= summary[metric] <= 1.0, (name, metric)
            assert summary["p50_ms"] > 0 and summary["p95_ms"] >= summary["p50_ms"]
            assert set(summary["by_type"]) == {"factual", "comparison"} and summary["n"] == 4
        # The questions are easy: every system finds every gold passage in its top 10, and the keyword-rich ones
        # first.
        assert report["systems"]["stock_bm25"]["recall@10"] == 1.0
        assert report["systems"]["adaptive"]["recall@10"] == 1.0
        # Not 1.0: on 12 passages the graph channels link "Sicily" and "Sicilian Defence" and lift that neighbour
        # a hair above one gold passage in the fused list (a bridge the channel exists to follow). Gold stays top 2.
        assert report["systems"]["adaptive"]["by_type"]["factual"]["mrr"] >= 0.8
        assert report["systems"]["stock_bm25"]["by_type"]["factual"]["mrr"] == 1.0
        confusion = report["routing"]["confusion"]
        assert sum(sum(row.values()) for row in confusion.values()) == 4
        assert report["per_question"][0]["systems"]["adaptive"]["top10"][0] == "volcano"
        assert report["indexing"]["adaptive"]["cached"] is False and report["indexing"]["stock"]["cached"] is False

        # A second run over the same corpus reuses both indexes.
        release_all_clients()
        # The opt-in pipeline with graph_ppr, and the same pipeline without it (= the default one) in the same run.
        again = evaluate.main(
            [
                *args,
                "--systems",
                "stock_hybrid_rrf,adaptive",
                "--query-yaml",
                "query_ppr",
                "--drop-channel",
                "graph_ppr",
                "--fixed-profile",
            ]
        )
        assert again["indexing"]["adaptive"]["cached"] is True and again["indexing"]["stock"]["cached"] is True
        assert again["systems"]["adaptive"]["recall@10"] == 1.0
        # The ablation runs the same index without the channel, in the same run, and gets its own row per type.
        # ... and with the packaged fixed profile for every query (the peer routing has to beat).
        assert set(again["systems"]) == {"stock_hybrid_rrf", "adaptive", "adaptive_no_graph_ppr", "adaptive_fixed"}
        assert again["systems"]["adaptive_fixed"]["recall@10"] == 1.0
        by_hop = again["by_hop"]
        assert set(by_hop["adaptive_no_graph_ppr"]) == {"all", "factual", "comparison"}
        assert by_hop["adaptive"]["all"]["full@10_vs_stock_hybrid_rrf"] is not None
        # Paired counts and bootstrap intervals against the stock hybrid, overall and per type.
        spread = again["uncertainty"]
        assert spread["only_adaptive_full"] + spread["only_baseline_full"] <= 4
        assert set(spread["adaptive_full@10_95"]) == {"all", "factual", "comparison"}
        low, high = spread["adaptive_full@10_95"]["all"]
        assert 0.0 <= low <= again["systems"]["adaptive"]["full@10"] <= high <= 1.0
    finally:
        release_all_clients()


def test_evaluate_rejects_conflicting_sources(jsonl: tuple[Path, Path]) -> None:
    evaluate = load_script("evaluate")
    corpus, questions = jsonl
    with pytest.raises(SystemExit, match="exactly one"):
        evaluate.main(["--corpus", str(corpus), "--questions", str(questions), "--hotpot", "x"])
    with pytest.raises(SystemExit, match="Unknown system"):
        evaluate.main(["--corpus", str(corpus), "--questions", str(questions), "--systems", "bogus"])


def test_a_json_corpus_is_added_as_distractors(jsonl: tuple[Path, Path], tmp_path: Path) -> None:
    evaluate = load_script("evaluate")
    corpus, questions = jsonl
    extra = tmp_path / "wiki2.json"
    extra.write_text(json.dumps([{"title": "Mount Etna", "text": "dup"}, {"title": "Lisbon", "text": "A city."}]))
    args = evaluate.parse_args(["--corpus", str(corpus), "--corpus", str(extra), "--questions", str(questions)])
    evalset = evaluate.build_evalset(args)
    # The same passages --wiki2 would add: ids from titles, a title already in the corpus skipped.
    assert [p.id for p in evalset.passages][-1] == "wiki2:Lisbon" and len(evalset.passages) == len(PASSAGES) + 1
    assert evalset.name == "questions+1distractors"
    with pytest.raises(SystemExit, match="JSONL"):
        evaluate.build_evalset(evaluate.parse_args(["--corpus", str(extra), "--questions", str(questions)]))


def test_the_fixed_profile_replaces_every_intent_profile() -> None:
    from haystack.marshal import YamlMarshaller

    from adaptive_retrieval.pipelines.yaml_io import resolve_yaml
    from evaluation.systems import with_fixed_profile

    text = resolve_yaml("query").read_text(encoding="utf-8")
    fixed = {
        "weights": {"dense": 0.5, "sparse": 0.3, "graph_ppr": 0.2},  # graph_ppr: not in this pipeline, dropped
        "top_k": 10,
        "fetch_k": 30,
        "mmr_lambda": 0.8,
        "rerank": False,
    }
    data = YamlMarshaller().unmarshal(with_fixed_profile(text, fixed))
    router = data["components"]["router"]["init_parameters"]
    assert len(router["profiles"]) == 7
    for profile in router["profiles"].values():
        assert profile["weights"] == pytest.approx({"dense": 0.625, "sparse": 0.375})
        assert (profile["top_k"], profile["fetch_k"], profile["mmr_lambda"]) == (10, 30, 0.8)
    with pytest.raises(ValueError, match="no weight to the pipeline's channels"):
        with_fixed_profile(text, {**fixed, "weights": {"graph_ppr": 1.0}})
