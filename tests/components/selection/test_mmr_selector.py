"""MMRSelector against a brute-force reference, including λ = 0 and λ = 1."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
from haystack import Document

from adaptive_retrieval.components.selection import MMRSelector
from adaptive_retrieval.components.selection.mmr import mmr_select


def brute_force_mmr(relevance: np.ndarray, emb: np.ndarray, k: int, lam: float) -> list[int]:
    """Textbook MMR written with plain loops, as the reference."""
    selected: list[int] = []
    for _ in range(min(k, len(relevance))):
        best, best_value = -1, -np.inf
        for i in range(len(relevance)):
            if i in selected:
                continue
            redundancy = max((float(emb[i] @ emb[j]) for j in selected), default=0.0)
            value = lam * relevance[i] - (1 - lam) * redundancy
            if value > best_value:
                best, best_value = i, value
        selected.append(best)
    return selected


@pytest.mark.parametrize(("lam", "seed"), itertools.product([0.0, 0.3, 0.5, 0.7, 1.0], range(5)))
def test_vectorised_mmr_equals_brute_force(lam: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(40, 16)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    relevance = rng.random(40)
    assert mmr_select(relevance, emb, 10, lam) == brute_force_mmr(relevance, emb, 10, lam)


def test_lambda_one_is_relevance_order_and_lambda_zero_maximises_diversity() -> None:
    emb = np.array([[1, 0], [0.99, 0.141], [0, 1], [0.7071, 0.7071]], dtype=np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    relevance = np.array([0.9, 0.8, 0.3, 0.5])
    assert mmr_select(relevance, emb, 4, 1.0) == [0, 1, 3, 2]
    # λ = 0: first pick is arbitrary among equals (index 0), then the least similar one, the orthogonal doc 2.
    assert mmr_select(relevance, emb, 2, 0.0)[1] == 2


def _documents() -> list[Document]:
    vectors = {"a": [1.0, 0.0], "a_copy": [1.0, 0.0], "b": [0.6, 0.8], "c": [0.0, 1.0]}
    scores = {"a": 1.0, "a_copy": 0.99, "b": 0.7, "c": 0.5}
    return [Document(id=i, content=i, embedding=v, score=scores[i]) for i, v in vectors.items()]


def test_selector_reuses_embeddings_and_drops_near_duplicates() -> None:
    out = MMRSelector(top_k=3, lambda_threshold=0.7).run(documents=_documents())["documents"]
    assert [d.id for d in out] == ["a", "b", "c"]
    assert [d.meta["mmr_rank"] for d in out] == [1, 2, 3]
    keep = MMRSelector(top_k=4, lambda_threshold=1.0, duplicate_threshold=None).run(documents=_documents())
    assert [d.id for d in keep["documents"]] == ["a", "a_copy", "b", "c"]


def test_same_text_from_two_sources_is_one_result_even_below_the_cosine_threshold() -> None:
    # Same paragraph under two section paths: the embedded path keeps the vectors at cosine 0.96 (< 0.98).
    copy = [0.96, 0.28]
    docs = [
        Document(id="first", content="The  for statement iterates.", embedding=[1.0, 0.0], score=1.0),
        Document(id="copy", content="the for statement\niterates.", embedding=copy, score=0.9),
        Document(id="other", content="Other text.", embedding=[0.0, 1.0], score=0.5),
    ]
    out = MMRSelector(top_k=3, lambda_threshold=1.0).run(documents=docs)["documents"]
    assert [d.id for d in out] == ["first", "other"]
    kept = MMRSelector(top_k=3, lambda_threshold=1.0, duplicate_threshold=None).run(documents=docs)["documents"]
    assert [d.id for d in kept] == ["first", "copy", "other"]


class TestMaxPerSource:
    @staticmethod
    def _passages() -> list[Document]:
        # Three passages of one article rank first; the cap lets the next documents in.
        sources = ["time-1", "time-1", "time-1", "time-2", "time-3"]
        return [
            Document(id=f"p{i}", content=f"passage {i}", embedding=[1.0, i / 10], score=1 - i / 10, meta={"source": s})
            for i, s in enumerate(sources)
        ]

    def test_a_cap_keeps_each_sources_best_passages_in_rank_order(self) -> None:
        selector = MMRSelector(top_k=3, lambda_threshold=1.0, duplicate_threshold=None)
        assert [d.id for d in selector.run(documents=self._passages())["documents"]] == ["p0", "p1", "p2"]
        capped = selector.run(documents=self._passages(), max_per_source=1)["documents"]
        assert [d.id for d in capped] == ["p0", "p3", "p4"]
        two = MMRSelector(top_k=3, lambda_threshold=1.0, duplicate_threshold=None, max_per_source=2)
        assert [d.id for d in two.run(documents=self._passages())["documents"]] == ["p0", "p1", "p3"]
        # The router's 0 lifts the component's cap for this query.
        assert [d.id for d in two.run(documents=self._passages(), max_per_source=0)["documents"]] == ["p0", "p1", "p2"]

    def test_a_document_without_a_source_is_its_own(self) -> None:
        docs = [Document(id=i, content=i, embedding=[1.0, 0.0], score=1.0) for i in ("x", "y")]
        out = MMRSelector(top_k=2, lambda_threshold=1.0, duplicate_threshold=None).run(documents=docs, max_per_source=1)
        assert [d.id for d in out["documents"]] == ["x", "y"]

    @pytest.mark.parametrize("cap", [-1, 1.5, True])
    def test_a_bad_cap_is_refused(self, cap: object) -> None:
        with pytest.raises(ValueError, match="max_per_source"):
            MMRSelector(max_per_source=cap)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="max_per_source"):
            MMRSelector().run(documents=self._passages(), max_per_source=cap)  # type: ignore[arg-type]

    def test_the_cap_serialises(self) -> None:
        selector = MMRSelector(max_per_source=1)
        assert MMRSelector.from_dict(selector.to_dict()).max_per_source == 1


def test_lambda_per_query_and_query_relevance() -> None:
    selector = MMRSelector(top_k=2, relevance="query", duplicate_threshold=None)
    out = selector.run(documents=_documents(), query_embedding=[0.0, 1.0], lambda_threshold=1.0)
    assert [d.id for d in out["documents"]] == ["c", "b"]
    with pytest.raises(ValueError, match="lambda_threshold"):
        selector.run(documents=_documents(), query_embedding=[0.0, 1.0], lambda_threshold=1.5)
    with pytest.raises(ValueError, match="dimension"):
        selector.run(documents=_documents(), query_embedding=[0.0, 1.0, 0.0])


def test_empty_input_and_missing_embeddings() -> None:
    assert MMRSelector().run(documents=[])["documents"] == []
    docs = [Document(id="x", content="x", score=1.0), Document(id="y", content="y", score=0.5)]
    assert [d.id for d in MMRSelector(top_k=2).run(documents=docs)["documents"]] == ["x", "y"]


class TestMMRSelectorWithAStore:
    """The channels hand documents on without vectors: given the store, MMR reads them by id (a real Qdrant Edge
    store) and selects what it selects with the vectors on the documents."""

    @pytest.fixture
    def store(self, tmp_path):
        from adaptive_retrieval.components.stores.documents.edge_document_store import (
            EdgeDocumentStore,
            release_all_clients,
        )

        rng = np.random.default_rng(3)
        vectors = rng.normal(size=(30, 8))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        docs = [
            Document(id=f"d{i}", content=f"passage {i}", embedding=v.tolist(), score=float(rng.random()))
            for i, v in enumerate(vectors)
        ]
        store = EdgeDocumentStore(path=str(tmp_path / "qdrant"), embedding_dim=8)
        store.write_documents(docs)
        yield store, store.fetch_documents([d.id for d in docs])  # as stored (float32 values)
        store.close()
        release_all_clients()

    def test_vectors_by_id_select_as_the_documents_own(self, store) -> None:
        store, stored = store
        scored = [
            Document(id=d.id, content=d.content, embedding=d.embedding, score=0.01 * i) for i, d in enumerate(stored)
        ]
        lean = [Document(id=d.id, content=d.content, score=d.score) for d in scored]
        query = stored[4].embedding
        for lam in (0.3, 0.7, 1.0):
            expected = MMRSelector(top_k=6).run(documents=scored, query_embedding=query, lambda_threshold=lam)
            got = MMRSelector(top_k=6, document_store=store).run(
                documents=lean, query_embedding=query, lambda_threshold=lam
            )
            assert [(d.id, d.score, d.meta, d.embedding) for d in got["documents"]] == [
                (d.id, d.score, d.meta, d.embedding) for d in expected["documents"]
            ]  # the selected documents go on with their vectors (the gate reads them)
        # Without the store the lean documents take no part in the diversity term (as before the store).
        assert all(d.embedding is None for d in MMRSelector(top_k=3).run(documents=lean)["documents"])

    def test_serialises_with_its_store(self, store, monkeypatch) -> None:
        store, _ = store
        monkeypatch.setenv("HAYSTACK_DESERIALIZATION_ALLOWLIST", "adaptive_retrieval.*")
        selector = MMRSelector(top_k=4, document_store=store)
        data = selector.to_dict()
        assert data["init_parameters"]["document_store"]["type"].endswith("EdgeDocumentStore")
        again = MMRSelector.from_dict(copy.deepcopy(data))  # it rebuilds the store in place, as Haystack's own do
        assert again.to_dict() == data and type(again.document_store) is type(store)
        plain = MMRSelector.from_dict({"type": data["type"], "init_parameters": {"top_k": 3}})  # YAML from before
        assert plain.document_store is None and plain.top_k == 3
