"""Pseudo-relevance feedback: the first hits of a query taken as relevant, and the query moved toward them.

Two classic, model-free ways to widen an ad-hoc query with the words or the meaning of its best first hits
(Rocchio, 1971; Lavrenko and Croft's relevance model, RM3 as in Abdul-Jaleel et al., 2004):

- :func:`relevance_model` / :func:`expand_sparse` (RM3): the terms the feedback documents use most, in
  proportion to their share of each document's BM25 term weights, mixed into the query's own terms;
- :func:`rocchio`: the query vector moved toward the mean of the feedback documents' vectors.

The feedback documents are :func:`feedback_documents`: the dense and BM25 channels' first hits fused by reciprocal
rank, so that neither kind of match alone decides what the query is widened with. Pure functions on numbers and
documents; the channels that search with them are
:class:`~adaptive_retrieval.components.retrieval.sparse_feedback_retriever.SparseFeedbackRetriever` and
:class:`~adaptive_retrieval.components.retrieval.dense_feedback_retriever.DenseFeedbackRetriever`.

Usage::

    hits = feedback_documents([dense_docs, sparse_docs], n=5)
    model = relevance_model([(indices, values), ...], terms=10)        # {term id: P(term | feedback)}
    query = expand_sparse(query_indices, query_values, model, original_weight=0.5)
    vector = rocchio(query_embedding, [d.embedding for d in hits], query_weight=0.7)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from haystack import Document

#: The meta fields indexed with a chunk's text by the sparse document embedder (yaml/indexing.yaml): a feedback
#: document's terms are read from the same text its BM25 vector was built from.
INDEXED_META = ("title", "section_path")


def check_feedback_parameters(feedback_docs: int, weight: float, weight_name: str) -> None:
    """Refuse a non-positive number of feedback documents or a mixing weight outside [0, 1].

    :raises ValueError: naming the parameter.
    """
    if not isinstance(feedback_docs, int) or feedback_docs < 1:
        msg = f"feedback_docs must be a positive integer, got {feedback_docs!r}"
        raise ValueError(msg)
    if not 0.0 <= float(weight) <= 1.0:
        msg = f"{weight_name} must be within [0, 1], got {weight!r}"
        raise ValueError(msg)


def feedback_documents(lists: Sequence[Sequence[Document]], n: int, k: int = 60) -> list[Document]:
    """The ``n`` best distinct documents of ``lists`` fused by reciprocal rank (constant ``k``); ties keep the
    order in which the documents were first met."""
    scores: dict[str, float] = {}
    docs: dict[str, Document] = {}
    for ranked in lists:
        for rank, doc in enumerate(ranked, start=1):
            scores[doc.id] = scores.get(doc.id, 0.0) + 1.0 / (k + rank)
            docs.setdefault(doc.id, doc)
    order = sorted(scores, key=lambda i: -scores[i])
    return [docs[i] for i in order[:n]]


def indexed_text(document: Document, meta_fields: Sequence[str] = INDEXED_META) -> str:
    """The text the sparse document embedder indexed for ``document``: its meta fields, then its content."""
    parts = []
    for name in meta_fields:
        value = document.meta.get(name)
        if value:
            parts.append(" ".join(map(str, value)) if isinstance(value, list) else str(value))
    parts.append(document.content or "")
    return "\n".join(parts)


def relevance_model(
    vectors: Sequence[tuple[Sequence[int], Sequence[float]]],
    terms: int,
    weights: Sequence[float] | None = None,
) -> dict[int, float]:
    """RM1 over feedback documents: ``P(t | R) ∝ Σ_d w_d · v_d(t) / Σ_t' v_d(t')``, the ``terms`` most probable,
    renormalised to sum to one.

    :param vectors: each feedback document's sparse vector (term ids, BM25 term weights).
    :param terms: how many terms to keep.
    :param weights: each document's weight (``None``: equal); documents with no terms are skipped.
    """
    if terms < 1:
        msg = f"terms must be >= 1, got {terms}"
        raise ValueError(msg)
    weights = [1.0] * len(vectors) if weights is None else list(weights)
    if len(weights) != len(vectors):
        msg = f"{len(vectors)} feedback vectors but {len(weights)} weights"
        raise ValueError(msg)
    mass: dict[int, float] = {}
    for (indices, values), weight in zip(vectors, weights, strict=True):
        total = float(sum(values))
        if total <= 0 or weight <= 0:
            continue
        for index, value in zip(indices, values, strict=True):
            mass[int(index)] = mass.get(int(index), 0.0) + weight * float(value) / total
    kept = sorted(mass, key=lambda t: (-mass[t], t))[:terms]
    norm = sum(mass[t] for t in kept)
    return {t: mass[t] / norm for t in kept} if norm > 0 else {}


def expand_sparse(
    indices: Sequence[int], values: Sequence[float], model: dict[int, float], original_weight: float
) -> tuple[list[int], list[float]]:
    """RM3: the query's own term weights (scaled to sum to one) times ``original_weight`` plus the relevance model
    times ``1 - original_weight``; terms sorted by id. With no model the query comes back scaled alone."""
    total = float(sum(values))
    query = {int(i): float(v) / total for i, v in zip(indices, values, strict=True)} if total > 0 else {}
    share = original_weight if model else 1.0
    mixed = {t: share * w for t, w in query.items()}
    for term, p in model.items():
        mixed[term] = mixed.get(term, 0.0) + (1.0 - share) * p
    ordered = sorted(t for t, w in mixed.items() if w > 0)
    return ordered, [mixed[t] for t in ordered]


def rocchio(query: Sequence[float], feedback: Sequence[Sequence[float]], query_weight: float) -> list[float]:
    """Rocchio without negatives on unit vectors: ``query_weight · q̂ + (1 - query_weight) · mean(d̂)``, scaled to
    unit length (the query as it is when there is no feedback vector)."""
    q = np.asarray(query, dtype=np.float32)
    q = q / max(float(np.linalg.norm(q)), 1e-12)
    if len(feedback) == 0:
        return q.tolist()
    docs = np.asarray(feedback, dtype=np.float32)
    docs = docs / np.maximum(np.linalg.norm(docs, axis=1, keepdims=True), 1e-12)
    moved = query_weight * q + (1.0 - query_weight) * docs.mean(axis=0)
    return (moved / max(float(np.linalg.norm(moved)), 1e-12)).tolist()
