"""Cheap checks that an embedded Qdrant Edge index is whole, made when it opens and on what a search returns.

A damaged index used to answer queries with exit 0: a deleted ``segments`` folder (Edge starts an empty one), a
lost segment, flipped vector bytes. These checks cost a directory lookup, one count and one scroll of the
manifest records (one per source) on open, a norm per vector as it is first read, and a look at every score a
search returns; ``adaptive-retrieval stats --verify`` checks everything (every vector, every id, the graph file).

Usage::

    from adaptive_retrieval.components.stores.documents.edge_checks import ledger_problem, vector_problem

    ledger_problem(store)                       # None, or "the index holds 12 chunks and summaries where ..."
    vector_problem(documents, normalised=True)  # None, or "document 3f2a… has a vector with non-finite values"
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document

from adaptive_retrieval.components.manifest_records import (
    MANIFEST_FILTER,
    STATE_COMPLETE,
    STATE_DELETING,
    STATE_INDEXING,
)

#: Largest distance from 1 of a stored vector's norm under cosine similarity (Edge stores them normalised).
NORM_TOLERANCE = 1e-3


def missing_segments(shard_folder: Path) -> bool:
    """Whether an existing shard lost its ``segments`` folder (Edge would start an empty one and lose the data)."""
    return (shard_folder / "wal").is_dir() and not (shard_folder / "segments").is_dir()


def ledger_problem(store: Any) -> str | None:
    """What is missing when the chunks and summaries stored are fewer than the ``complete`` manifest records count
    (see :mod:`adaptive_retrieval.components.manifest_records`), or ``None``. A run a crash left unfinished
    (records ``indexing``/``deleting``) is for the next indexing run to repair, so it is not judged here."""
    records = [d.meta for d in store.filter_documents(filters=MANIFEST_FILTER)]
    if not records or any(r.get("state") in (STATE_INDEXING, STATE_DELETING) for r in records):
        return None
    expected = sum(
        int(r.get("chunks") or 0) + int(r.get("summaries") or 0) for r in records if r.get("state") == STATE_COMPLETE
    )
    stored = store.count_documents_by_filter({"field": "meta.level", "operator": ">=", "value": 0})
    if stored >= expected:
        return None
    return (
        f"it holds {stored} chunks and summaries where its manifest records count {expected} "
        f"({expected - stored} missing: a deleted or damaged segment?)"
    )


def score_problem(points: Iterable[Any]) -> str | None:
    """Why the scores of a search's points cannot be right (a non-finite score), or ``None``."""
    for point in points:
        if point.score is not None and not math.isfinite(point.score):
            return f"point {point.id} came back with the score {point.score}"
    return None


def vector_problem(documents: Iterable[Document], normalised: bool) -> str | None:
    """Why the vectors or scores a search returned cannot be right (non-finite values, or a norm other than 1 where
    the index stores normalised vectors), or ``None``."""
    documents = list(documents)
    vectors = [d.embedding for d in documents if d.embedding is not None]
    # One matrix for the whole result (a search returns vectors of one dimension): the usual "all fine" answer
    # costs one numpy pass instead of three per document; a problem is then named document by document.
    if vectors and len({len(v) for v in vectors}) == 1:
        matrix = np.asarray(vectors, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            norms = np.linalg.norm(matrix, axis=1)
        scores = np.asarray([d.score for d in documents if d.score is not None], dtype=np.float64)
        if (
            np.isfinite(matrix).all()
            and np.isfinite(scores).all()
            and (not normalised or (np.abs(norms - 1.0) <= NORM_TOLERANCE).all())
        ):
            return None
    for doc in documents:
        if doc.score is not None and not np.isfinite(doc.score):
            return f"document {doc.id} came back with the score {doc.score}"
        if doc.embedding is None:
            continue
        vector = np.asarray(doc.embedding, dtype=np.float64)
        if not np.isfinite(vector).all():
            return f"document {doc.id} has a vector with non-finite values"
        with np.errstate(over="ignore"):
            norm = float(np.linalg.norm(vector))
        if normalised and abs(norm - 1.0) > NORM_TOLERANCE:
            return f"document {doc.id} has a vector of norm {norm:.4g} where 1 is stored"
    return None
