"""Bridge channel: BM25 searches of the question joined with the names that each of its top passages writes —
the second hop of a multi-hop question, found by the entity the first hop names.

A multi-hop question names where its chain starts ("the performer of We Sweat Blood") and asks about something
further along ("the castle in the city where they formed"). The first passage is easy to find; the next one is
about an entity that passage names (Danko Jones, then Toronto) and shares few words with the question. Reading
those names off the top hits and searching again with them is entity-based pseudo-relevance feedback, one
expansion per hit so that one hit's names never dilute another's:

1. **Hits**: the ``seed_hits`` best chunks of the dense and sparse channels' lists, fused by reciprocal rank
   (when the sparse channel sent nothing, its weight being 0 for this query, the channel reads the BM25 top hits
   itself, so what it returns never depends on another channel's weight).
2. **Names**: the names each hit writes (runs of capitalised words or numbers, read as the quality gate reads a
   query's names), those the question already writes and bare numbers dropped; the first ``max_names``.
3. **Searches**: per hit, one BM25 search for the question followed by those names (``hop_k`` chunks each).
4. **Fusion**: the searches' lists by reciprocal rank (constant ``rrf_k``); the ``top_k`` best go to the joiner.

Its cost is ``seed_hits`` BM25 query encodings and searches (a few milliseconds on the embedded store).

Usage::

    bridge = BridgeRetriever(document_store=store)
    docs = bridge.run(query="What castle is in the city where Danko Jones formed?", nearest=dense_docs,
                      lexical=sparse_docs)["documents"]
    docs[0].meta["bridge_names"]   # the names of the hit whose expansion found it
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haystack import Document, component, default_from_dict

from adaptive_retrieval.components.models.sparse_text_embedder import Bm25TextEmbedder
from adaptive_retrieval.components.retrieval.channel import (
    channel_enabled,
    declare_outputs,
    search_or_failure,
    skipped_output,
)
from adaptive_retrieval.components.retrieval.ranked_hits import HitsInput
from adaptive_retrieval.components.stores.documents.vector_search import VectorSearch, vector_search
from adaptive_retrieval.components.stores.serialization import store_from_init_parameters, to_dict_with_stores
from adaptive_retrieval.components.strategy import WeightsInput
from adaptive_retrieval.components.text.names import query_names


def first_hits(lists: list[Sequence[Any]], n: int, k: int = 60) -> list[Any]:
    """The ``n`` best distinct items of ``lists`` (documents, or another channel's
    :class:`~adaptive_retrieval.components.retrieval.ranked_hits.Hit`: anything with an ``id``) fused by reciprocal
    rank (constant ``k``)."""
    scores: dict[str, float] = {}
    docs: dict[str, Any] = {}
    for ranked in lists:
        for rank, doc in enumerate(ranked):
            scores[doc.id] = scores.get(doc.id, 0.0) + 1.0 / (k + rank + 1)
            docs.setdefault(doc.id, doc)
    return [docs[i] for i in sorted(scores, key=lambda i: -scores[i])[:n]]


def bridge_names(text: str, query: str, max_names: int) -> list[str]:
    """The first ``max_names`` distinct names ``text`` writes that ``query`` does not, bare numbers left out."""
    asked = {name.lower() for name in query_names(query)}
    names = [n for n in dict.fromkeys(query_names(text)) if n.lower() not in asked and not n.isdigit()]
    return names[:max_names]


@component
class BridgeRetriever:
    """Second-hop channel ``bridge``: the question plus the names of each top hit, searched with BM25.

    :param document_store: an ``EdgeDocumentStore`` or a qdrant-haystack ``QdrantDocumentStore``.
    :param filters: Haystack filters applied to every search (the registry passes chunks only).
    :param seed_hits: how many fused dense/sparse hits are expanded (one search each).
    :param max_names: names per hit added to the question.
    :param hop_k: chunks per expanded search.
    :param top_k: chunks returned (the router's ``fetch_k`` overrides it per query).
    :param rrf_k: reciprocal-rank constant of both fusions.
    :param language: BM25 stemmer and stop-word language (must match the index's sparse embedder).
    :param engine: BM25 implementation, ``fastembed`` or ``edge`` (must match the index's sparse embedder).
    :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (typed
        ``Iterable[Document]``, for the joiner) instead of a list; the query pipeline sets it (see ``declare_outputs``).
    """

    channel = "bridge"

    def __init__(
        self,
        document_store: Any,
        filters: dict[str, Any] | None = None,
        seed_hits: int = 3,
        max_names: int = 8,
        hop_k: int = 10,
        top_k: int = 20,
        rrf_k: int = 60,
        language: str = "english",
        engine: str = "fastembed",
        share_documents: bool = False,
    ) -> None:
        for name, value in (
            ("seed_hits", seed_hits),
            ("max_names", max_names),
            ("hop_k", hop_k),
            ("top_k", top_k),
            ("rrf_k", rrf_k),
        ):
            if not isinstance(value, int) or value < 1:
                msg = f"{name} must be a positive integer, got {value!r}"
                raise ValueError(msg)
        self.document_store = document_store
        self.filters = filters
        self.seed_hits = seed_hits
        self.max_names = max_names
        self.hop_k = hop_k
        self.top_k = top_k
        self.share_documents = share_documents
        declare_outputs(self, share_documents)
        self.rrf_k = rrf_k
        self.language = language
        self.engine = engine
        self._embedder = Bm25TextEmbedder(language=language, engine=engine)
        self._search: VectorSearch = vector_search(document_store)

    def warm_up(self) -> None:
        """Load the BM25 query encoder."""
        self._embedder.warm_up()

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the store's own dictionary."""
        return to_dict_with_stores(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BridgeRetriever:
        """Deserialise, keeping the store's class."""
        return default_from_dict(cls, store_from_init_parameters(data))

    def run(
        self,
        query: str,
        nearest: HitsInput = None,
        lexical: HitsInput = None,
        top_k: int | None = None,
        weights: WeightsInput = None,
    ) -> dict[str, Any]:
        """Chunks found by the question with each top hit's names; ``[]`` when the channel has no weight or no
        hit names anything new, ``None`` when the store failed."""
        if not channel_enabled(self.channel, weights):
            return skipped_output(self.share_documents)
        if not lexical:
            # The sparse channel has no weight for this query: its top hits are still the lexical first hop.
            sparse = self._embedder.run(text=query)["sparse_embedding"]
            first_hop = search_or_failure(
                self.channel,
                lambda: self._search.search_sparse(
                    sparse, top_k=self.seed_hits, filters=self.filters, return_embedding=False
                ),
            )
            if first_hop["documents"] is None:
                return first_hop
            lexical = first_hop["documents"]
        expansions = []
        for hit in first_hits([nearest or [], lexical], self.seed_hits, self.rrf_k):
            names = bridge_names(hit.content or "", query, self.max_names)
            if names:
                expansions.append((names, self._embedder.run(text=f"{query} {' '.join(names)}")["sparse_embedding"]))
        if not expansions:
            return skipped_output(self.share_documents)

        def search() -> list[Document]:
            lists = []
            for names, sparse in expansions:
                found = self._search.search_sparse(
                    sparse, top_k=self.hop_k, filters=self.filters, return_embedding=False
                )
                for doc in found:
                    doc.meta.setdefault("bridge_names", names)
                lists.append(found)
            return first_hits(lists, top_k or self.top_k, self.rrf_k)

        return search_or_failure(self.channel, search, self.share_documents)
