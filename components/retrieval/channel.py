"""What every retrieval channel shares: the skip rule for per-query channel weights."""

from __future__ import annotations

from dataclasses import replace

from haystack import Document


def channel_enabled(channel: str, weights: dict[str, float] | None) -> bool:
    """A channel runs unless the router gave it a weight of zero (no weights at all means run)."""
    return weights is None or weights.get(channel, 0.0) > 0.0


def without_sparse(documents: list[Document]) -> list[Document]:
    """Drop sparse vectors from retrieved documents: nothing downstream reads them, and Haystack deep-copies
    every component input, so each vector carried costs time at every stage."""
    return [replace(d, sparse_embedding=None) if d.sparse_embedding is not None else d for d in documents]
