"""LeanAnswer: the final documents without their vectors unless asked, the gate's decision passed on."""

from __future__ import annotations

from haystack import Document
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.gating import LeanAnswer


def _documents() -> list[Document]:
    sparse = SparseEmbedding(indices=[1, 5], values=[0.5, 1.5])
    return [
        Document(content="a", embedding=[0.1] * 4, sparse_embedding=sparse, meta={"source": "a.md"}),
        Document(content="b", meta={"source": "b.md"}),
    ]


def test_vectors_are_left_out_by_default_and_the_rest_kept() -> None:
    documents = _documents()
    out = LeanAnswer().run(documents=documents, decision="pass", quality=0.8, query_embedding=[0.2] * 4)
    assert [d.id for d in out["documents"]] == [d.id for d in documents]
    assert all(d.embedding is None and d.sparse_embedding is None for d in out["documents"])
    assert out["documents"][0].meta == {"source": "a.md"} and out["documents"][1] is documents[1]
    assert documents[0].embedding == [0.1] * 4, "the caller's documents are not changed"
    assert (out["decision"], out["quality"], out["query_embedding"]) == ("pass", 0.8, None)


def test_vectors_on_request_per_run_or_by_default() -> None:
    documents = _documents()
    asked = LeanAnswer().run(documents=documents, query_embedding=[0.2] * 4, include_embeddings=True)
    assert asked["documents"] == documents and asked["query_embedding"] == [0.2] * 4
    kept = LeanAnswer(include_embeddings=True)
    assert kept.run(documents=documents)["documents"][0].embedding == [0.1] * 4
    assert kept.run(documents=documents, include_embeddings=False)["documents"][0].embedding is None
    from haystack.core.serialization import component_from_dict, component_to_dict

    data = component_to_dict(kept, "answer")
    assert data["init_parameters"] == {"include_embeddings": True}
    assert component_from_dict(LeanAnswer, data, "answer").include_embeddings is True
