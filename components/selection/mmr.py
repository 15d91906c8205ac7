"""Maximal marginal relevance, vectorised with numpy."""

from __future__ import annotations

import numpy as np


def mmr_select(
    relevance: np.ndarray,
    embeddings: np.ndarray,
    k: int,
    lambda_: float,
    duplicate_threshold: float | None = None,
) -> list[int]:
    """Greedy MMR: repeatedly pick ``argmax λ·rel(d) − (1−λ)·max_{s∈S} sim(d, s)``.

    :param relevance: ``[n]`` relevance of each candidate to the query.
    :param embeddings: ``[n, dim]`` L2-normalised candidate embeddings (cosine = dot product).
    :param k: number of candidates to select.
    :param lambda_: 1.0 is pure relevance order, 0.0 pure diversity (after the first pick).
    :param duplicate_threshold: candidates whose cosine to an already selected one reaches this are dropped
        (near-verbatim copies of a passage add nothing); ``None`` keeps them.
    :returns: indices of the selected candidates, in selection order. Ties go to the lower index.
    """
    n = len(relevance)
    k = min(k, n)
    if k <= 0:
        return []
    similarity = embeddings @ embeddings.T
    max_sim = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    selected: list[int] = []
    for step in range(k):
        diversity = np.where(np.isfinite(max_sim), max_sim, 0.0) if step else np.zeros(n)
        objective = lambda_ * relevance - (1.0 - lambda_) * diversity
        usable = available
        if duplicate_threshold is not None and step:
            usable = available & (max_sim < duplicate_threshold)
        if not usable.any():
            break
        objective = np.where(usable, objective, -np.inf)
        best = int(np.argmax(objective))
        selected.append(best)
        available[best] = False
        max_sim = np.maximum(max_sim, similarity[best])
    return selected
