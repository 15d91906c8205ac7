"""Section-tree channel (RAPTOR-lite): summaries find the relevant sections, which then bring their chunks.

How a query is answered (every step bounded):

1. **Structural reference first.** When the router found one (``{"kind": "section", "ref": "3.2"}``,
   ``{"kind": "section", "name": "methodology"}``, ``{"kind": "section", "position": -1}``,
   ``{"kind": "table", "ref": "2"}``), it is resolved against the outlines stored on the document nodes
   (:mod:`adaptive_retrieval.components.retrieval.structural_match`): in the documents the query names (title or file
   name words), numbered headings by number, named ones by words, positions by the body's section order, tables and
   figures by the captions their sections hold, then document titles. The matching chunks, ranked by similarity (a
   chunk holding the asked caption first), come first (score ``1 + cosine``). Nothing matched: the semantic
   search below answers alone.
2. **One vector search over every level** (``candidate_pool`` nodes, no payload filter) gives the direct chunk
   hits (level 0), section summaries (level 1) and document summaries (level 2).
3. **Sections**: those found, plus the sections of the ``max_documents`` best documents. A section's parent
   score blends its own similarity with its document's: ``p = (1 - document_weight) · s_sec + document_weight ·
   s_doc``. The ``max_sections`` best are expanded.
4. **Expansion**: each chunk of an expanded section scores ``parent_weight · p · discount + (1 - parent_weight) ·
   cosine(query, chunk)`` (the parent score times a discount for the indirection, as in the seed's
   ``_hierarchical_retrieve``, blended with the chunk's own similarity); the ``chunks_per_section`` best stay.
5. **Merge** with the direct hits (a chunk keeps its best score), cap at ``top_k``.

Usage::

    retriever = SectionTreeRetriever(document_store=store)
    out = retriever.run(query_embedding=vector, structural={"kind": "section", "ref": "3.2"})
    out["documents"][0].meta["section_tree"]   # {"via": "structural", "parent_id": None}
    out["tree"]                                # diagnostics: structural match, sections expanded, counts
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict

from adaptive_retrieval.components.document_copy import with_fields
from adaptive_retrieval.components.ids import DOCUMENT_LEVEL, SECTION_LEVEL, tree_node_id
from adaptive_retrieval.components.models.query_vector import QueryEmbedding, as_float_list
from adaptive_retrieval.components.retrieval.channel import (
    channel_documents,
    channel_enabled,
    declare_outputs,
    search_or_failure,
    skipped_output,
)
from adaptive_retrieval.components.retrieval.structural_match import (
    CONTENT_KINDS,
    OUTLINE_KINDS,
    Outline,
    heading_matches_name,
    heading_matches_ref,
    resolve,
)
from adaptive_retrieval.components.stores.documents.vector_search import vector_search
from adaptive_retrieval.components.stores.serialization import store_from_init_parameters, to_dict_with_stores
from adaptive_retrieval.components.strategy import WeightsInput

logger = logging.getLogger(__name__)

__all__ = ["OUTLINE_KINDS", "SectionTreeRetriever", "heading_matches_name", "heading_matches_ref"]

_LEVEL0 = {"field": "meta.level", "operator": "==", "value": 0}


def _cosines(query: np.ndarray, documents: list[Document]) -> dict[str, float]:
    if not documents:
        return {}
    matrix = np.asarray([d.embedding for d in documents], dtype=np.float32)
    norms = np.clip(np.linalg.norm(matrix, axis=1), 1e-12, None)
    return dict(zip([d.id for d in documents], (matrix @ query / norms).tolist(), strict=True))


@component
class SectionTreeRetriever:
    """Hierarchical retrieval over the section tree written by
    :class:`~adaptive_retrieval.components.indexing.section_tree_builder.SectionTreeBuilder`, as the adaptive channel
    ``section``.

    Returns chunks (level 0) only, without their vectors (as every channel), each with
    ``meta["section_tree"]`` = ``{"via": "structural" | "section" | "direct", "parent_id": ...}``; skips itself
    when the router gives it no weight.

    :param document_store: the Qdrant store holding chunks and summary nodes (kept shared when loaded from YAML).
    :param top_k: chunks returned at most (the pipeline passes the router's ``fetch_k``).
    :param max_sections: sections expanded at most.
    :param chunks_per_section: chunks kept per expanded section.
    :param max_documents: best documents whose sections join the candidates.
    :param candidate_pool: nodes fetched by the one unfiltered vector search.
    :param discount: factor on a parent's score for the indirection.
    :param parent_weight: weight of the discounted parent score against the chunk's own similarity.
    :param document_weight: weight of the document's similarity in a section's parent score.
    :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (typed
        ``Iterable[Document]``, for the joiner) instead of a list; the query pipeline sets it (see ``declare_outputs``).
    """

    channel = "section"

    def __init__(
        self,
        document_store: Any,
        top_k: int = 20,
        max_sections: int = 5,
        chunks_per_section: int = 3,
        max_documents: int = 3,
        candidate_pool: int = 100,
        discount: float = 0.8,
        parent_weight: float = 0.5,
        document_weight: float = 0.3,
        share_documents: bool = False,
    ) -> None:
        counts = {
            "top_k": top_k,
            "max_sections": max_sections,
            "chunks_per_section": chunks_per_section,
            "candidate_pool": candidate_pool,
        }
        bad = [f"{k}={v}" for k, v in counts.items() if int(v) < 1]
        if bad or max_documents < 0:
            msg = f"SectionTreeRetriever needs positive counts (max_documents >= 0), got {bad or max_documents}"
            raise ValueError(msg)
        for name, value in (
            ("discount", discount),
            ("parent_weight", parent_weight),
            ("document_weight", document_weight),
        ):
            if not 0.0 <= value <= 1.0:
                msg = f"{name} must be within [0, 1], got {value}"
                raise ValueError(msg)
        self.document_store = document_store
        self.top_k = top_k
        self.share_documents = share_documents
        declare_outputs(self, share_documents, tree=dict[str, Any], structural_hits=list[Document] | None)
        self.max_sections = max_sections
        self.chunks_per_section = chunks_per_section
        self.max_documents = max_documents
        self.candidate_pool = candidate_pool
        self.discount = discount
        self.parent_weight = parent_weight
        self.document_weight = document_weight
        self._search = vector_search(document_store)

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the store's own dictionary."""
        return to_dict_with_stores(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SectionTreeRetriever:
        """Deserialise, keeping the document store's own class."""
        return default_from_dict(cls, store_from_init_parameters(data))

    # -- structural references ------------------------------------------------------------------------

    def _structural_filter(self, structural: dict[str, Any], query: str | None = None) -> tuple[Any, int]:
        """A filter selecting the chunks ``structural`` refers to, and how many sections (or documents) matched
        it (``(None, 0)`` when nothing does or the kind is not supported)."""
        kind = str(structural.get("kind", "")).lower()
        if kind not in OUTLINE_KINDS and kind not in CONTENT_KINDS:
            return None, 0
        documents = self.document_store.filter_documents(
            filters={"field": "meta.level", "operator": "==", "value": DOCUMENT_LEVEL}
        )
        outlines = [
            Outline(
                doc_id=str(doc.meta.get("doc_id") or ""),
                title=str(doc.meta.get("title") or ""),
                source=str(doc.meta.get("source") or ""),
                entries=list(doc.meta.get("outline") or []),
            )
            for doc in documents
        ]
        text = str(structural.get("text") or "")
        sections, titled = resolve(structural, (query or "").replace(text, " ") if text else query or "", outlines)
        if sections:
            condition = {"field": "meta.section_id", "operator": "in", "value": sorted(set(sections))}
            return {"operator": "AND", "conditions": [_LEVEL0, condition]}, len(set(sections))
        if titled:
            condition = {"field": "meta.doc_id", "operator": "in", "value": sorted(set(titled))}
            return {"operator": "AND", "conditions": [_LEVEL0, condition]}, len(set(titled))
        return None, 0

    # -- hierarchical search --------------------------------------------------------------------------

    def _tree_search(self, query: np.ndarray, query_embedding: list[float], top_k: int) -> tuple[dict, dict]:
        """``{chunk id: (score, document, via, parent id)}`` from the tree, and diagnostics."""
        # The pool's own scores rank it: its vectors are not needed (those fetched below are scored from theirs).
        pool = self._search.search_dense(query_embedding, top_k=self.candidate_pool, return_embedding=False)
        levels: dict[int, list[Document]] = {0: [], SECTION_LEVEL: [], DOCUMENT_LEVEL: []}
        for doc in pool:
            levels.setdefault(int(doc.meta.get("level", 0)), []).append(doc)
        known: dict[str, Document] = {d.id: d for d in pool}
        scores: dict[str, float] = {d.id: float(d.score or 0.0) for d in pool}

        # Sections of the best documents join the candidates, scored here from their stored vectors.
        top_documents = levels[DOCUMENT_LEVEL][: self.max_documents]
        wanted = [c for d in top_documents for c in d.meta.get("children_ids") or [] if c not in known]
        sections = list(levels[SECTION_LEVEL])
        if wanted:
            fetched = [d for d in self._search.fetch_documents(wanted) if d.embedding is not None]
            known.update({d.id: d for d in fetched})
            scores.update(_cosines(query, fetched))
            sections.extend(d for d in fetched if d.meta.get("level") == SECTION_LEVEL)

        # Each section's document similarity (document nodes outside the pool are fetched by their id).
        doc_nodes = {str(d.meta.get("doc_id")): d for d in levels[DOCUMENT_LEVEL]}
        missing = sorted({str(s.meta.get("doc_id")) for s in sections} - set(doc_nodes))
        if missing:
            fetched = self._search.fetch_documents([tree_node_id(DOCUMENT_LEVEL, m) for m in missing])
            fetched = [d for d in fetched if d.embedding is not None]
            scores.update(_cosines(query, fetched))
            doc_nodes.update({str(d.meta.get("doc_id")): d for d in fetched})
        parent: dict[str, float] = {}
        for section in sections:
            own = scores[section.id]
            doc_node = doc_nodes.get(str(section.meta.get("doc_id")))
            of_doc = scores[doc_node.id] if doc_node is not None else own
            parent[section.id] = (1 - self.document_weight) * own + self.document_weight * of_doc
        chosen = sorted(parent, key=lambda sid: (-parent[sid], sid))[: self.max_sections]

        # Expansion: the chunks of the chosen sections, scored against the query and blended with the parent.
        child_ids = [c for sid in chosen for c in known[sid].meta.get("children_ids") or []]
        absent = [c for c in child_ids if c not in known]
        if absent:
            fetched = [d for d in self._search.fetch_documents(absent) if d.embedding is not None]
            known.update({d.id: d for d in fetched})
            scores.update(_cosines(query, fetched))
        found: dict[str, tuple[float, Document, str, str | None]] = {}
        for doc in levels[0][:top_k]:
            found[doc.id] = (scores[doc.id], doc, "direct", None)
        for sid in chosen:
            children = [known[c] for c in known[sid].meta.get("children_ids") or [] if c in known]
            blended = {
                c.id: self.parent_weight * parent[sid] * self.discount + (1 - self.parent_weight) * scores[c.id]
                for c in children
            }
            for cid in sorted(blended, key=lambda c: (-blended[c], c))[: self.chunks_per_section]:
                if cid not in found or blended[cid] > found[cid][0]:
                    found[cid] = (blended[cid], known[cid], "section", sid)
        diagnostics = {
            "sections": [{"id": sid, "score": round(parent[sid], 4)} for sid in chosen],
            "documents": [str(d.meta.get("doc_id")) for d in top_documents],
            "pool": {str(level): len(docs) for level, docs in levels.items()},
        }
        return found, diagnostics

    def run(
        self,
        query_embedding: QueryEmbedding,
        top_k: int | None = None,
        weights: WeightsInput = None,
        structural: dict[str, Any] | None = None,
        query: str | None = None,
    ) -> dict[str, Any]:
        """Chunks for the query from structural matches, expanded sections and direct hits (at most ``top_k``).

        :param query_embedding: the query vector (same model as the index).
        :param top_k: chunks returned at most (default: the init ``top_k``).
        :param weights: the router's channel weights; a zero weight for ``section`` skips the search.
        :param structural: the router's structural reference, or ``None``.
        :param query: the query text: a structural reference is resolved in the documents it names.
        :returns: ``documents`` (``None`` when the store failed: logged, and the joiner skips the channel),
            ``tree`` diagnostics and ``structural_hits``: the documents of the list that the structural reference
            found, with their dense vectors (usually none: the final list's ``StructuralFirst`` puts them first, and
            reads only these rather than the whole list).
        :raises ValueError: when the query embedding's dimension differs from the collection's.
        """
        if not channel_enabled(self.channel, weights):
            return {**skipped_output(self.share_documents), "tree": {"skipped": True}, "structural_hits": []}
        query_embedding = as_float_list(query_embedding)
        expected = getattr(self.document_store, "embedding_dim", len(query_embedding))
        if len(query_embedding) != expected:
            msg = (
                f"Query embedding has dimension {len(query_embedding)} but the collection stores {expected}-d vectors."
            )
            raise ValueError(msg)
        top_k = int(top_k or self.top_k)
        vector = np.asarray(query_embedding, dtype=np.float32)
        vector /= max(float(np.linalg.norm(vector)), 1e-12)
        diagnostics: dict[str, Any] = {"structural": None}
        leading: list[Document] = []  # the returned documents that the structural reference found

        def search() -> list[Document]:
            ranked: list[Document] = []
            if structural:
                filters, matched = self._structural_filter(structural, query)
                hits = self._search.search_dense(query_embedding, filters=filters, top_k=top_k) if filters else []
                kind = str(structural.get("kind", "")).lower()
                if kind in CONTENT_KINDS and structural.get("ref"):
                    # The chunk holding the caption before the rest of its section.
                    asked = f"{kind} {str(structural['ref']).lower()}"
                    hits.sort(key=lambda d: asked not in (d.meta.get("captions") or []))
                diagnostics["structural"] = {"matched": matched, "chunks": len(hits), "fallback": not hits}
                for doc in hits:
                    tree = {"via": "structural", "parent_id": None}
                    ranked.append(
                        with_fields(doc, score=1.0 + float(doc.score or 0.0), meta={**doc.meta, "section_tree": tree})
                    )
            found, tree_diagnostics = self._tree_search(vector, query_embedding, top_k)
            diagnostics.update(tree_diagnostics)
            seen = {d.id for d in ranked}
            for cid in sorted(found, key=lambda c: (-found[c][0], c)):
                if len(ranked) >= top_k:
                    break
                if cid not in seen:
                    score, doc, via, parent_id = found[cid]
                    tree = {"via": via, "parent_id": parent_id}
                    ranked.append(with_fields(doc, score=score, meta={**doc.meta, "section_tree": tree}))
            leading.extend(d for d in ranked[:top_k] if d.meta["section_tree"]["via"] == "structural")
            return ranked[:top_k]

        found = search_or_failure(self.channel, search, self.share_documents)
        failed = found["documents"] is None
        diagnostics["returned"] = None if failed else len(found["documents"])
        structural_hits = None if failed else channel_documents(leading, dense=True)
        return {**found, "tree": diagnostics, "structural_hits": structural_hits}
