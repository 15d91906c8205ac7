"""Graph-PPR channel: personalised PageRank over the query's neighbourhood of the knowledge graph — passages two,
three or four hops from the query's entities, found without an LLM.

HippoRAG (arXiv 2405.14831) showed that one personalised-PageRank step over an entity graph, seeded by the
question's entities, does the work of iterative multi-step retrieval. Here the graph is the one the indexing
pipeline builds with no LLM (entities —MENTIONED_IN→ chunks), and the walk runs on a bounded subgraph grown
around the query, so its cost does not depend on the size of the index and both graph stores serve it through
one contract method (:meth:`~adaptive_retrieval.components.stores.graph.graph_store.GraphStore.subgraph`).

How a query is scored:

1. **Restart distribution** ``p0``: the entities the query names
(:mod:`adaptive_retrieval.components.retrieval.entity_linking`:
   exact names and variants, strength ``idf``), the top dense and sparse hits (chunk nodes, strength
   ``hit_seed_weight · hit_decay^rank``), and partial names of the query ("Reznor") matched against the
   entities those hits mention.
2. **Subgraph**: the seed chunks and the ``chunks_per_entity`` heaviest chunks of every seed entity, with all
   their mentions; then ``hops - 1`` times, PageRank on what is there picks the ``expand_per_hop`` entities
   with most mass (mentioned in at most ``max_expand_df`` chunks) whose chunks are added next. The walk
   itself decides where to look further.
3. **Walk**: a random walk on the bipartite entity–chunk graph that restarts to ``p0`` with probability
   ``restart``. From a chunk it moves to an entity in proportion to ``weight · idf`` (a specific name carries
   the walk, "American" hardly does); from an entity to a chunk in proportion to the mention weight, out of the
   entity's weight over *all* its ``df`` chunks — the share of chunks outside the subgraph leaks away, so a hub
   entity passes on little.
4. **Chunks**: the stationary mass of each chunk node minus its own restart mass (a hit is not credited for
   being a hit), leaving out the chunks the dense and sparse lists already rank high (``exclude_hits``), the
   ``candidate_pool · top_k`` best fetched from the document store (``fetch_documents``) and, with
   ``similarity_weight > 0``, blended with the chunk's cosine similarity to the query.

Usage::

    retriever = GraphPPRRetriever(graph_store=graph, document_store=store)
    docs = retriever.run(query="When did the headquarters city of Kentucky Tavern's maker elect a black mayor?",
                         query_embedding=vector)["documents"]
    docs[0].meta["graph_ppr"]   # the walk's mass on that chunk
"""

from __future__ import annotations

import heapq
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict

from adaptive_retrieval.components.models.query_vector import QueryEmbedding, as_float_list
from adaptive_retrieval.components.retrieval.channel import (
    channel_enabled,
    declare_outputs,
    search_or_failure,
    skipped_output,
)
from adaptive_retrieval.components.retrieval.entity_linking import link_exact, link_partial, query_entity_candidates
from adaptive_retrieval.components.retrieval.graph_local_retriever import blend_graph_ranking
from adaptive_retrieval.components.retrieval.ranked_hits import HitsInput
from adaptive_retrieval.components.stores.documents.vector_search import vector_search
from adaptive_retrieval.components.stores.graph.graph_store import (
    GraphStore,
    Subgraph,
    graph_store_from_init_parameters,
)
from adaptive_retrieval.components.stores.serialization import store_from_init_parameters, to_dict_with_stores
from adaptive_retrieval.components.strategy import WeightsInput

logger = logging.getLogger(__name__)


@dataclass
class Walk:
    """One query's walk: seeds, the subgraph it ran on and the stationary mass of every node."""

    entity_seeds: dict[str, float]
    chunk_seeds: dict[str, float]
    entities: dict[str, float]
    chunks: dict[str, float]


class _Graph:
    """The bipartite entity–chunk subgraph as sparse transition matrices (nodes: entities, then chunks)."""

    def __init__(self, mentions: dict[tuple[str, str], float], df: dict[str, int], total: int) -> None:
        from scipy import sparse  # here: the channel is opt-in, and scipy's import costs a one-shot query 0.2 s

        self.entities = sorted({e for e, _ in mentions})
        self.chunks = sorted({c for _, c in mentions})
        e_index = {e: i for i, e in enumerate(self.entities)}
        c_index = {c: i for i, c in enumerate(self.chunks)}
        self.e_index, self.c_index = e_index, c_index
        n_e, n_c = len(self.entities), len(self.chunks)
        rows = np.fromiter((e_index[e] for e, _ in mentions), dtype=np.int64, count=len(mentions))
        cols = np.fromiter((c_index[c] for _, c in mentions), dtype=np.int64, count=len(mentions))
        weight = np.fromiter(mentions.values(), dtype=np.float64, count=len(mentions))
        dfs = np.maximum(np.fromiter((df.get(e, 1) for e in self.entities), dtype=np.float64, count=n_e), 1.0)
        specificity = np.log1p(max(total, 1) / dfs)  # idf, as graph_store.idf
        # chunk -> entity: by weight x idf, normalised over the chunk's (complete) mentions.
        ce = weight * specificity[rows]
        out_c = np.bincount(cols, weights=ce, minlength=n_c)
        self.to_entity = sparse.csr_matrix((ce / out_c[cols], (rows, cols)), shape=(n_e, n_c))
        # entity -> chunk: by weight over the entity's weight in all its df chunks (estimated from the mean
        # weight of the ones seen): mass bound for chunks outside the subgraph leaks away.
        seen_w = np.bincount(rows, weights=weight, minlength=n_e)
        seen_n = np.bincount(rows, minlength=n_e)
        out_e = np.maximum(seen_w, seen_w / np.maximum(seen_n, 1) * dfs)
        self.to_chunk = sparse.csr_matrix((weight / out_e[rows], (cols, rows)), shape=(n_c, n_e))

    def pagerank(
        self, p_e: np.ndarray, p_c: np.ndarray, restart: float, iterations: int, tol: float = 1e-6
    ) -> tuple[np.ndarray, np.ndarray]:
        """Stationary (sub-stochastic) mass of entities and chunks for restart vectors ``p_e``, ``p_c``."""
        x_e, x_c = p_e.copy(), p_c.copy()
        for _ in range(iterations):
            n_e = restart * p_e + (1 - restart) * (self.to_entity @ x_c)
            n_c = restart * p_c + (1 - restart) * (self.to_chunk @ x_e)
            delta = np.abs(n_e - x_e).sum() + np.abs(n_c - x_c).sum()
            x_e, x_c = n_e, n_c
            if delta < tol:
                break
        return x_e, x_c


@component
class GraphPPRRetriever:
    """Personalised-PageRank retrieval over the knowledge graph as the adaptive channel ``graph_ppr``.

    Skips itself when the router gives ``graph_ppr`` no weight; a failing store gives ``documents=None`` (the
    joiner skips the channel). See the module docstring for the scoring.

    :param graph_store: the knowledge graph
        (:class:`~adaptive_retrieval.components.stores.graph.graph_store.GraphStore`).
    :param document_store: the store holding the chunks (read with ``fetch_documents`` only).
    :param top_k: chunks returned (the router's ``fetch_k`` overrides it per query).
    :param seed_hits: top dense and top sparse hits (each) that seed the walk as chunk nodes.
    :param hit_seed_weight: restart mass of the hits relative to the query's entities.
    :param hit_decay: per-rank decay of a hit's restart mass.
    :param partial_weight: strength of a partial-name link relative to an exact one.
    :param max_seeds: entity seeds kept (strongest first).
    :param chunks_per_entity: chunks read per expanded entity (its heaviest mentions).
    :param hops: subgraph growth rounds (1: the seeds' chunks only).
    :param expand_per_hop: entities expanded per further round (those with most mass).
    :param max_expand_df: entities mentioned in more chunks are never expanded (hubs).
    :param restart: restart probability of the walk (HippoRAG's damping 0.5).
    :param iterations: power iterations at most.
    :param similarity_weight: blend of query–chunk cosine similarity into the final score (0: walk only). The walk
        proposes the candidates (its ``candidate_pool · top_k`` best chunks) and similarity mostly orders them:
        on MuSiQue's training split (``scripts/lab/eval_ppr.py --split train``, never its held-out questions) 0.9
        fused best (full@10 0.514 against 0.471 at 0.3 and 0.5), with ``restart`` 0.5, ``hops`` 3 and
        ``seed_hits`` 5 (10 hits scored lower: 0.429).
    :param candidate_pool: walk-ranked chunks fetched and re-scored, as a multiple of ``top_k``.
    :param max_ngram: longest query n-gram matched against entity names.
    :param max_top_k: the most chunks returned whatever ``top_k`` the router asks for (a retry doubles it): the
        channel nominates its few best multi-hop candidates rather than a long, mostly similarity-ordered tail.
    :param exclude_hits: chunks among the first ``exclude_hits`` of the dense or the sparse list are not
        returned: those lists already rank them high, and the walk's credit would only push them higher. With
        every chunk returned, a passage that dense and graph_ppr both rank near the top outscores in the fused
        list the bridge passages only graph_local ranks (MuSiQue training split, fused top 10 of 2-hop questions
        0.703 → 0.649 with the channel, ``scripts/lab/ppr_stages.py``). Chosen there through the whole pipeline
        (full@10 at 0 / 5 / 10 / 20 / 50 / 200: 0.457 / 0.471 / 0.486 / 0.500 / 0.457 / 0.457); the held-out
        questions never informed it.
    :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (typed
        ``Iterable[Document]``, for the joiner) instead of a list; the query pipeline sets it (see ``declare_outputs``).
    """

    channel = "graph_ppr"

    def __init__(
        self,
        graph_store: GraphStore,
        document_store: Any,
        top_k: int = 20,
        seed_hits: int = 5,
        hit_seed_weight: float = 0.5,
        hit_decay: float = 0.7,
        partial_weight: float = 0.5,
        max_seeds: int = 20,
        chunks_per_entity: int = 20,
        hops: int = 3,
        expand_per_hop: int = 20,
        max_expand_df: int = 200,
        restart: float = 0.5,
        iterations: int = 30,
        similarity_weight: float = 0.9,
        candidate_pool: int = 2,
        max_ngram: int = 8,
        max_top_k: int = 10,
        exclude_hits: int = 20,
        share_documents: bool = False,
    ) -> None:
        if not isinstance(graph_store, GraphStore):
            msg = f"graph_store must implement the GraphStore protocol, got {type(graph_store).__name__}"
            raise TypeError(msg)
        if min(top_k, max_seeds, chunks_per_entity, hops, iterations, candidate_pool, max_ngram, max_top_k) < 1:
            msg = "top_k, max_seeds, chunks_per_entity, hops, iterations, candidate_pool and max_ngram must be >= 1"
            raise ValueError(msg)
        if exclude_hits < 0:
            msg = f"exclude_hits must be >= 0, got {exclude_hits}"
            raise ValueError(msg)
        if not 0.0 < restart < 1.0 or not 0.0 <= similarity_weight <= 1.0:
            msg = "restart must be within (0, 1) and similarity_weight within [0, 1]"
            raise ValueError(msg)
        self.graph_store = graph_store
        self.document_store = document_store
        self._search = vector_search(document_store)
        self.top_k = top_k
        self.share_documents = share_documents
        declare_outputs(self, share_documents)
        self.seed_hits = seed_hits
        self.hit_seed_weight = hit_seed_weight
        self.hit_decay = hit_decay
        self.partial_weight = partial_weight
        self.max_seeds = max_seeds
        self.chunks_per_entity = chunks_per_entity
        self.hops = hops
        self.expand_per_hop = expand_per_hop
        self.max_expand_df = max_expand_df
        self.restart = restart
        self.iterations = iterations
        self.similarity_weight = similarity_weight
        self.candidate_pool = candidate_pool
        self.max_ngram = max_ngram
        self.max_top_k = max_top_k
        self.exclude_hits = exclude_hits

    def to_dict(self) -> dict[str, Any]:
        """Serialise with both stores' own dictionaries."""
        return to_dict_with_stores(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GraphPPRRetriever:
        """Deserialise, keeping both stores' classes."""
        return default_from_dict(cls, graph_store_from_init_parameters(store_from_init_parameters(data)))

    # -- the walk -------------------------------------------------------------------------------------------

    def hit_seeds(self, *ranked: HitsInput) -> dict[str, float]:
        """Restart mass of the top hits of each ranked list (a chunk in several lists adds up)."""
        seeds: dict[str, float] = {}
        for docs in ranked:
            for rank, doc in enumerate((docs or [])[: self.seed_hits]):
                seeds[doc.id] = seeds.get(doc.id, 0.0) + self.hit_seed_weight * self.hit_decay**rank
        return seeds

    def walk(self, query: str, hits: dict[str, float]) -> Walk:
        """Link the query, grow the subgraph and run the walk (no document store access)."""
        total = self.graph_store.chunk_count()
        if total <= 0:
            return Walk({}, {}, {}, {})
        grams = query_entity_candidates(query, self.max_ngram) if query.strip() else {}
        exact = link_exact(self.graph_store, query, total, candidates=grams) if grams else {}
        seeds = dict(sorted(exact.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_seeds])
        mentions: dict[tuple[str, str], float] = {}
        df: dict[str, int] = {}
        expanded: set[str] = set()

        def grow(sub: Subgraph) -> None:
            for key, chunk, weight in sub.mentions:
                mentions[(key, chunk)] = weight
            df.update(sub.df)

        grow(self.graph_store.subgraph(seeds, hits, limit=self.chunks_per_entity))
        expanded.update(seeds)
        # Partial names read against what the seeds and hits mention; their chunks join the subgraph.
        partial = link_partial(query, df, df, total, exact, candidates=grams) if self.partial_weight > 0 else {}
        partial = {k: self.partial_weight * s for k, s in partial.items()}
        new = sorted(set(partial) - expanded)
        if new:
            grow(self.graph_store.subgraph(new, (), limit=self.chunks_per_entity))
            expanded.update(new)
        for key, strength in partial.items():
            seeds[key] = max(seeds.get(key, 0.0), strength)
        graph = None
        x_e = x_c = np.zeros(0)
        for round_ in range(self.hops):
            if not mentions:
                break
            graph = _Graph(mentions, df, total)
            p_e = np.array([seeds.get(e, 0.0) for e in graph.entities])
            p_c = np.array([hits.get(c, 0.0) for c in graph.chunks])
            mass = p_e.sum() + p_c.sum()
            if mass <= 0:
                graph = None
                break
            x_e, x_c = graph.pagerank(p_e / mass, p_c / mass, self.restart, self.iterations)
            if round_ == self.hops - 1:
                break
            order = np.argsort(-x_e, kind="stable")
            frontier = [
                graph.entities[i]
                for i in order
                if graph.entities[i] not in expanded and df.get(graph.entities[i], 0) <= self.max_expand_df
            ][: self.expand_per_hop]
            if not frontier:
                break
            expanded.update(frontier)
            grow(self.graph_store.subgraph(frontier, (), limit=self.chunks_per_entity))
        if graph is None:
            return Walk(seeds, hits, {}, {})
        mass = sum(seeds.get(e, 0.0) for e in graph.entities) + sum(hits.get(c, 0.0) for c in graph.chunks)
        chunks = {c: float(x_c[i]) - self.restart * hits.get(c, 0.0) / mass for i, c in enumerate(graph.chunks)}
        entities = {e: float(x_e[i]) for i, e in enumerate(graph.entities)}
        return Walk(seeds, hits, entities, chunks)

    def retrieve(
        self,
        query: str,
        query_embedding: list[float] | None,
        top_k: int,
        nearest: HitsInput = None,
        lexical: HitsInput = None,
    ) -> list[Document]:
        """The channel's documents for one query (what :meth:`run` returns, without the failure handling)."""
        walk = self.walk(query, self.hit_seeds(nearest, lexical))
        pool = top_k * self.candidate_pool if self.similarity_weight > 0 else top_k
        known = {d.id for docs in (nearest, lexical) for d in (docs or [])[: self.exclude_hits]}
        ranked = heapq.nsmallest(
            pool,
            ((c, s) for c, s in walk.chunks.items() if s > 0 and c not in known),
            key=lambda kv: (-kv[1], kv[0]),
        )
        if not ranked:
            return []
        return blend_graph_ranking(
            self._search,
            ranked,
            query_embedding,
            self.similarity_weight,
            top_k,
            lambda _chunk_id, mass: {"graph_ppr": round(mass, 6)},
        )

    def run(
        self,
        query: str = "",
        query_embedding: QueryEmbedding | None = None,
        top_k: int | None = None,
        weights: WeightsInput = None,
        nearest: HitsInput = None,
        lexical: HitsInput = None,
    ) -> dict[str, Any]:
        """Chunks ranked by the walk (with embeddings); none when the router disabled this channel.

        :param query: the query text (its entity names seed the walk).
        :param query_embedding: the query vector (blended-in similarity).
        :param top_k: chunks to return (default: the init ``top_k``).
        :param weights: the router's channel weights; ``weights["graph_ppr"] == 0`` skips the walk.
        :param nearest: the dense channel's ranked chunks (their top ``seed_hits`` seed the walk).
        :param lexical: the sparse channel's ranked chunks (likewise).
        :raises ValueError: for ``top_k`` < 1.
        """
        if not channel_enabled(self.channel, weights):
            return skipped_output(self.share_documents)
        query_embedding = as_float_list(query_embedding)
        top_k = top_k or self.top_k
        if top_k < 1:
            msg = f"top_k must be >= 1, got {top_k}"
            raise ValueError(msg)
        top_k = min(top_k, self.max_top_k)

        def search() -> list[Document]:
            return self.retrieve(query, query_embedding, top_k, nearest, lexical)

        return search_or_failure(self.channel, search, self.share_documents)
