"""Pseudo-relevance feedback: the pure RM3 / Rocchio helpers against hand-computed values, and both feedback
channels on a small real index (Qdrant Edge, ONNX embeddings, BM25), where the expanded query reaches a relevant
passage that shares no word with the query (their YAML round trip is tests/components/retrieval/test_channels.py's,
with every registered channel)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from passages import PassageWriter

from adaptive_retrieval.components.models.sparse_text_embedder import Bm25TextEmbedder
from adaptive_retrieval.components.models.text_embedder import OnnxTextEmbedder
from adaptive_retrieval.components.retrieval.dense_feedback_retriever import DenseFeedbackRetriever
from adaptive_retrieval.components.retrieval.feedback import (
    expand_sparse,
    feedback_documents,
    indexed_text,
    relevance_model,
    rocchio,
)
from adaptive_retrieval.components.retrieval.sparse_feedback_retriever import SparseFeedbackRetriever
from adaptive_retrieval.components.retrieval.vector_retrievers import DenseRetriever, SparseRetriever
from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.pipelines.store_config import make_store

# A topic search where the relevant passages use words the query does not: "myocardial infarction" is what the
# first hits about heart attacks also say, and the last relevant passage says only that.
PASSAGES = {
    "Heart attack": "A heart attack, or myocardial infarction, happens when blood flow to the heart muscle stops.",
    "Heart attack symptoms": "Chest pain in a heart attack often spreads to the arm; myocardial infarction needs "
    "urgent care.",
    "Infarction markers": "Troponin in the blood confirms myocardial infarction; levels rise hours after onset.",
    "Stroke": "A stroke happens when blood flow to part of the brain stops.",
    "Heart anatomy": "The heart has four chambers: two atria and two ventricles.",
    "Marathon": "A marathon is a long-distance foot race of 42.195 kilometres.",
    "Volcano": "Mount Etna is an active stratovolcano on the east coast of Sicily.",
    "Bread": "Sourdough bread is leavened by wild yeast in a fermented starter.",
}
QUERY = "heart attack"


class Index:
    """A real small index: Qdrant Edge with dense and BM25 vectors, and the first lists of a query."""

    def __init__(self, folder: Path) -> None:
        self.store = make_store(path=str(folder / "qdrant"))
        PassageWriter(self.store).write(PASSAGES)
        self.vector = OnnxTextEmbedder().run(text=QUERY)["embedding"]
        self.sparse = Bm25TextEmbedder().run(text=QUERY)["sparse_embedding"]
        self.nearest = DenseRetriever(document_store=self.store, top_k=3).run(query_embedding=self.vector)["documents"]
        self.lexical = SparseRetriever(document_store=self.store, top_k=3).run(query_sparse_embedding=self.sparse)[
            "documents"
        ]


@pytest.fixture
def index(tmp_path: Path, model_dir: Path) -> Iterator[Index]:
    built = Index(tmp_path)
    yield built
    release_all_clients()


class TestFeedbackHelpers:
    def test_feedback_documents_fuse_by_reciprocal_rank(self) -> None:
        a, b, c = Document(id="a", content="a"), Document(id="b", content="b"), Document(id="c", content="c")
        # b is second in both lists: 2 / (60 + 2) beats a's 1 / (60 + 1) from one list.
        assert [d.id for d in feedback_documents([[a, b], [c, b]], 2)] == ["b", "a"]
        assert [d.id for d in feedback_documents([[a], []], 5)] == ["a"]

    def test_relevance_model_averages_each_document_as_a_distribution(self) -> None:
        # doc 1: term 1 holds 3/4 of its weight, term 2 1/4; doc 2: term 2 all of it.
        model = relevance_model([([1, 2], [3.0, 1.0]), ([2], [5.0])], terms=2)
        assert model == pytest.approx({2: (0.25 + 1.0) / 2, 1: 0.75 / 2})
        assert list(relevance_model([([1, 2], [3.0, 1.0]), ([2], [5.0])], terms=1)) == [2]
        assert relevance_model([([1], [0.0])], terms=3) == {}  # nothing to learn from
        with pytest.raises(ValueError, match="weights"):
            relevance_model([([1], [1.0])], terms=1, weights=[1.0, 2.0])

    def test_expand_sparse_mixes_the_query_and_the_model(self) -> None:
        indices, values = expand_sparse([7, 3], [1.0, 1.0], {3: 0.5, 9: 0.5}, original_weight=0.6)
        assert indices == [3, 7, 9]
        assert values == pytest.approx([0.6 * 0.5 + 0.4 * 0.5, 0.6 * 0.5, 0.4 * 0.5])
        assert expand_sparse([4], [2.0], {}, 0.5) == ([4], [1.0])  # no model: the query alone

    def test_rocchio_moves_the_unit_query_toward_the_mean_hit(self) -> None:
        moved = np.asarray(rocchio([2.0, 0.0], [[0.0, 3.0], [0.0, 1.0]], query_weight=0.5))
        assert moved == pytest.approx(np.array([1.0, 1.0]) / np.sqrt(2))
        assert rocchio([0.0, 5.0], [], 0.5) == pytest.approx([0.0, 1.0])

    def test_indexed_text_puts_the_indexed_meta_first(self) -> None:
        doc = Document(content="body", meta={"title": "T", "section_path": ["A", "B"]})
        assert indexed_text(doc) == "T\nA B\nbody"

    def test_bad_parameters_are_refused(self) -> None:
        with pytest.raises(ValueError, match="feedback_docs"):
            DenseFeedbackRetriever(document_store=None, feedback_docs=0)
        with pytest.raises(ValueError, match="original_weight"):
            SparseFeedbackRetriever(document_store=None, original_weight=1.5)
        with pytest.raises(ValueError, match="expansion_terms"):
            SparseFeedbackRetriever(document_store=None, expansion_terms=0)


class TestSparseFeedbackRetriever:
    def test_expanded_query_reaches_the_passage_without_the_query_words(self, index: Index) -> None:
        plain = [d.meta["title"] for d in index.lexical]
        assert "Infarction markers" not in plain  # BM25 alone: the passage shares no query word
        prf = SparseFeedbackRetriever(document_store=index.store, feedback_docs=2, expansion_terms=5, top_k=4)
        docs = prf.run(
            query_embedding=index.vector,
            query_sparse_embedding=index.sparse,
            nearest=index.nearest,
            lexical=index.lexical,
        )["documents"]
        titles = [d.meta["title"] for d in docs]
        assert "Infarction markers" in titles, titles
        assert all(d.embedding is None for d in docs)  # lean: MMR reads the vectors from the store by id

    def test_searches_its_first_hits_itself_when_the_channels_sent_none(self, index: Index) -> None:
        prf = SparseFeedbackRetriever(document_store=index.store, feedback_docs=3, top_k=5)
        given = prf.run(
            query_embedding=index.vector,
            query_sparse_embedding=index.sparse,
            nearest=index.nearest,
            lexical=index.lexical,
        )["documents"]
        alone = prf.run(query_embedding=index.vector, query_sparse_embedding=index.sparse)["documents"]
        assert [d.id for d in alone] == [d.id for d in given]  # never depends on another channel's weight

    def test_skips_at_zero_weight_and_without_query_terms(self, index: Index) -> None:
        prf = SparseFeedbackRetriever(document_store=index.store)
        assert (
            prf.run(query_embedding=index.vector, query_sparse_embedding=index.sparse, weights={"sparse_prf": 0.0})[
                "documents"
            ]
            == []
        )
        empty = SparseEmbedding(indices=[], values=[])
        assert prf.run(query_embedding=index.vector, query_sparse_embedding=empty)["documents"] == []


class TestDenseFeedbackRetriever:
    def test_the_query_moves_to_its_first_hits(self, index: Index) -> None:
        # All the way (query_weight 0) toward one hit: that hit is nearest to the moved query.
        prf = DenseFeedbackRetriever(document_store=index.store, feedback_docs=1, query_weight=0.0, top_k=3)
        docs = prf.run(
            query_embedding=index.vector,
            query_sparse_embedding=index.sparse,
            nearest=index.nearest,
            lexical=index.lexical,
        )["documents"]
        first = feedback_documents([index.nearest[:1], index.lexical[:1]], 1)[0]
        assert docs[0].id == first.id
        assert all(d.embedding is None for d in docs)  # lean: MMR reads the vectors from the store by id

    def test_query_weight_one_is_the_plain_dense_search(self, index: Index) -> None:
        prf = DenseFeedbackRetriever(document_store=index.store, query_weight=1.0, top_k=3)
        docs = prf.run(query_embedding=index.vector, query_sparse_embedding=index.sparse)["documents"]
        assert [d.id for d in docs] == [d.id for d in index.nearest]

    def test_skips_at_zero_weight_and_refuses_a_wrong_dimension(self, index: Index) -> None:
        prf = DenseFeedbackRetriever(document_store=index.store)
        assert (
            prf.run(query_embedding=index.vector, query_sparse_embedding=index.sparse, weights={"dense_prf": 0})[
                "documents"
            ]
            == []
        )
        with pytest.raises(ValueError, match="dimension"):
            prf.run(query_embedding=[0.1, 0.2], query_sparse_embedding=index.sparse)
