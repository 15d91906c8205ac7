"""The query path's cheaper forms give what the plain ones give: Edge points made into Documents directly, the
vector check over one matrix, the ASCII fast path of accent folding (scripts/lab/result_fingerprint.py checks whole
queries)."""

from __future__ import annotations

import unicodedata
import warnings

import numpy as np
import pytest
from haystack import Document

from adaptive_retrieval.components.stores.documents.edge_checks import vector_problem
from adaptive_retrieval.components.stores.documents.edge_conversion import document_to_point, point_to_document
from adaptive_retrieval.components.text.keys import fold
from adaptive_retrieval.components.text.terms import content_terms


def _unit(seed: int, dim: int = 8) -> list[float]:
    v = np.random.default_rng(seed).standard_normal(dim)
    return (v / np.linalg.norm(v)).tolist()


def test_point_to_document_equals_the_documents_own_constructor() -> None:
    original = Document(id="a", content="text", meta={"level": 0, "source": "s.md"}, embedding=_unit(1))
    point = document_to_point(original)
    made = point_to_document(point, score=0.5)
    # What Haystack's constructor makes of the point's own fields (its vector as the point holds it).
    embedding = point.vector["text-dense"]
    expected = Document(id="a", content="text", meta={"level": 0, "source": "s.md"}, embedding=embedding, score=0.5)
    assert made.embedding == pytest.approx(_unit(1), abs=1e-6)
    assert made == expected and list(made.__dict__) == list(expected.__dict__)
    assert made.to_dict() == expected.to_dict()
    with warnings.catch_warnings(record=True) as caught:  # still a plain Document: mutation still warns
        warnings.simplefilter("always")
        made.score = 1.0
    assert any("Mutating attribute" in str(w.message) for w in caught)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda docs: docs[2].__dict__.update(embedding=[float("nan")] * 8), "document d2 has a vector with non"),
        (lambda docs: docs[1].__dict__.update(embedding=[2.0] + [0.0] * 7), "document d1 has a vector of norm 2"),
        (lambda docs: docs[3].__dict__.update(score=float("inf")), "document d3 came back with the score inf"),
        (lambda docs: docs[0].__dict__.update(embedding=[1.0, 0.0]), None),  # two lengths: checked one by one
        (lambda docs: docs[4].__dict__.update(embedding=[3.0, 0.0]), "document d4 has a vector of norm 3"),
    ],
)
def test_vector_problem_names_the_first_bad_document(damage, message: str | None) -> None:
    docs = [Document(id=f"d{i}", content="x", embedding=_unit(i), score=0.1 * i) for i in range(5)]
    assert vector_problem(docs, normalised=True) is None
    damage(docs)
    problem = vector_problem(docs, normalised=True)
    if message is None:
        assert problem is None
    else:
        assert problem is not None and problem.startswith(message)


def test_accent_folding_fast_path_matches_the_full_walk() -> None:
    def full(text: str) -> str:
        return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))

    for text in ("Plain ASCII, with (punctuation) & digits 42", "Café Déjà vu", "naïve façade", ""):
        assert fold(text) == full(text)
    mixed, lower = "The Finally clause of Try statements", "the finally clause of try statements"
    assert content_terms(mixed) == content_terms(lower)
    assert content_terms("Café Déjà") == content_terms("cafe deja")
