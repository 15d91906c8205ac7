"""Leiden communities over the entity co-occurrence graph, with extractive summaries and their embeddings.

Each community is summarised without an LLM: its most central entities (weighted degree inside the community)
and the sentences of its most central chunks that mention the most of them. The summary is embedded with the
same ONNX model as the chunks, so :class:`GraphGlobalRetriever` ranks communities by similarity to the query.

Communities are recomputed on demand (``run(force=True)`` or :meth:`CommunityDetector.detect`) and
automatically when the chunks changed since the last computation reach ``change_threshold`` of the graph, so
an indexing run that adds a few documents to a large corpus does not pay for a full recomputation each time.

Usage::

    detector = CommunityDetector(graph_store=store)
    detector.run(chunks_changed=120)     # {"communities": 42, "recomputed": True, "pending_changes": 0}
    detector.run(force=True)             # recompute now
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
from haystack import component, default_from_dict

from adaptive_retrieval.components.models.paths import DEFAULT_MODEL
from adaptive_retrieval.components.stores.graph.graph_store import (
    Community,
    GraphStore,
    graph_store_from_init_parameters,
)
from adaptive_retrieval.components.stores.serialization import to_dict_with_stores
from adaptive_retrieval.components.text.keys import normalise_key
from adaptive_retrieval.components.text.sentences import name_sentences

logger = logging.getLogger(__name__)


@component
class CommunityDetector:
    """Detects entity communities with Leiden (igraph + leidenalg) and stores summaries and embeddings.

    :param graph_store: the graph to read relations from and write communities to.
    :param model: embedding model (name in the models folder, or a folder) for the summaries.
    :param precision: ``int8`` (CPU default) or ``fp32``; GPU precisions with ``device="cuda"``;
        ``None``: ``$ADAPTIVE_PRECISION``, else ``int8`` (read at warm-up).
    :param device: ``cpu`` or ``cuda``; ``None``: ``$ADAPTIVE_DEVICE``, else ``cpu``.
    :param resolutions: one Leiden resolution per level (higher: smaller communities); level ``i`` uses
        ``resolutions[i]``.
    :param change_threshold: recompute automatically once the chunks changed since the last computation reach
        this share of the graph's chunks.
    :param min_changes: ... and at least this many chunks.
    :param min_community_size: smaller communities get no summary (they carry no theme).
    :param min_edge_weight: co-occurrence edges lighter than this are ignored (one shared chunk is weak
        evidence in a large corpus).
    :param summary_entities: central entities named in a summary.
    :param summary_sentences: sentences extracted into a summary.
    :param chunks_per_community: central chunks kept per community for retrieval.
    :param seed: Leiden's random seed (results are reproducible).
    """

    def __init__(
        self,
        graph_store: GraphStore,
        model: str = DEFAULT_MODEL,
        precision: str | None = None,
        device: str | None = None,
        resolutions: list[float] | None = None,
        change_threshold: float = 0.2,
        min_changes: int = 1,
        min_community_size: int = 3,
        min_edge_weight: float = 1.0,
        summary_entities: int = 8,
        summary_sentences: int = 3,
        chunks_per_community: int = 20,
        seed: int = 42,
    ) -> None:
        if not isinstance(graph_store, GraphStore):
            msg = f"graph_store must implement the GraphStore protocol, got {type(graph_store).__name__}"
            raise TypeError(msg)
        resolutions = list(resolutions or [1.0])
        if any(r <= 0 for r in resolutions):
            msg = f"resolutions must be positive, got {resolutions}"
            raise ValueError(msg)
        if not 0.0 <= change_threshold <= 1.0:
            msg = "change_threshold must be within [0, 1]"
            raise ValueError(msg)
        if min_community_size < 2:
            msg = "min_community_size must be >= 2"
            raise ValueError(msg)
        self.graph_store = graph_store
        self.model = model
        self.precision = precision
        self.device = device
        self.resolutions = resolutions
        self.change_threshold = change_threshold
        self.min_changes = min_changes
        self.min_community_size = min_community_size
        self.min_edge_weight = min_edge_weight
        self.summary_entities = summary_entities
        self.summary_sentences = summary_sentences
        self.chunks_per_community = chunks_per_community
        self.seed = seed
        self._encoder: Any = None

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the graph store's own dictionary."""
        return to_dict_with_stores(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CommunityDetector:
        """Deserialise, rebuilding the graph store from its type."""
        return default_from_dict(cls, graph_store_from_init_parameters(data))

    def warm_up(self) -> None:
        """Load (or reuse) the embedding model."""
        if self._encoder is None:
            from adaptive_retrieval.components.models.encoder import get_encoder

            self._encoder = get_encoder(self.model, self.precision, self.device)

    def due(self) -> bool:
        """Whether enough of the graph changed since communities were last computed."""
        pending = self.graph_store.pending_changes()
        if pending <= 0:
            return False
        total = max(self.graph_store.chunk_count(), 1)
        return pending >= max(self.min_changes, self.change_threshold * total)

    @component.output_types(communities=int, recomputed=bool, pending_changes=int)
    def run(self, chunks_changed: int = 0, force: bool = False) -> dict[str, Any]:
        """Recompute communities when forced or when the accumulated changes pass the threshold.

        :param chunks_changed: chunks the graph writer just changed (connect it so this runs after the writer;
            the store's own counter, which survives restarts, decides).
        :param force: recompute now.
        """
        if force or self.due():
            communities = self.detect()
            return {"communities": len(communities), "recomputed": True, "pending_changes": 0}
        return {
            "communities": len(self.graph_store.communities(level=0)),
            "recomputed": False,
            "pending_changes": self.graph_store.pending_changes(),
        }

    def detect(self) -> list[Community]:
        """Run Leiden at every level, summarise, embed and store the communities; returns them."""
        import igraph as ig
        import leidenalg

        started = time.perf_counter()
        edges = list(self.graph_store.relations(min_weight=self.min_edge_weight))
        keys = sorted({k for a, b, _ in edges for k in (a, b)})
        index = {k: i for i, k in enumerate(keys)}
        graph = ig.Graph(n=len(keys), edges=[(index[a], index[b]) for a, b, _ in edges])
        graph.es["weight"] = [w for _, _, w in edges]
        self.warm_up()
        stored: list[Community] = []
        for level, resolution in enumerate(self.resolutions):
            groups: list[list[int]] = []
            strengths: list[list[float]] = []
            if keys:
                partition = leidenalg.find_partition(
                    graph,
                    leidenalg.RBConfigurationVertexPartition,
                    weights="weight",
                    resolution_parameter=resolution,
                    seed=self.seed,
                )
                for cid, members in enumerate(partition):
                    if len(members) >= self.min_community_size:
                        groups.append(members)
                        strengths.append(partition.subgraph(cid).strength(weights="weight"))
            communities, members = self._summarise(level, [[keys[v] for v in g] for g in groups], strengths)
            assignments = {key: c.id for c in communities for key in members[c.id]}
            self.graph_store.write_communities(level, assignments, communities)
            stored.extend(communities)
        logger.info(
            "Communities: %d over %d entities and %d relations in %.1f s",
            len(stored),
            len(keys),
            len(edges),
            time.perf_counter() - started,
        )
        return stored

    def _summarise(
        self, level: int, groups: list[list[str]], strengths: list[list[float]]
    ) -> tuple[list[Community], dict[int, list[str]]]:
        """Central entities, central chunks, extractive summary and embedding of each community; also the
        members of each community by id."""
        ranked: list[list[tuple[str, float]]] = []
        for members, strength in zip(groups, strengths, strict=True):
            top = max(strength) or 1.0
            ranked.append(sorted(((k, s / top) for k, s in zip(members, strength, strict=True)), key=lambda x: -x[1]))
        # One batched read for every community: mentions of the central entities, then their chunks' texts.
        central = {k for r in ranked for k, _ in r[: self.summary_entities * 2]}
        mentions = self.graph_store.entity_chunks(central, limit=self.chunks_per_community)
        named = {k for r in ranked for k, _ in r[: self.summary_entities]}
        names = {k: info.name for k, info in self.graph_store.find_entities(named).items()}
        community_chunks: list[list[tuple[str, float]]] = []
        for r in ranked:
            scores: dict[str, float] = {}
            for key, centrality in r[: self.summary_entities * 2]:
                for chunk_id, weight in mentions.get(key, []):
                    scores[chunk_id] = scores.get(chunk_id, 0.0) + centrality * weight
            best = sorted(scores.items(), key=lambda x: (-x[1], x[0]))[: self.chunks_per_community]
            community_chunks.append([(c, round(s, 4)) for c, s in best])
        texts = self.graph_store.chunk_texts({c for best in community_chunks for c, _ in best[:5]})
        summaries: list[str] = []
        for r, best in zip(ranked, community_chunks, strict=True):
            top_names = [names.get(k, k) for k, _ in r[: self.summary_entities]]
            weights = dict(r[: self.summary_entities * 2])
            sentences: list[tuple[float, str]] = []
            for chunk_id, _ in best[:5]:
                title, text = texts.get(chunk_id, ("", ""))
                for sentence in name_sentences(text):
                    sentence = sentence.strip()
                    if len(sentence) < 20:
                        continue
                    padded = f" {normalise_key(f'{title} {sentence}')} "
                    score = sum(w for k, w in weights.items() if f" {k} " in padded)
                    if score > 0:
                        # Short summaries: the embedding model reads 256 word pieces and costs grow with length.
                        sentences.append((score, sentence[:200]))
            picked: list[str] = []
            for _, sentence in sorted(sentences, key=lambda x: -x[0]):
                if sentence not in picked:
                    picked.append(sentence)
                if len(picked) >= self.summary_sentences:
                    break
            summaries.append("Themes: " + ", ".join(top_names) + ". " + " ".join(picked))
        vectors = self._encoder.encode(summaries) if summaries else np.zeros((0, 0), dtype=np.float32)
        communities = []
        members: dict[int, list[str]] = {}
        for cid, (r, best, summary) in enumerate(zip(ranked, community_chunks, summaries, strict=True)):
            members[cid] = [k for k, _ in r]
            communities.append(
                Community(
                    id=cid,
                    level=level,
                    size=len(r),
                    entities=tuple(k for k, _ in r[: self.summary_entities * 2]),
                    summary=summary,
                    embedding=tuple(float(x) for x in vectors[cid]),
                    chunks=tuple(best),
                )
            )
        return communities, members
