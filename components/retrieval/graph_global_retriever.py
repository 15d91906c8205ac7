"""Graph-global channel: theme-level retrieval through Leiden communities and their summary embeddings.

The query vector is compared with every community summary's embedding (a matrix product over vectors cached
until the communities change); the ``max_communities`` most similar communities give their ``chunks_per_community``
most central chunks, ranked within each community by ``similarity(community) · (½ centrality + ½ cos(query,
chunk))`` and interleaved community by community so that several themes reach the fused list. Chunks come from
the document store with their embeddings (MMR needs them).

Usage::

    retriever = GraphGlobalRetriever(graph_store=graph, document_store=qdrant)
    docs = retriever.run(query_embedding=vector, top_k=20)["documents"]
    docs[0].meta["community"]   # {"level": 0, "id": 7, "similarity": 0.41, "summary": "Themes: ..."}
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict

from adaptive_retrieval.components.document_copy import with_fields
from adaptive_retrieval.components.models.query_vector import QueryEmbedding, as_float_list
from adaptive_retrieval.components.retrieval.channel import (
    channel_enabled,
    declare_outputs,
    search_or_failure,
    skipped_output,
)
from adaptive_retrieval.components.retrieval.graph_local_retriever import chunks_with_dense_vectors
from adaptive_retrieval.components.stores.documents.vector_search import vector_search
from adaptive_retrieval.components.stores.graph.graph_store import (
    Community,
    GraphStore,
    graph_store_from_init_parameters,
)
from adaptive_retrieval.components.stores.serialization import store_from_init_parameters, to_dict_with_stores
from adaptive_retrieval.components.strategy import WeightsInput

logger = logging.getLogger(__name__)


@component
class GraphGlobalRetriever:
    """Community-level graph retrieval as the adaptive channel ``graph_global``.

    Skips itself when the router gives ``graph_global`` no weight.

    :param graph_store: the knowledge graph with communities (written by ``CommunityDetector``).
    :param document_store: the Qdrant store holding the chunks.
    :param top_k: chunks returned (the router's ``fetch_k`` overrides it per query).
    :param max_communities: most similar communities whose chunks are returned.
    :param chunks_per_community: central chunks taken from each of them.
    :param level: community level to search (``None``: all levels).
    :param min_similarity: communities less similar than this to the query are ignored.
    :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (typed
        ``Iterable[Document]``, for the joiner) instead of a list; the query pipeline sets it (see ``declare_outputs``).
    """

    channel = "graph_global"

    def __init__(
        self,
        graph_store: GraphStore,
        document_store: Any,
        top_k: int = 20,
        max_communities: int = 3,
        chunks_per_community: int = 10,
        level: int | None = 0,
        min_similarity: float = 0.0,
        share_documents: bool = False,
    ) -> None:
        if not isinstance(graph_store, GraphStore):
            msg = f"graph_store must implement the GraphStore protocol, got {type(graph_store).__name__}"
            raise TypeError(msg)
        if top_k < 1 or max_communities < 1 or chunks_per_community < 1:
            msg = "top_k, max_communities and chunks_per_community must be >= 1"
            raise ValueError(msg)
        self.graph_store = graph_store
        self.document_store = document_store
        self._search = vector_search(document_store)
        self.top_k = top_k
        self.share_documents = share_documents
        declare_outputs(self, share_documents)
        self.max_communities = max_communities
        self.chunks_per_community = chunks_per_community
        self.level = level
        self.min_similarity = min_similarity
        self._cache: tuple[int, list[Community], np.ndarray] | None = None
        self._lock = threading.Lock()

    def to_dict(self) -> dict[str, Any]:
        """Serialise with both stores' own dictionaries."""
        return to_dict_with_stores(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GraphGlobalRetriever:
        """Deserialise, keeping both stores' classes."""
        return default_from_dict(cls, graph_store_from_init_parameters(store_from_init_parameters(data)))

    def _communities(self) -> tuple[list[Community], np.ndarray]:
        """Communities with embeddings and their matrix, reloaded only when the store's version changes."""
        version = self.graph_store.community_version()
        with self._lock:
            if self._cache is None or self._cache[0] != version:
                communities = [c for c in self.graph_store.communities(self.level) if c.embedding and c.chunks]
                matrix = (
                    np.asarray([c.embedding for c in communities], dtype=np.float32)
                    if communities
                    else np.zeros((0, 0), dtype=np.float32)
                )
                self._cache = (version, communities, matrix)
            return self._cache[1], self._cache[2]

    def rank_communities(self, query_embedding: list[float]) -> list[tuple[Community, float]]:
        """The ``max_communities`` communities most similar to the query, with their cosine similarity.

        :raises ValueError: when the query's dimension differs from the summaries' embeddings.
        """
        communities, matrix = self._communities()
        if not communities:
            return []
        q = np.asarray(query_embedding, dtype=np.float32)
        if q.shape[0] != matrix.shape[1]:
            msg = (
                f"Query embedding has dimension {q.shape[0]} but community summaries were embedded with "
                f"{matrix.shape[1]} dimensions: use the model the graph was built with."
            )
            raise ValueError(msg)
        similarities = matrix @ (q / max(float(np.linalg.norm(q)), 1e-12))
        order = np.argsort(-similarities, kind="stable")[: self.max_communities]
        return [(communities[i], float(similarities[i])) for i in order if similarities[i] >= self.min_similarity]

    def retrieve(self, query_embedding: list[float], top_k: int) -> list[Document]:
        """The channel's documents for one query (what :meth:`run` returns, without the failure handling).

        :raises ValueError: when the query's dimension differs from the summaries' embeddings.
        """
        ranked = self.rank_communities(query_embedding)
        if not ranked:
            return []
        # Candidates: the central chunks of each selected community, fetched with their embeddings.
        columns = [(c, sim, list(c.chunks[: self.chunks_per_community])) for c, sim in ranked]
        stored = chunks_with_dense_vectors(self._search, sorted({cid for *_, ch in columns for cid, _ in ch}))
        q = np.asarray(query_embedding, dtype=np.float32)
        per_community: list[list[tuple[float, Document]]] = []
        for community, similarity, chunks in columns:
            top = max((w for _, w in chunks), default=1.0) or 1.0
            scored = []
            for chunk_id, centrality in chunks:
                doc = stored.get(chunk_id)
                if doc is None or doc.embedding is None:  # in the graph but no longer in the document store
                    continue
                # Central to the theme and relevant to the question: half each.
                relevance = float(np.dot(q, np.asarray(doc.embedding, dtype=np.float32)))
                score = similarity * (0.5 * centrality / top + 0.5 * max(relevance, 0.0))
                info = {"level": community.level, "id": community.id, "similarity": round(similarity, 4)}
                info["summary"] = community.summary
                scored.append((score, with_fields(doc, score=score, meta={**doc.meta, "community": info})))
            per_community.append(sorted(scored, key=lambda x: (-x[0], x[1].id)))
        # Interleave: the best chunk of each community first, then the second best... (several themes).
        documents: list[Document] = []
        seen: set[str] = set()
        for position in range(max((len(c) for c in per_community), default=0)):
            for column in per_community:
                if position < len(column) and column[position][1].id not in seen:
                    seen.add(column[position][1].id)
                    documents.append(column[position][1])
        return documents[:top_k]

    def run(
        self,
        query_embedding: QueryEmbedding,
        top_k: int | None = None,
        weights: WeightsInput = None,
    ) -> dict[str, Any]:
        """Central chunks of the communities closest to the query; none when the router disabled the channel.

        A failing store is logged and gives ``documents=None`` (the joiner skips the channel).

        :param query_embedding: the query vector.
        :param top_k: chunks to return (default: the init ``top_k``).
        :param weights: the router's channel weights; ``weights["graph_global"] == 0`` skips the search.
        :raises ValueError: when the query's dimension differs from the summaries' embeddings.
        """
        if not channel_enabled(self.channel, weights):
            return skipped_output(self.share_documents)
        query_embedding = as_float_list(query_embedding)
        top_k = top_k or self.top_k
        return search_or_failure(self.channel, lambda: self.retrieve(query_embedding, top_k), self.share_documents)
