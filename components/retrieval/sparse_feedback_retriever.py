"""BM25 with pseudo-relevance feedback (RM3) as the channel ``sparse_prf``: the query widened with the words its
first hits use most, searched again.

An ad-hoc information need ("the crystalline lens in vertebrates, including humans") names a topic in a few of the
words its relevant documents use; the documents found first use the others. RM3 (Abdul-Jaleel et al., 2004) reads
the ``expansion_terms`` most probable terms of the ``feedback_docs`` first hits (each hit's BM25 term weights as a
distribution, averaged) and mixes them with the query's own terms (``original_weight`` for the query), then runs one
more BM25 search. The first hits are the dense and BM25 channels' best, fused by reciprocal rank
(:mod:`~adaptive_retrieval.components.retrieval.feedback_hits`). The terms come from the same BM25 model the index
was built with, on the same text (title, section path, content), so they are the index's own term ids; Qdrant
applies the IDF at search time. Cost: ``feedback_docs`` BM25 document encodings and one sparse search.

Usage::

    prf = SparseFeedbackRetriever(document_store=store)
    docs = prf.run(query_embedding=vector, query_sparse_embedding=bm25_query, nearest=dense_hits,
                   lexical=sparse_hits)["documents"]
"""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.models.bm25_encoder import bm25_model
from adaptive_retrieval.components.models.query_vector import QueryEmbedding
from adaptive_retrieval.components.retrieval.channel import (
    channel_enabled,
    declare_outputs,
    search_or_failure,
    skipped_output,
)
from adaptive_retrieval.components.retrieval.feedback import (
    INDEXED_META,
    check_feedback_parameters,
    expand_sparse,
    indexed_text,
    relevance_model,
)
from adaptive_retrieval.components.retrieval.feedback_hits import first_hits
from adaptive_retrieval.components.retrieval.ranked_hits import HitsInput
from adaptive_retrieval.components.stores.documents.vector_search import VectorSearch, vector_search
from adaptive_retrieval.components.stores.serialization import store_from_init_parameters, to_dict_with_stores
from adaptive_retrieval.components.strategy import WeightsInput


@component
class SparseFeedbackRetriever:
    """RM3 pseudo-relevance feedback on the BM25 channel, as the channel ``sparse_prf``.

    :param document_store: an ``EdgeDocumentStore`` or a qdrant-haystack ``QdrantDocumentStore``.
    :param filters: Haystack filters applied to every search (the registry passes chunks only).
    :param feedback_docs: first hits the expansion terms are read from.
    :param expansion_terms: terms added to the query.
    :param original_weight: the query's own share of the expanded query's term weights (RM3's λ).

    The defaults (10 documents, 10 terms, 0.5) are Anserini's RM3 defaults, not tuned here: the fit chooses only
    the channel's weight per profile.
    :param top_k: chunks returned (the router's ``fetch_k`` overrides it per query).
    :param rrf_k: reciprocal-rank constant fusing the dense and BM25 first hits.
    :param meta_fields: meta fields indexed with the content (those of the index's sparse document embedder).
    :param language: BM25 stemmer and stop-word language (must match the index's sparse embedder).
    :param engine: BM25 implementation, ``fastembed`` or ``edge`` (must match the index's sparse embedder).
    :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (typed
        ``Iterable[Document]``, for the joiner) instead of a list; the query pipeline sets it (see ``declare_outputs``).
    """

    channel = "sparse_prf"

    def __init__(
        self,
        document_store: Any,
        filters: dict[str, Any] | None = None,
        feedback_docs: int = 10,
        expansion_terms: int = 10,
        original_weight: float = 0.5,
        top_k: int = 20,
        rrf_k: int = 60,
        meta_fields: list[str] | None = None,
        language: str = "english",
        engine: str = "fastembed",
        share_documents: bool = False,
    ) -> None:
        check_feedback_parameters(feedback_docs, original_weight, "original_weight")
        for name, value in (("expansion_terms", expansion_terms), ("top_k", top_k), ("rrf_k", rrf_k)):
            if not isinstance(value, int) or value < 1:
                msg = f"{name} must be a positive integer, got {value!r}"
                raise ValueError(msg)
        self.document_store = document_store
        self.filters = filters
        self.feedback_docs = feedback_docs
        self.expansion_terms = expansion_terms
        self.original_weight = original_weight
        self.top_k = top_k
        self.share_documents = share_documents
        declare_outputs(self, share_documents)
        self.rrf_k = rrf_k
        self.meta_fields = list(INDEXED_META) if meta_fields is None else list(meta_fields)
        self.language = language
        self.engine = engine
        self._model: Any = None
        self._search: VectorSearch = vector_search(document_store)

    def warm_up(self) -> None:
        """Load the BM25 tokenizer and stemmer (the process-wide model the embedders share)."""
        if self._model is None:
            self._model = bm25_model(self.language, engine=self.engine)

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the store's own dictionary."""
        return to_dict_with_stores(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SparseFeedbackRetriever:
        """Deserialise, keeping the store's class."""
        return default_from_dict(cls, store_from_init_parameters(data))

    def expanded_query(self, query_sparse_embedding: SparseEmbedding, hits: list[Document]) -> SparseEmbedding:
        """The RM3 query: ``query_sparse_embedding`` mixed with the relevance model of ``hits``."""
        self.warm_up()
        texts = [indexed_text(d, self.meta_fields) for d in hits]
        vectors = [(v.indices.tolist(), v.values.tolist()) for v in self._model.embed(texts)] if texts else []
        model = relevance_model(vectors, self.expansion_terms) if vectors else {}
        indices, values = expand_sparse(
            query_sparse_embedding.indices, query_sparse_embedding.values, model, self.original_weight
        )
        return SparseEmbedding(indices=indices, values=values)

    def run(
        self,
        query_embedding: QueryEmbedding,
        query_sparse_embedding: SparseEmbedding,
        nearest: HitsInput = None,
        lexical: HitsInput = None,
        top_k: int | None = None,
        weights: WeightsInput = None,
    ) -> dict[str, Any]:
        """Chunks found by the expanded query; ``[]`` when the channel has no weight or the query has no BM25 term,
        ``None`` when the store failed."""
        if not channel_enabled(self.channel, weights) or not query_sparse_embedding.indices:
            return skipped_output(self.share_documents)

        def search() -> list[Document]:
            hits = first_hits(
                self._search,
                self.filters,
                self.feedback_docs,
                self.rrf_k,
                query_embedding,
                query_sparse_embedding,
                nearest,
                lexical,
            )
            expanded = self.expanded_query(query_sparse_embedding, hits)
            return self._search.search_sparse(
                expanded, top_k=top_k or self.top_k, filters=self.filters, return_embedding=False
            )

        return search_or_failure(self.channel, search, self.share_documents)
