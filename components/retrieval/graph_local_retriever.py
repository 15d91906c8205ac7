"""Graph-local channel: chunks that mention the query's entities, the entities of the top dense hits, and
their one-hop neighbours — the channel that reaches second-hop (bridge) passages sharing no word with the query.

How a query is scored (every step bounded):

1. **Seeds from the query**: the normalised n-grams of the query (up to ``max_ngram`` words, plural variants
   included) looked up in the graph's entity dictionary; a match inside a longer match counts half.
   Strength = ``idf(e) = log(1 + N / df(e))``.
2. **Seeds from the top dense hits**: the entities of the ``seed_hits`` nearest chunks (one vector search in the
   document store), strength ``hit_seed_weight · hit_decay^rank · idf(e)``. These
   carry the bridge: a hit about a film names its director, and the director's own chunk mentions him as its
   title. A hit's own entities give no credit back to that hit, so the channel surfaces what the hits point
   to rather than the hits again.
3. Only the ``max_seeds`` strongest seeds are kept; the ``hop_seeds`` strongest expand **one hop** over
   RELATES_TO: neighbour ``n`` of seed ``e`` gains ``hop_decay · s(e) · w(e, n) / max w(e, ·) · idf(n) / idf_max``.
4. **Chunks**: ``score(c) = Σ_e s(e) · w(e, c)`` over the seeds mentioned in ``c`` (at most
   ``max_chunks_per_entity`` heaviest chunks per entity; a chunk's title entity weighs most). The
   ``candidate_pool`` best chunks are fetched from the document store **with their embeddings** (MMR needs
   them) and, when ``similarity_weight > 0``, the graph score (scaled to [0, 1]) is blended with the chunk's
   cosine similarity to the query.

Usage::

    retriever = GraphLocalRetriever(graph_store=graph, document_store=qdrant)
    docs = retriever.run(query="Who directed the film shot in Leland?", query_embedding=vector)["documents"]
    docs[0].meta["graph_entities"]   # the seed entities that brought this chunk
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Callable
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
from adaptive_retrieval.components.retrieval.entity_linking import link_exact
from adaptive_retrieval.components.retrieval.ranked_hits import HitsInput
from adaptive_retrieval.components.stores.documents.vector_search import VectorSearch, vector_search
from adaptive_retrieval.components.stores.graph.graph_store import GraphStore, graph_store_from_init_parameters, idf
from adaptive_retrieval.components.stores.serialization import store_from_init_parameters, to_dict_with_stores
from adaptive_retrieval.components.strategy import WeightsInput

logger = logging.getLogger(__name__)


def chunks_with_dense_vectors(search: VectorSearch, ids: list[str]) -> dict[str, Document]:
    """``{id: Document}`` for the ids found in the store, with their dense embedding and no sparse vector (no
    graph channel or MMR reads it)."""
    return {d.id: d for d in search.fetch_documents(ids)} if ids else {}


def blend_graph_ranking(
    search: VectorSearch,
    ranked: list[tuple[str, float]],
    query_embedding: list[float] | None,
    similarity_weight: float,
    top_k: int,
    annotate: Callable[[str, float], dict[str, Any]],
) -> list[Document]:
    """A graph channel's final list: its graph-ranked chunk ids scored with their stored vectors (read by id, no
    document made), the graph score scaled to [0, 1] by the best and blended with the query–chunk cosine by
    ``similarity_weight``, the meta ``annotate(chunk_id, graph_score)`` adds, best ``top_k`` first; only those are
    fetched as documents. Chunks gone from the store are left out."""
    if not ranked:
        return []
    vectors = search.dense_vectors([c for c, _ in ranked])
    best = ranked[0][1]
    q = None if query_embedding is None else np.asarray(query_embedding, dtype=np.float32)
    scored: list[tuple[float, str, float]] = []
    for chunk_id, graph_score in ranked:
        if chunk_id not in vectors:  # in the graph but no longer in the document store
            continue
        score = graph_score / best
        vector = vectors[chunk_id]
        if similarity_weight > 0 and q is not None and vector is not None:
            similarity = float(np.dot(q, np.asarray(vector, dtype=np.float32)))
            score = (1 - similarity_weight) * score + similarity_weight * similarity
        scored.append((score, chunk_id, graph_score))
    scored.sort(key=lambda x: (-x[0], x[1]))
    # Only the kept chunks become Documents (the pool is twice top_k or more), without vectors: a channel's
    # documents travel without them.
    kept = scored[:top_k]
    stored = {d.id: d for d in search.fetch_documents([c for _, c, _ in kept], dense=False)}
    return [
        with_fields(stored[c], score=score, meta={**stored[c].meta, **annotate(c, graph_score)})
        for score, c, graph_score in kept
        if c in stored
    ]


@component
class GraphLocalRetriever:
    """Entity-level graph retrieval as the adaptive channel ``graph_local``.

    Skips itself when the router gives ``graph_local`` no weight. See the module docstring for the scoring.

    :param graph_store: the knowledge graph
        (:class:`~adaptive_retrieval.components.stores.graph.graph_store.GraphStore`).
    :param document_store: the Qdrant store holding the chunks (for seed hits and embeddings).
    :param top_k: chunks returned (the router's ``fetch_k`` overrides it per query).
    :param seed_hits: nearest chunks whose entities seed the search (0 disables).
    :param hit_seed_weight: strength of hit-derived seeds relative to query matches.
    :param hit_decay: per-rank decay of hit-derived seeds.
    :param max_seeds: seeds kept after merging query and hit seeds.
    :param hop_seeds: strongest seeds expanded one hop over RELATES_TO (0 disables the hop).
    :param neighbours_per_seed: RELATES_TO neighbours read per expanded seed.
    :param hop_decay: strength of a neighbour relative to its seed.
    :param max_chunks_per_entity: chunks read per seed entity (its heaviest mentions).
    :param max_ngram: longest query n-gram matched against entity names.
    :param similarity_weight: blend of query–chunk cosine similarity into the final score (0: graph only). The
        graph proposes every passage one hop away and similarity picks the hop the question is about. On the training
        split of ``scripts/lab/eval_graph.py`` (never its held-out questions) 0.3–0.6 score alike for bridge questions
        and 0 scores lower; 0.5 also keeps a plain factual query's best direct hit near the top.
    :param candidate_pool: graph-ranked chunks fetched and re-scored, as a multiple of ``top_k``.
    :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (typed
        ``Iterable[Document]``, for the joiner) instead of a list; the query pipeline sets it (see ``declare_outputs``).
    """

    channel = "graph_local"

    def __init__(
        self,
        graph_store: GraphStore,
        document_store: Any,
        top_k: int = 20,
        seed_hits: int = 5,
        hit_seed_weight: float = 0.5,
        hit_decay: float = 0.8,
        max_seeds: int = 40,
        hop_seeds: int = 10,
        neighbours_per_seed: int = 10,
        hop_decay: float = 0.3,
        max_chunks_per_entity: int = 50,
        max_ngram: int = 8,
        similarity_weight: float = 0.5,
        candidate_pool: int = 2,
        share_documents: bool = False,
    ) -> None:
        if not isinstance(graph_store, GraphStore):
            msg = f"graph_store must implement the GraphStore protocol, got {type(graph_store).__name__}"
            raise TypeError(msg)
        if top_k < 1 or max_seeds < 1 or max_chunks_per_entity < 1 or max_ngram < 1 or candidate_pool < 1:
            msg = "top_k, max_seeds, max_chunks_per_entity, max_ngram and candidate_pool must be >= 1"
            raise ValueError(msg)
        if not 0.0 <= similarity_weight <= 1.0:
            msg = "similarity_weight must be within [0, 1]"
            raise ValueError(msg)
        self.graph_store = graph_store
        self.document_store = document_store
        self.top_k = top_k
        self.share_documents = share_documents
        declare_outputs(self, share_documents)
        self.seed_hits = seed_hits
        self.hit_seed_weight = hit_seed_weight
        self.hit_decay = hit_decay
        self.max_seeds = max_seeds
        self.hop_seeds = hop_seeds
        self.neighbours_per_seed = neighbours_per_seed
        self.hop_decay = hop_decay
        self.max_chunks_per_entity = max_chunks_per_entity
        self.max_ngram = max_ngram
        self.similarity_weight = similarity_weight
        self.candidate_pool = candidate_pool
        self._search = vector_search(document_store)

    def to_dict(self) -> dict[str, Any]:
        """Serialise with both stores' own dictionaries."""
        return to_dict_with_stores(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GraphLocalRetriever:
        """Deserialise, keeping both stores' classes."""
        return default_from_dict(cls, graph_store_from_init_parameters(store_from_init_parameters(data)))

    # -- seeds ----------------------------------------------------------------------------------------------

    def query_seeds(self, query: str, total: int) -> dict[str, float]:
        """Entities named in the query, with strength ``idf`` (half for a match inside a longer match)."""
        return link_exact(self.graph_store, query, total, self.max_ngram)

    def hit_seeds(
        self, query_embedding: list[float], total: int, nearest: HitsInput = None
    ) -> tuple[dict[str, dict[str, float]], list[str]]:
        """Entities of the nearest chunks: ``{key: {hit_id: strength}}`` and the hit ids in rank order.

        ``nearest``: the dense channel's ranked chunks for this query, used instead of searching again.
        """
        if self.seed_hits <= 0:
            return {}, []
        # Twice as many as needed and no payload filter: summary nodes sharing the collection are simply absent
        # from the graph and skipped here.
        if nearest:
            found = nearest[: 2 * self.seed_hits]
        else:
            found = self._search.search_dense(query_embedding, top_k=2 * self.seed_hits, return_embedding=False)
        mentions = self.graph_store.chunk_mentions([d.id for d in found])
        hit_ids = [d.id for d in found if d.id in mentions][: self.seed_hits]
        dfs = self.graph_store.find_entities({k for m in mentions.values() for k in m})
        seeds: dict[str, dict[str, float]] = {}
        for rank, hit_id in enumerate(hit_ids):
            entities = mentions.get(hit_id, {})
            if not entities:
                continue
            for key in entities:
                if key not in dfs:
                    continue
                # Every entity a hit names counts alike: the bridge runs through what the hit *mentions* (the
                # film a town page names), which weighs less in that hit than the hit's own title.
                strength = self.hit_seed_weight * self.hit_decay**rank * idf(dfs[key].df, total)
                seeds.setdefault(key, {})[hit_id] = strength
        return seeds, hit_ids

    def expand(self, seeds: dict[str, float], total: int) -> dict[str, float]:
        """One hop over RELATES_TO from the strongest seeds: ``{neighbour: added strength}``."""
        if self.hop_seeds <= 0 or not seeds:
            return {}
        strongest = sorted(seeds, key=lambda k: (-seeds[k], k))[: self.hop_seeds]
        neighbours = self.graph_store.neighbours(strongest, limit=self.neighbours_per_seed)
        dfs = self.graph_store.find_entities({n for ns in neighbours.values() for n, _ in ns})
        idf_max = math.log(1.0 + max(total, 1))
        added: dict[str, float] = {}
        for key, ns in neighbours.items():
            if not ns:
                continue
            top = max(w for _, w in ns)
            for other, weight in ns:
                if other in dfs:
                    gain = self.hop_decay * seeds[key] * weight / top * idf(dfs[other].df, total) / idf_max
                    added[other] = added.get(other, 0.0) + gain
        return added

    # -- run ------------------------------------------------------------------------------------------------

    def search(
        self, query: str, query_embedding: list[float] | None, top_k: int, nearest: HitsInput = None
    ) -> tuple[list[tuple[str, float]], dict[str, list[str]]]:
        """Graph-ranked chunk ids with scores, and for each chunk the seed entities that reached it."""
        total = self.graph_store.chunk_count()
        if total <= 0:
            return [], {}
        from_query = self.query_seeds(query, total) if query and query.strip() else {}
        from_hits, _ = self.hit_seeds(query_embedding, total, nearest) if query_embedding is not None else ({}, [])
        strength = dict(from_query)
        for key, sources in from_hits.items():
            strength[key] = strength.get(key, 0.0) + sum(sources.values())
        kept = dict(sorted(strength.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_seeds])
        for key, gain in self.expand(kept, total).items():
            kept[key] = kept.get(key, 0.0) + gain
        mentions = self.graph_store.entity_chunks(kept, limit=self.max_chunks_per_entity)
        scores: dict[str, float] = {}
        reasons: dict[str, list[tuple[float, str]]] = {}
        for key, chunks in mentions.items():
            seed, seeded_by = kept[key], from_hits.get(key, {})
            for chunk_id, weight in chunks:
                # A dense hit gets no credit for the entities it seeded itself.
                s = seed - seeded_by.get(chunk_id, 0.0)
                if s <= 0:
                    continue
                scores[chunk_id] = scores.get(chunk_id, 0.0) + s * weight
                reasons.setdefault(chunk_id, []).append((s * weight, key))
        # Re-scoring by similarity needs a wider pool; the graph order alone needs only top_k.
        pool = top_k * self.candidate_pool if self.similarity_weight > 0 else top_k
        ranked = heapq.nsmallest(pool, scores.items(), key=lambda kv: (-kv[1], kv[0]))
        why = {c: [k for _, k in sorted(reasons[c], reverse=True)[:3]] for c, _ in ranked}
        return ranked, why

    def retrieve(
        self, query: str, query_embedding: list[float] | None, top_k: int, nearest: HitsInput = None
    ) -> list[Document]:
        """The channel's documents for one query (what :meth:`run` returns, without the failure handling)."""
        ranked, why = self.search(query, query_embedding, top_k, nearest)
        if not ranked:
            return []
        return blend_graph_ranking(
            self._search,
            ranked,
            query_embedding,
            self.similarity_weight,
            top_k,
            lambda chunk_id, graph_score: {
                "graph_entities": why.get(chunk_id, []),
                "graph_score": round(graph_score, 4),
            },
        )

    def run(
        self,
        query: str = "",
        query_embedding: QueryEmbedding | None = None,
        top_k: int | None = None,
        weights: WeightsInput = None,
        nearest: HitsInput = None,
    ) -> dict[str, Any]:
        """Chunks ranked by the graph (with embeddings); none when the router disabled this channel.

        A failing store (a Neo4j or Qdrant server that is down) is logged and gives ``documents=None``, which
        the joiner skips, so the query goes on with the other channels.

        :param query: the query text (its entity names seed the search).
        :param query_embedding: the query vector (its nearest chunks seed the search; also used to blend in
            similarity).
        :param top_k: chunks to return (default: the init ``top_k``).
        :param weights: the router's channel weights; ``weights["graph_local"] == 0`` skips the search.
        :param nearest: the dense channel's ranked chunks for this query (the query pipeline connects them), whose
            entities seed the search instead of a second vector search; without them (dense off or failed) the
            retriever searches itself.
        :raises ValueError: for ``top_k`` < 1.
        """
        if not channel_enabled(self.channel, weights):
            return skipped_output(self.share_documents)
        query_embedding = as_float_list(query_embedding)
        top_k = top_k or self.top_k
        if top_k < 1:
            msg = f"top_k must be >= 1, got {top_k}"
            raise ValueError(msg)

        def search() -> list[Document]:
            return self.retrieve(query, query_embedding, top_k, nearest)

        return search_or_failure(self.channel, search, self.share_documents)
