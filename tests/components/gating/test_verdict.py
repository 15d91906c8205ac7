"""The gate's verdict in words: found / not found / uncertain, and a sentence that names what is missing."""

from __future__ import annotations

from haystack import Document

from adaptive_retrieval.components.gating.answerability import missing_asked
from adaptive_retrieval.components.gating.quality_gate import QualityGate
from adaptive_retrieval.components.gating.signals import missing_names
from adaptive_retrieval.components.gating.verdict import NO_CALIBRATION, VERDICTS, verdict

HANDBOOK = [
    Document(
        content="Full-time employees receive 25 days of paid vacation per calendar year.",
        meta={"doc_id": "hr", "section": "Employee Handbook > Vacation"},
    ),
    Document(
        content="Parents receive 16 weeks of paid parental leave after birth or adoption.",
        meta={"doc_id": "hr", "section": "Employee Handbook > Parental leave"},
    ),
]


class TestVerdict:
    def test_each_verdict_opens_with_what_a_person_reads(self) -> None:
        found = verdict("pass", 0.8, 0.36, top="Widget Pro FAQ > Installation")
        assert found.verdict == "found"
        assert found.reason.startswith("Found in your documents: passage 1 (Widget Pro FAQ > Installation)")

        missing = verdict("insufficient", 0.2, 0.36, missing_asked=["sick leave"])
        assert missing.verdict == "not_found"
        assert missing.reason == "Not found in your documents: no passage mentions sick leave."

        unnamed = verdict("insufficient", 0.2, 0.36, missing_names=["Widget Pro 4.0", "Oracle"])
        assert unnamed.reason == "Not found in your documents: no passage mentions 'Widget Pro 4.0' and 'Oracle'."

        weak = verdict("insufficient", 0.31, 0.36)
        assert weak.verdict == "uncertain" and "0.31" in weak.reason and "0.36" in weak.reason
        # Only a gate that checked the asked words says the passages hold them.
        assert "no passage is clearly the answer" in weak.reason and "asks about" not in weak.reason
        held = verdict("insufficient", 0.31, 0.36, asked_held=True)
        assert held.verdict == "uncertain" and "hold what the question asks about" in held.reason
        assert {found.verdict, missing.verdict, weak.verdict} == set(VERDICTS)

    def test_a_gate_without_calibration_says_so(self) -> None:
        v = verdict("pass", 0.8, 0.36, calibration="prior")
        assert v.verdict == "found" and NO_CALIBRATION in v.reason
        assert NO_CALIBRATION not in verdict("pass", 0.8, 0.36, calibration="index").reason

    def test_no_passage_is_never_found(self) -> None:
        assert verdict("pass", 0.9, 0.36, documents=0).verdict == "not_found"


class TestWhatIsMissing:
    def test_missing_asked_words_read_as_the_question_writes_them(self) -> None:
        # "leave" is in a passage (parental leave), "sick" in none: the phrase the reader recognises is reported.
        assert missing_asked(HANDBOOK, "How many days of sick leave do I get?", []) == ["sick leave"]
        assert missing_asked(HANDBOOK, "How many days of paid vacation do I get?", []) == []
        question = "What is the favourite cuisine of the defence lawyer?"
        assert missing_asked(HANDBOOK, question, []) == ["favourite cuisine", "defence lawyer"]

    def test_missing_names_are_the_names_no_passage_holds(self) -> None:
        docs = [Document(content="Widget Pro 3.0 requires PostgreSQL 14.")]
        assert missing_names(docs, "Which PostgreSQL version does Widget Pro 3.0 require?") == []
        assert missing_names(docs, "Which PostgreSQL version does Widget Max require?") == ["Widget Max"]


class TestGateVerdict:
    def test_the_gate_returns_its_verdict_and_reason(self) -> None:
        gate = QualityGate(max_retries=0, soft_match=False)
        out = gate.run(documents=HANDBOOK, query="How many days of sick leave do I get?")
        assert out["decision"] == "insufficient"
        assert out["verdict"] == "not_found"
        assert out["reason"].startswith("Not found in your documents: no passage mentions sick leave")
        assert NO_CALIBRATION in out["reason"] and out["pass_threshold"] == round(gate.pass_threshold, 4)

        # Everything asked is there, but without vectors there is no similarity to judge by: nothing to name as
        # missing, so the gate is uncertain rather than "not found".
        held = gate.run(documents=HANDBOOK, query="How many days of paid vacation do employees receive?")
        assert held["decision"] == "insufficient" and held["verdict"] == "uncertain"
        assert "hold what the question asks about" in held["reason"]
        # A word no passage holds is not the reason while the asked check itself is met (here 3 of 4 words).
        most = gate.run(documents=HANDBOOK, query="How many days of paid annual vacation do employees receive?")
        assert most["signals"]["asked"] >= gate.asked_threshold and most["verdict"] == "uncertain"
        # With the asked check off (an index whose absent-attribute pseudo-queries it did not hold back) the gate
        # claims nothing about the question's words.
        unchecked = QualityGate(max_retries=0, soft_match=False, asked_threshold=0.0)
        off = unchecked.run(documents=HANDBOOK, query="How many days of paid vacation do employees receive?")
        assert off["verdict"] == "uncertain" and "no passage is clearly the answer" in off["reason"]
