"""The typed result of a query: its JSON form round-trips, documents travel lean, and the text a model reads."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.gating.attempts import AttemptRecord
from adaptive_retrieval.components.strategy import Strategy
from adaptive_retrieval.pipelines.query_result import HIDDEN_META, GateOutcome, QueryResult, document_to_wire
from adaptive_retrieval.pipelines.text_answer import NO_PASSAGE, answer_text


def _document(i: int) -> Document:
    meta = {
        "source": f"/srv/docs/handbook-{i}.md",
        "title": "Employee Handbook",
        "section": f"Employee Handbook > Part {i}",
        "section_path": ["Employee Handbook", f"Part {i}"],
        "channels": {"dense": i + 1, "sparse": 2},
        "channel_scores": {"dense": 0.512345678, "sparse": 3.3},
        "source_hash": "ab" * 32,
        "file_path": f"/srv/docs/handbook-{i}.md",
        "doc_id": "d" * 32,
        "mmr_rank": i + 1,
        "position": 4,
        "department": "HR",  # a field of the user's own
    }
    return Document(
        id=f"doc{i}",
        content=f"Passage {i}: employees receive 25 days of paid vacation.",
        score=0.9 - i / 10,
        meta=meta,
        embedding=[0.1, 0.2],
        sparse_embedding=SparseEmbedding(indices=[1], values=[0.5]),
    )


def _result(n: int = 3) -> QueryResult:
    records = (AttemptRecord(0, "retry", 0.41, {"top_score": 0.5}, 3), AttemptRecord(1, "pass", 0.8, {}, 3))
    gate = GateOutcome(
        decision="pass",
        quality=0.8,
        signals={"top_score": 0.7},
        attempt=1,
        attempts=records,
        calibration="index",
        pass_threshold=0.74,
        verdict="found",
        reason="Found in your documents: passage 1 (Employee Handbook > Part 0) holds what the question asks.",
    )
    return QueryResult(
        query="How many vacation days?",
        documents=[_document(i) for i in range(n)],
        intent="factual",
        confidence=0.7,
        weights={"dense": 0.6, "sparse": 0.4},
        strategy=Strategy({"dense": 0.6, "sparse": 0.4}, top_k=10, fetch_k=30, mmr_lambda=0.8, rerank=False),
        routing={"probabilities": {"factual": 0.7}, "rules": []},
        fusion={"weights": {"dense": 0.6, "sparse": 0.4}, "sizes": {"dense": 3, "sparse": 3}, "skipped": []},
        failed={"graph_local": "locked"},
        gate=gate,
        timings_ms={"router": 1.0, "total": 5.0},
        query_embedding=[0.3, 0.4],
    )


class TestQueryResult:
    def test_its_json_form_reads_back_as_the_same_result(self) -> None:
        result = _result()
        wire = json.loads(json.dumps(result.to_dict(include_embeddings=True)))
        back = QueryResult.from_dict(wire)
        assert back.to_dict(include_embeddings=True) == wire
        assert back.verdict == "found" and back.gate.attempts[0] == result.gate.attempts[0]
        assert back.strategy == result.strategy and back.failed == {"graph_local": "locked"}
        assert back.documents[0].meta["channels"] == {"dense": 1, "sparse": 2}
        assert back.documents[0].meta["department"] == "HR"

    def test_documents_travel_lean(self) -> None:
        wire = document_to_wire(_document(0))
        assert not HIDDEN_META & set(wire["meta"]) and wire["meta"] == {"position": 4, "department": "HR"}
        assert "embedding" not in wire and "sparse_embedding" not in wire
        assert wire["provenance"] == {"dense": 1, "sparse": 2} and wire["channel_scores"]["dense"] == 0.5123
        assert "query_embedding" not in _result().to_dict()
        asked = document_to_wire(_document(0), include_embeddings=True)
        assert asked["embedding"] == pytest.approx([0.1, 0.2]) and asked["sparse_embedding"]["indices"] == [1]

    def test_head_keeps_the_first_documents(self) -> None:
        result = _result(5)
        assert [d.id for d in result.head(2).documents] == ["doc0", "doc1"] and result.head(None) is result

    def test_another_shape_is_refused(self) -> None:
        with pytest.raises(ValueError, match="not a query result"):
            QueryResult.from_dict({"query": "q", "documents": []})


class TestAnswerText:
    def test_the_verdict_first_then_each_passage_with_where_and_why(self) -> None:
        text = answer_text(_result(2))
        lines = text.splitlines()
        assert lines[0].startswith("Found in your documents: passage 1")
        assert "[1] Employee Handbook > Part 0 — handbook-0.md (found by dense #1, sparse #2)" in lines
        assert "[2] Employee Handbook > Part 1 — handbook-1.md (found by dense #2, sparse #2)" in lines
        assert "/srv/docs" not in text and "25 days of paid vacation" in text

    def test_long_passages_are_cut_and_no_passage_is_said(self) -> None:
        result = _result(1)
        long = replace(result, documents=[replace(result.documents[0], content="word " * 1000)])
        assert answer_text(long, max_chars=50).splitlines()[-1].endswith(" …")
        empty = QueryResult("q", [], "factual", 0.5, {}, Strategy())
        assert answer_text(empty) == NO_PASSAGE

    def test_the_mcp_text_of_a_served_answer_is_the_results_and_reads_back_alike(self) -> None:
        from adaptive_retrieval.pipelines.serving.wrapper_support import QueryResponse

        result = _result(2)
        made = QueryResponse.from_result(result)
        assert str(made) == answer_text(result)
        assert str(QueryResponse.model_validate(made.model_dump())) == answer_text(result)  # read back from JSON
