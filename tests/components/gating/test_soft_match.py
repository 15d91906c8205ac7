"""Soft matching of the asked words (word vectors of the shipped encoder), the index-fitted floor and the index-level
switch of the asked check."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from adaptive_retrieval.components.gating.answerability import asked_coverage, asked_words, unmatched
from adaptive_retrieval.components.gating.calibration import (
    fit_asked_floor,
    fit_asked_threshold,
    load_calibration,
    load_prior,
    save_calibration,
)
from adaptive_retrieval.components.gating.pseudo_queries import PseudoQuery
from adaptive_retrieval.components.gating.quality_gate import PRIOR, QualityGate
from adaptive_retrieval.components.gating.self_calibration import fit_calibration
from adaptive_retrieval.components.gating.signals import SIGNALS
from adaptive_retrieval.components.gating.word_vectors import WordVectors, vocabulary_words
from adaptive_retrieval.components.text.names import query_names


@pytest.fixture(scope="module")
def vectors() -> WordVectors:
    words = WordVectors()
    words.warm_up()  # the whole vocabulary, encoded once per test session (the cache folder is the session's)
    return words


def test_word_vectors_rank_a_synonym_above_an_unrelated_word(vectors: WordVectors) -> None:
    assert "spouse" in vectors and "wife" in vectors and "##ing" not in vectors and "the" not in vectors
    sims = vectors.similarity(["spouse"], ["wife", "court", "zzzqqq"])
    assert sims[0, 0] > 0.7 > sims[0, 1] and sims[0, 2] == 0.0  # a word outside the table scores 0
    # A question word outside the table is encoded (and kept), not dropped.
    outside = "spouseship"
    assert outside not in vectors
    assert vectors.similarity([outside], ["spouse"])[0, 0] > 0.3
    assert vectors.similarity([], ["wife"]).shape == (0, 1)
    words = vocabulary_words(vectors._encoder)
    assert words == sorted(words) and all(w.isalpha() and len(w) >= 3 for w in words)


def test_soft_match_credits_a_paraphrase_in_part(vectors: WordVectors) -> None:
    query = "Who was the spouse of Margaret Knox?"
    names = query_names(query)
    passage = [Document(content="Margaret Knox was the wife of the reformer John Knox.")]
    assert asked_words(query, names) == {"spous": "spouse"}
    assert asked_coverage(passage, query, names) == 0.0  # stems only
    soft = asked_coverage(passage, query, names, vectors, floor=0.6)
    assert 0.3 < soft < 1.0  # a near synonym counts, not as much as the word itself
    assert asked_coverage(passage, query, names, vectors, floor=1.0) == 0.0  # floor 1: stems only
    said = [Document(content="Her spouse was the reformer John Knox.")]
    assert asked_coverage(said, query, names, vectors, floor=0.6) == 1.0


def test_the_questions_own_names_never_match_softly(vectors: WordVectors) -> None:
    query = "What is the favorite color of the defendant Q. White?"
    names = query_names(query)
    named = [Document(content="The defendant Q. White was sentenced to two years.")]
    worn = [Document(content="The defendant Q. Brown wore a white shirt and was sentenced to two years.")]
    in_name = asked_coverage(named, query, names, vectors, floor=0.6)
    as_word = asked_coverage(worn, query, names, vectors, floor=0.6)
    assert in_name < as_word  # "white" of the name is not a colour the passage mentions


def test_unmatched_reports_the_best_similarity_of_words_no_passage_holds(vectors: WordVectors) -> None:
    query = "What is the favorite cuisine of the defense lawyer K. Gonzalez?"
    docs = [Document(content="Defense lawyer: K. Gonzalez. The defendant was sentenced to three years.")]
    values = unmatched(docs, query, query_names(query), vectors)
    assert len(values) == 2 and all(0.0 <= v < 0.9 for v in values)  # favorite, cuisine; "lawyer" is held
    assert unmatched([], query, query_names(query), vectors) == []


def test_asked_floor_is_a_quantile_of_what_absent_attributes_reach() -> None:
    values = np.linspace(0.3, 0.8, 101)
    floor, report = fit_asked_floor(values, 0.75, 0.6)
    assert floor == pytest.approx(0.675) and report["asked_unmatched"] == 101
    assert fit_asked_floor(values[:5], 0.75, 0.6) == (0.6, {"asked_unmatched": 5})  # too few: the prior


def test_the_asked_check_is_off_where_it_holds_back_few_absent_attributes() -> None:
    present = np.linspace(0.8, 1.0, 40)
    weak = np.column_stack([present, np.r_[np.full(36, 0.9), np.full(4, 0.2)]])  # holds back 10 %
    model, report = fit_asked_threshold(weak, 0.55, min_rejection=0.3)
    assert model == {"asked_threshold": 0.0} and report["asked_check"].startswith("off")
    strong = np.column_stack([present, np.r_[np.full(20, 0.9), np.full(20, 0.2)]])  # holds back 50 %
    model, report = fit_asked_threshold(strong, 0.55, min_rejection=0.3)
    assert model["asked_threshold"] > 0 and report["asked_check"] == "on"


def _samples(pairs: np.ndarray) -> dict[str, object]:
    """Self-calibration samples (as indexing stores them) whose evidence signals separate present from excluded
    rows and whose named pseudo-queries have the ``asked`` pairs ``pairs``."""
    rng = np.random.default_rng(1)
    n = len(pairs)
    x = rng.uniform(0.0, 0.4, (2 * n, len(SIGNALS)))
    x[::2] += 0.6  # present rows above excluded ones on every signal
    return {
        "x": x,
        "y": np.tile([1, 0], n),
        "group": np.repeat(np.arange(n), 2),
        "queries": [PseudoQuery(text="", sources=[str(i)], kind="named") for i in range(n)],
        "chunks": n,
        "asked": pairs,
    }


def test_pairs_that_separate_well_make_the_check_stricter_than_the_prior() -> None:
    # Present pseudo-queries hold what they ask (~1.0); absent attributes cover 0.75-0.875 of the asked words:
    # at the prior's 0.55 the check would hold none back (off), the pairs' own cut lies between the two.
    present = np.r_[np.full(36, 1.0), np.full(4, 0.8)]
    absent = np.r_[np.full(20, 0.75), np.full(20, 0.875)]
    pairs = np.column_stack([present, absent])
    model, report = fit_asked_threshold(pairs, 0.55, min_rejection=0.3)
    assert model == {"asked_threshold": 0.0} and report["asked_check"].startswith("off")  # the shipped rule
    model, report = fit_asked_threshold(pairs, 0.55, min_rejection=0.3, strict_auroc=0.9, strict_cap=0.95)
    assert report["asked_auroc"] >= 0.9 and model["asked_threshold"] == pytest.approx(report["asked_youden"])
    assert 0.875 < model["asked_threshold"] <= 0.95 and report["asked_check"].startswith("on (pairs separate")
    assert report["asked_pass_absent"] == 0.0 and report["asked_pass_present"] == 0.9
    capped, _ = fit_asked_threshold(pairs, 0.55, min_rejection=0.3, strict_auroc=0.9, strict_cap=0.8)
    assert capped == {"asked_threshold": 0.8}  # the cap bounds how strict it gets
    low, _ = fit_asked_threshold(pairs, 0.55, min_rejection=0.3, strict_auroc=0.9, strict_cap=0.7)
    assert low == {"asked_threshold": 0.0}  # holds back none of them at 0.7: off, as before
    kept, _ = fit_asked_threshold(pairs, 0.55, 0.3, strict_auroc=0.9, strict_cap=0.7, strict_keeps_check=True)
    assert kept == {"asked_threshold": 0.7}


def test_pairs_that_do_not_separate_leave_the_prior() -> None:
    rng = np.random.default_rng(0)
    mixed = np.column_stack([rng.uniform(0.6, 1.0, 40), rng.uniform(0.6, 1.0, 40)])  # AUROC ~0.5
    strong = np.column_stack([mixed[:, 0], np.r_[mixed[:20, 1], np.full(20, 0.2)]])  # half held back at 0.55
    for pairs in (mixed, strong):
        old, _ = fit_asked_threshold(pairs, 0.55, min_rejection=0.3)
        new, report = fit_asked_threshold(pairs, 0.55, min_rejection=0.3, strict_auroc=0.95, strict_cap=0.95)
        assert report["asked_auroc"] < 0.95 and new == old and new["asked_threshold"] <= 0.55


def test_self_calibration_reads_the_strict_rule_from_the_prior() -> None:
    present = np.r_[np.full(36, 1.0), np.full(4, 0.8)]
    pairs = np.column_stack([present, np.r_[np.full(20, 0.75), np.full(20, 0.875)]])
    prior = {**load_prior(), "asked_strict_auroc": 0.9, "asked_strict_cap": 0.95}
    samples = _samples(pairs)
    assert fit_calibration(samples, prior)["asked_threshold"] > 0.875
    assert fit_calibration(samples, {**prior, "asked_strict_auroc": None})["asked_threshold"] == 0.0


def test_prior_and_calibration_files_carry_the_floor(tmp_path: Path) -> None:
    prior = load_prior()
    assert 0.0 <= prior["asked_floor"] < 1.0 and 0.0 < prior["asked_floor_quantile"] < 1.0
    assert {"data", "command", "date", "metric"} <= set(prior["provenance"]["asked_floor"])
    assert {"data", "command", "date", "metric"} <= set(prior["provenance"]["asked_min_rejection"])
    model = {"weights": {"top_score": 1.0}, "bias": -1.0, "pass_threshold": 0.5, "asked_threshold": 0.5}
    old = tmp_path / "old.json"
    old.write_text(json.dumps(model))
    assert load_calibration(old)["asked_floor"] == 1.0  # written before soft matching: stems only
    with pytest.raises(ValueError, match="asked_floor"):
        save_calibration(tmp_path / "bad.json", {**model, "asked_floor": 1.5})


def test_gate_reads_the_floor_and_serialises_soft_match(tmp_path: Path) -> None:
    gate = QualityGate()
    assert gate.asked_floor == PRIOR["asked_floor"] and gate.word_vectors is not None
    params = gate.to_dict()["init_parameters"]
    assert params["asked_floor"] is None and params["soft_match"] is True
    stems_only = QualityGate(soft_match=False, asked_floor=0.7)
    assert stems_only.word_vectors is None
    again = QualityGate.from_dict(stems_only.to_dict())
    assert again.word_vectors is None and again.asked_floor == 0.7
    path = tmp_path / "gate_calibration.json"
    save_calibration(path, {"weights": {"top_score": 1.0}, "bias": -1.0, "pass_threshold": 0.5, "asked_floor": 0.55})
    calibrated = QualityGate(calibration_path=str(path), soft_match=False)
    calibrated.warm_up()
    assert calibrated.calibration == "index" and calibrated.asked_floor == 0.55


def test_the_gate_passes_a_paraphrased_attribute_and_holds_an_absent_one(vectors: WordVectors) -> None:
    e = np.eye(3, dtype=np.float32)
    text = "Anna Benson is the wife of the pitcher Kris Benson, who played for the Mets baseball team."
    docs = [Document(id="a", content=text, meta={"channels": {}}, embedding=e[0])]
    model = {"weights": {"top_score": 10.0}, "bias": -5.0, "pass_threshold": 0.5, "asked_threshold": 0.55}
    gate = QualityGate(**model, asked_floor=0.6, max_retries=0)
    paraphrased = gate.run(documents=docs, query="What team was Anna Benson's husband on?", query_embedding=e[0])
    assert paraphrased["decision"] == "pass" and paraphrased["signals"]["asked"] > 0.55
    absent = gate.run(documents=docs, query="What is the favorite cuisine of Anna Benson?", query_embedding=e[0])
    assert absent["decision"] == "insufficient"
    lexical = QualityGate(**model, asked_floor=0.6, max_retries=0, soft_match=False)
    held = lexical.run(documents=docs, query="What team was Anna Benson's husband on?", query_embedding=e[0])
    assert held["signals"]["asked"] < paraphrased["signals"]["asked"]


def test_stems_match_by_prefix_from_five_letters() -> None:
    docs = [Document(content="The method of Ada Lovelace was published in 1843.")]
    query = "What methodology did Ada Lovelace publish?"
    assert asked_coverage(docs, query, query_names(query)) == 1.0  # methodolog ~ method, publish ~ published
    short = "How many pets did Ada Lovelace keep?"  # "pet" is too short to match "petition" by prefix
    assert asked_coverage([Document(content="Ada Lovelace signed a petition.")], short, query_names(short)) == 0.0


def test_the_passages_of_one_document_count_together() -> None:
    query = "Who was the defense lawyer of K. Gonzalez and his firm?"
    head = "Defense lawyer: K. Gonzalez."
    tail = "The firm Gonzalez & Partners represented him."
    same = [Document(content=head, meta={"doc_id": "j"}), Document(content=tail, meta={"doc_id": "j"})]
    apart = [Document(content=head, meta={"doc_id": "j"}), Document(content=tail, meta={"doc_id": "k"})]
    names = query_names(query)
    assert asked_coverage(same, query, names) == 1.0  # one judgment holds all three words
    assert asked_coverage(apart, query, names) == pytest.approx(0.5 * (2 + 3) / 3)  # best document 2 of 3
