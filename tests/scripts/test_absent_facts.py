"""On-topic unanswerable questions built by rule (scripts/lab/evaluation/absent_facts.py) for the gate's evaluation."""

from __future__ import annotations

import numpy as np

from evaluation.absent_facts import DocumentText, absent_fact_questions


def _judgment(court: str, defendant: str, lawyer: str, facts: str) -> str:
    return (
        f"IN THE {court.upper()}\n**Court**: {court}\n**Defendant**: {defendant}\n**Defense Lawyer**: {lawyer}\n"
        f"**Law Firm**: {lawyer.split()[-1]} & Associates\n\n{facts}"
    )


def _documents() -> list[DocumentText]:
    rows = [
        ("a", "Upton, Georgetown, Court", "R. Johnson", "B. Lewis",
         "The defendant embezzled flood relief funds and transferred them to a fictitious company."),
        ("b", "Ashton, Clarksville, Court", "J. Gonzalez", "M. Ward",
         "The defendant drove while intoxicated and injured two pedestrians at a crossing."),
        ("c", "Hartford, Ashland, Court", "Q. Ruiz", "T. Collins",
         "The defendant sold counterfeit watches through an online shop for two years."),
        ("d", "Norwood, Unionville, Court", "S. Taylor", "K. Patel",
         "The defendant evaded taxes by hiding income in offshore accounts."),
    ]  # fmt: skip
    vectors = np.eye(4, dtype=np.float32)
    vectors[1] = vectors[0] * 0.9 + vectors[1] * 0.1  # b is a's nearest document
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        DocumentText(pid, court, _judgment(court, who, lawyer, facts), v)
        for (pid, court, who, lawyer, facts), v in zip(rows, vectors, strict=True)
    ]


class TestAbsentFactQuestions:
    def test_a_question_is_asked_of_its_subjects_nearest_document_that_lacks_the_attribute(self) -> None:
        question = "According to the judgment of Upton, Georgetown, Court, where did R. Johnson transfer the funds?"
        built = absent_fact_questions([("q1", question, ["a"])], _documents())
        assert len(built) == 1
        twin = built[0]
        assert twin.document == "b" and twin.source == "q1" and twin.subject == "a"
        # The other document's court and its defendant (the name after the same role words) replace the subject's.
        assert twin.question == (
            "According to the judgment of Ashton, Clarksville, Court, where did J. Gonzalez transfer the funds?"
        )
        assert "transfer" in twin.attribute and "funds" in twin.attribute

    def test_no_twin_where_every_document_holds_the_attribute_or_the_subject_is_not_named(self) -> None:
        docs = _documents()
        lawyer = "According to the judgment of Upton, Georgetown, Court, who was the defense lawyer of R. Johnson?"
        assert absent_fact_questions([("q2", lawyer, ["a"])], docs) == []  # every judgment names its lawyer
        unnamed = "Where did the defendant transfer the funds?"
        assert absent_fact_questions([("q3", unnamed, ["a"])], docs) == []  # no title written: no subject
