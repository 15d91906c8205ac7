"""Retrieval metrics and evaluation-set loaders used by scripts/lab/evaluate.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from haystack import Document

from evaluation.data import (
    EvalSet,
    Passage,
    Question,
    load_hotpot,
    load_jsonl,
    load_musique,
    load_wiki2,
    musique_passage_id,
)
from evaluation.metrics import (
    aggregate,
    bootstrap_interval,
    full_at_k,
    ndcg_at_k,
    passage_ranking,
    percentiles,
    question_metrics,
    recall_at_k,
    reciprocal_rank,
)


def test_recall_and_full_support() -> None:
    ranked = ["a", "x", "y", "b", "z"]
    assert recall_at_k(ranked, {"a", "b"}, 3) == 0.5
    assert recall_at_k(ranked, {"a", "b"}, 4) == 1.0
    assert full_at_k(ranked, {"a", "b"}, 3) == 0.0
    assert full_at_k(ranked, {"a", "b"}, 4) == 1.0
    assert recall_at_k([], {"a"}, 10) == 0.0


def test_mrr_counts_the_first_gold_within_k() -> None:
    assert reciprocal_rank(["x", "a", "b"], {"a", "b"}) == 0.5
    assert reciprocal_rank(["x"] * 10 + ["a"], {"a"}, k=10) == 0.0
    assert reciprocal_rank(["a"], {"a"}) == 1.0


def test_ndcg_against_hand_computed_values() -> None:
    # Gold at ranks 1 and 3 of two gold passages: (1 + 1/log2(4)) / (1 + 1/log2(3)).
    expected = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["a", "x", "b"], {"a", "b"}) == pytest.approx(expected)
    assert ndcg_at_k(["a", "b"], {"a", "b"}) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "y"], {"a"}) == 0.0


def test_metrics_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="gold"):
        recall_at_k(["a"], set(), 5)
    with pytest.raises(ValueError, match="k must be"):
        full_at_k(["a"], {"a"}, 0)


def test_passage_ranking_dedups_chunks_in_order() -> None:
    docs = [Document(content=str(i), meta={"passage_id": p}) for i, p in enumerate(["b", "a", "b", "c"])]
    assert passage_ranking(docs) == ["b", "a", "c"]
    with pytest.raises(ValueError, match="passage_id"):
        passage_ranking([Document(content="no id")])


def test_aggregate_means_by_type_and_percentiles() -> None:
    rows = [question_metrics(["a"], {"a"}), question_metrics(["x"], {"a"}), question_metrics(["a", "b"], {"a", "b"})]
    summary = aggregate(rows, ["bridge", "bridge", "comparison"], [10.0, 20.0, 30.0])
    assert summary["n"] == 3 and summary["full@10"] == pytest.approx(2 / 3)
    assert summary["by_type"]["bridge"]["mrr"] == 0.5 and summary["by_type"]["comparison"]["full@10"] == 1.0
    assert summary["p50_ms"] == 20.0 and summary["by_type"]["bridge"]["p95_ms"] == pytest.approx(19.5)
    assert percentiles([])["p50_ms"] != percentiles([])["p50_ms"]  # NaN when there is nothing to measure
    with pytest.raises(ValueError, match="types"):
        aggregate(rows, ["bridge"])


def test_jsonl_loaders_validate(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "p1", "title": "T", "text": "hello"}\n\n{"id": "p2", "text": "world"}\n')
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "q1", "question": "hi?", "gold_ids": ["p1"], "type": "factual"}\n')
    evalset = load_jsonl([corpus], questions)
    assert [p.id for p in evalset.passages] == ["p1", "p2"] and evalset.questions[0].gold_ids == ("p1",)

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q1", "question": "hi?", "gold_ids": ["nope"]}\n')
    with pytest.raises(ValueError, match="not in the corpus"):
        load_jsonl([corpus], bad)
    bad.write_text('{"id": "q1", "question": "hi?"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: missing field\(s\) \['gold_ids'\]"):
        load_jsonl([corpus], bad)
    bad.write_text("{not json\n")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_jsonl([bad], questions)


def test_split_is_deterministic_stratified_and_disjoint() -> None:
    passages = [Passage(id="p", text="t")]
    questions = [Question(id=f"q{i}", question="?", gold_ids=("p",), type="ab"[i % 2]) for i in range(20)]
    evalset = EvalSet("s", passages, questions)
    train, test = evalset.split(0.3)
    assert len(test) == 6 and {q.type for q in test} == {"a", "b"}
    assert not {q.id for q in train} & {q.id for q in test}
    assert evalset.split(0.3) == (train, test)
    with pytest.raises(ValueError, match="duplicate"):
        EvalSet("d", passages * 2, [])


def test_native_hotpot_and_wiki2(tmp_path: Path) -> None:
    folder = tmp_path / "hotpot"
    folder.mkdir()
    (folder / "corpus.json").write_text(json.dumps({"A": ["First.", " Second."], "B": ["Other."]}))
    question = {"_id": "x", "question": "?", "type": "bridge", "supporting_facts": [["A", 0], ["B", 0], ["A", 1]]}
    (folder / "questions.json").write_text(json.dumps([question]))
    evalset = load_hotpot(folder)
    assert evalset.passages[0].text == "First. Second." and evalset.questions[0].gold_ids == ("A", "B")

    wiki = tmp_path / "wiki.json"
    wiki.write_text(
        json.dumps([{"title": "A", "text": "dup"}, {"title": "C", "text": "c"}, {"title": "C", "text": "d"}])
    )
    distractors = load_wiki2(wiki)
    assert [p.id for p in distractors] == ["wiki2:A", "wiki2:C", "wiki2:C#1"]
    mixed = evalset.with_distractors(distractors)
    assert [p.id for p in mixed.passages] == ["A", "B", "wiki2:C", "wiki2:C#1"]  # same title as a passage: skipped
    assert mixed.fingerprint() != evalset.fingerprint()
    with pytest.raises(FileNotFoundError, match="corpus.json"):
        load_hotpot(tmp_path)


def test_musique_release_format(tmp_path: Path) -> None:
    def paragraph(title: str, text: str, supporting: bool) -> dict[str, object]:
        return {"idx": 0, "title": title, "paragraph_text": text, "is_supporting": supporting}

    records = [
        {
            "id": "3hop1__1_2_3",
            "question": "Who?",
            "answerable": True,
            "paragraphs": [paragraph("A", "a", True), paragraph("B", "b", True), paragraph("C", "c", False)],
        },
        {
            "id": "2hop__4_5",
            "question": "What?",
            "answerable": True,
            "paragraphs": [paragraph("A", "a", False), paragraph("D", "d", True)],
        },
        {"id": "2hop__6_7", "question": "Not here?", "answerable": False, "paragraphs": [paragraph("E", "e", False)]},
    ]
    listed = tmp_path / "musique.json"
    listed.write_text(json.dumps(records))
    lines = tmp_path / "musique.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in records))
    for file in (listed, lines):
        evalset = load_musique(file)
        # A paragraph two questions share is one passage; the unanswerable record is skipped.
        assert [p.title for p in evalset.passages] == ["A", "B", "C", "D"]
        assert [(q.id, q.type, len(q.gold_ids)) for q in evalset.questions] == [
            ("3hop1__1_2_3", "3hop", 2),
            ("2hop__4_5", "2hop", 1),
        ]
        assert evalset.questions[0].gold_ids[0] == musique_passage_id("A", "a")
    # The same ids as musique_dev100's corpus.jsonl: sha1("title\ntext").
    assert musique_passage_id("Keala Settle", "x").startswith("mq_") and len(musique_passage_id("T", "t")) == 15

    records[0]["paragraphs"] = [paragraph("A", "a", False)]
    listed.write_text(json.dumps(records))
    with pytest.raises(ValueError, match="no supporting paragraph"):
        load_musique(listed)


def test_bootstrap_interval_brackets_the_estimate_and_is_deterministic() -> None:
    ours = [1.0] * 55 + [0.0] * 45
    theirs = [1.0] * 34 + [0.0] * 66
    low, high = bootstrap_interval(ours, theirs)
    assert low < 55 / 34 < high and (low, high) == bootstrap_interval(ours, theirs)
    low, high = bootstrap_interval(ours)
    assert 0.0 <= low < 0.55 < high <= 1.0
    assert bootstrap_interval([1.0, 1.0], [0.0, 0.0]) == (math.inf, math.inf)  # the peer never succeeds
    with pytest.raises(ValueError, match="same non-zero number"):
        bootstrap_interval([1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="level"):
        bootstrap_interval([1.0], level=1.0)
