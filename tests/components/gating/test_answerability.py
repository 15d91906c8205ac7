"""The gate's answerability check (``asked``), its prior as a data file, robust query text and the reader hook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from haystack import Document, Pipeline, component
from haystack.dataclasses import ChatMessage

from adaptive_retrieval.components.gating import ChatReader, ModelReader
from adaptive_retrieval.components.gating.answerability import (
    ASKED_DOCUMENTS,
    answer_type,
    asked_coverage,
    asked_terms,
)
from adaptive_retrieval.components.gating.calibration import (
    PRIOR_FILE,
    asked_check_report,
    load_prior,
)
from adaptive_retrieval.components.gating.pseudo_queries import pseudo_queries
from adaptive_retrieval.components.gating.quality_gate import DEFAULT_WEIGHTS, PRIOR, QualityGate
from adaptive_retrieval.components.gating.signals import gate_signals
from adaptive_retrieval.components.text.names import query_names
from adaptive_retrieval.components.text.terms import content_terms

JUDGMENT = Document(
    id="j1",
    content="Defense Lawyer: K. Gonzalez. Law Firm: Gonzalez & Partners. The defendant was sentenced to three years.",
    meta={"title": "Trenton, Springfield, Court"},
)
OTHER = Document(id="o1", content="A recipe book about Italian cuisine and pasta.", meta={"title": "Cooking"})


# -- asked -------------------------------------------------------------------------------------------------


def test_asked_reads_only_the_first_passages_of_the_list() -> None:
    # The check means the same whatever a routing profile's top_k: a passage below the first ASKED_DOCUMENTS
    # does not hold the fact for it.
    q = "Who was the defense lawyer for K. Gonzalez?"
    names = query_names(q)
    filler = [
        Document(id=f"f{i}", content=f"K. Gonzalez attended hearing {i}.", meta={"doc_id": f"d{i}"})
        for i in range(ASKED_DOCUMENTS)
    ]
    assert asked_coverage([*filler[:-1], JUDGMENT], q, names) == 1.0
    assert asked_coverage([*filler, JUDGMENT], q, names) < 1.0


def test_asked_terms_are_what_the_question_asks_without_names_and_framing() -> None:
    q = "According to the judgment of Trenton, Springfield, Court, who was the defense lawyer for T. Collins?"
    assert asked_terms(q, query_names(q)) == content_terms("defense lawyer")
    q = "According to the judgment of Trenton, Springfield, Court, summarize the facts of J. Hall's crimes."
    assert "summar" not in asked_terms(q, query_names(q))


def test_asked_coverage_tells_a_present_attribute_from_an_absent_one() -> None:
    present = "According to the judgment of Trenton, Springfield, Court, which law firm did K. Gonzalez belong to?"
    absent = "According to the judgment of Trenton, Springfield, Court, what is the favorite cuisine of K. Gonzalez?"
    assert asked_coverage([JUDGMENT, OTHER], present, query_names(present)) > 0.6
    assert asked_coverage([JUDGMENT], absent, query_names(absent)) == 0.0
    # Best passage 2 of 4 (law, firm), the list 3 of 4 ("serves" nowhere): the mean.
    both = "According to the judgment of Trenton, Springfield, Court, which law firm serves Italian cuisine?"
    assert asked_coverage([JUDGMENT, OTHER], both, query_names(both)) == pytest.approx(0.5 * (2 + 3) / 4)
    assert asked_coverage([], present, query_names(present)) == 0.0
    assert asked_coverage([JUDGMENT], "K. Gonzalez?", ["K. Gonzalez"]) == 1.0  # nothing asked beyond the name


def test_the_gate_does_not_pass_an_on_topic_document_that_lacks_the_asked_fact() -> None:
    e = np.eye(3, dtype=np.float32)
    docs = [Document(id="j1", content=JUDGMENT.content, meta={**JUDGMENT.meta, "channels": {}}, embedding=e[0])]
    gate = QualityGate(weights={"top_score": 10.0}, bias=-5.0, pass_threshold=0.5, asked_threshold=0.6)
    ask = "According to the judgment of Trenton, Springfield, Court, {}"
    found = gate.run(documents=docs, query=ask.format("who was the defense lawyer?"), query_embedding=e[0].tolist())
    assert found["decision"] == "pass" and found["signals"]["asked"] == 1.0
    missing = gate.run(
        documents=docs, query=ask.format("what is the favorite cuisine of the defense lawyer?"), query_embedding=e[0]
    )
    assert missing["retry"]  # same evidence, the asked attribute absent: no pass
    off = QualityGate(weights={"top_score": 10.0}, bias=-5.0, pass_threshold=0.5, asked_threshold=0.0)
    assert off.run(documents=docs, query=ask.format("what is the favorite cuisine?"), query_embedding=e[0])["decision"]


def test_asked_check_report_from_pseudo_query_pairs() -> None:
    pairs = np.column_stack([np.linspace(0.7, 1.0, 20), np.linspace(0.0, 0.5, 20)])
    report = asked_check_report(pairs, 0.6)
    assert report["asked_auroc"] == 1.0 and report["asked_pass_present"] == 1.0 and report["asked_pass_absent"] == 0.0
    assert asked_check_report(pairs[:3], 0.6) == {"asked_pairs": 3}  # too few pairs: nothing to report


def test_the_kind_of_answer_a_question_names_need_not_be_written() -> None:
    """ "Which protocol?": the answer is a protocol; the passage that names it need not write "protocol"."""
    names = query_names("The method that the with statement calls on entry is defined by which protocol?")
    assert answer_type("The method that the with statement calls on entry is defined by which protocol?", names) == {
        "protocol"
    }
    assert answer_type("What is the favourite cuisine of the lawyer?", []) == set()
    docs = [Document(content="A context manager defines __enter__ and __exit__; the with statement calls them.")]
    kind_only = "The method that the with statement calls on entry is defined by which protocol?"
    assert asked_coverage(docs, kind_only, query_names(kind_only)) == 1.0  # nothing asked beyond the kind
    crime = "What crime did he commit?"  # "crime" is the kind: half forgiven where it is not written
    assert asked_coverage([Document(content="He committed theft.")], crime, []) == 0.75
    assert asked_coverage([Document(content="He was born in Ohio.")], crime, []) == 0.25


def test_pseudo_queries_carry_an_absent_attribute_variant() -> None:
    chunks = [
        Document(content=f"{text} It was recorded in the ledger of the city.", meta={"doc_id": d, "title": t})
        for d, t, text in [
            ("a", "Harbour Court", "The harbour court fined the captain for smuggling tobacco and rum."),
            ("b", "Mountain Court", "The mountain court acquitted the shepherd of stealing goats and wool."),
            ("c", "River Court", "The river court sentenced the miller for flooding meadows and orchards."),
        ]
    ]
    queries = [q for q in pseudo_queries(chunks, 30, seed=1) if q.kind == "named" and q.absent]
    assert queries
    held = {d: set().union(*(content_terms(c.content) for c in chunks if c.meta["doc_id"] == d)) for d in "abc"}
    for q in queries:
        extra = content_terms(q.absent) - content_terms(q.text)
        assert extra and any(term not in held[q.sources[0]] for term in extra)


# -- the prior as data -------------------------------------------------------------------------------------


def test_prior_is_a_data_file_with_provenance() -> None:
    prior = load_prior()
    assert prior["weights"] == DEFAULT_WEIGHTS and PRIOR["pass_threshold"] == prior["pass_threshold"]
    for part in ("weights", "asked_threshold"):
        assert {"data", "command", "date", "metric"} <= set(prior["provenance"][part])
    assert json.loads(PRIOR_FILE.read_text())["version"] == 1


def test_gate_serialises_the_prior_by_reference_and_round_trips() -> None:
    gate = QualityGate()
    params = gate.to_dict()["init_parameters"]
    assert params["weights"] is None and params["asked_threshold"] is None and params["reader"] is None
    assert gate.weights == DEFAULT_WEIGHTS and gate.asked_threshold == PRIOR["asked_threshold"]
    again = QualityGate.from_dict(gate.to_dict())
    assert again.to_dict() == gate.to_dict() and again.weights == gate.weights
    mine = QualityGate(weights={"top_score": 1.0}, bias=-1.0, pass_threshold=0.4, asked_threshold=0.3)
    assert QualityGate.from_dict(mine.to_dict()).asked_threshold == 0.3
    with pytest.raises(ValueError, match="asked_threshold"):
        QualityGate(asked_threshold=1.5)


# -- robust query text (long queries: tests/components/models/test_onnx_encoder.py) ---------------------------


def test_an_all_caps_query_reads_like_its_lower_case_form() -> None:
    shouted = "WHAT IS THE FAVORITE CUISINE OF THE DEFENSE LAWYER K. GONZALEZ IN 2021?"
    assert query_names(shouted) == query_names(shouted.lower()) == ["2021"]
    assert query_names("Who founded the BBC in London?") == ["BBC", "London"]  # one acronym is still a name
    e = np.eye(3, dtype=np.float32)
    docs = [Document(id="j1", content=JUDGMENT.content, meta={**JUDGMENT.meta, "channels": {}}, embedding=e[0])]
    assert gate_signals(docs, shouted, e[0]) == gate_signals(docs, shouted.lower(), e[0])
    gate = QualityGate(max_retries=0)
    assert (
        gate.run(documents=docs, query=shouted, query_embedding=e[0])["decision"]
        == gate.run(documents=docs, query=shouted.lower(), query_embedding=e[0])["decision"]
    )


# -- reader hook -------------------------------------------------------------------------------------------


def _tiny_bert(folder: Path, head: str) -> Path:
    """A randomly initialised 2-layer BERT with a 60-word WordPiece vocabulary, saved like a downloaded model."""
    from transformers import (
        BertConfig,
        BertForQuestionAnswering,
        BertForSequenceClassification,
        BertTokenizerFast,
    )

    folder.mkdir(parents=True)
    words = "the a of court lawyer defense who was for what is favorite cuisine k gonzalez firm law".split()  # noqa: SIM905
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *[f"w{i}" for i in range(40)], ".", "?", ",", "&"]
    (folder / "vocab.txt").write_text("\n".join(vocab), encoding="utf-8")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1 if head == "cross-encoder" else 2,  # a QA head has a start and an end logit
    )
    kind = BertForSequenceClassification if head == "cross-encoder" else BertForQuestionAnswering
    kind(config).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("kind", ["cross-encoder", "extractive"])
def test_model_reader_loads_a_local_model_and_the_gate_consults_it(tmp_path: Path, kind: str) -> None:
    reader = ModelReader(model=str(_tiny_bert(tmp_path / kind, kind)), kind=kind)
    docs = [JUDGMENT, OTHER]
    scores = reader.run(query="Who was the defense lawyer?", documents=docs)
    assert len(scores["scores"]) == 2 and all(0.0 <= s <= 1.0 for s in scores["scores"])
    assert scores["score"] == max(scores["scores"])
    assert ModelReader.from_dict(reader.to_dict()).to_dict() == reader.to_dict()
    e = np.eye(3, dtype=np.float32)
    listed = [Document(id=d.id, content=d.content, meta={**d.meta, "channels": {}}, embedding=e[0]) for d in docs]
    strict = QualityGate(
        weights={"top_score": 10.0}, bias=-5.0, pass_threshold=0.5, reader=reader, reader_threshold=1.0, max_retries=0
    )
    strict.warm_up()
    out = strict.run(documents=listed, query="Who was the defense lawyer?", query_embedding=e[0])
    assert out["signals"]["reader"] == pytest.approx(scores["score"], abs=1e-4) and out["decision"] == "insufficient"
    again = QualityGate.from_dict(strict.to_dict())
    assert isinstance(again.reader, ModelReader) and again.reader.kind == kind


def test_model_reader_fails_loudly_for_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ModelReader(model=str(tmp_path / "nothing")).warm_up()
    with pytest.raises(ValueError, match="Unknown reader kind"):
        ModelReader(model=str(tmp_path), kind="generative")


@component
class ScriptedChatGenerator:
    """Mock of an LLM service (none can run here): answers "yes" when the prompt holds ``word``, else "no"."""

    def __init__(self, word: str = "Gonzalez") -> None:
        self.word = word
        self.prompts: list[str] = []

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.ScriptedChatGenerator", "init_parameters": {"word": self.word}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScriptedChatGenerator:
        return cls(**data["init_parameters"])

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        self.prompts.append(messages[-1].text or "")
        return {"replies": [ChatMessage.from_assistant("Yes." if self.word in self.prompts[-1] else "No")]}


def test_a_chat_generator_is_wrapped_as_a_reader_and_serialised() -> None:
    gate = QualityGate(reader=ScriptedChatGenerator(), max_retries=0)
    assert isinstance(gate.reader, ChatReader)
    assert gate.reader.score("Who defended him?", [JUDGMENT]) == 1.0
    assert gate.reader.score("Who defended him?", [OTHER]) == 0.0
    assert gate.reader.score("Who defended him?", []) == 0.0
    data = gate.to_dict()
    pipeline = Pipeline()
    pipeline.add_component("gate", gate)
    # The generator's class is deserialised through Haystack's allowlist, like any ChatGenerator in a YAML.
    again = Pipeline.loads(pipeline.dumps(), allowed_modules=["adaptive_retrieval", __name__]).get_component("gate")
    assert isinstance(again.reader, ChatReader) and again.to_dict() == data
    with pytest.raises(TypeError, match="reader must be"):
        QualityGate(reader=object())
