"""Retrieval metrics over ranked passage ids: recall@k, full support@k, MRR, nDCG@k, latency percentiles.

A system returns chunks; :func:`passage_ranking` maps them to the passages they came from (first occurrence
wins), and the metrics compare that ranking with the gold passage ids of a question.

Usage::

    ranked = passage_ranking(documents, key="passage_id")
    scores = question_metrics(ranked, gold={"Paris", "France"})   # {"recall@5": ..., "full@10": ..., ...}
    summary = aggregate([scores, ...], types=["bridge", ...])     # means overall and per question type
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

#: The metrics :func:`question_metrics` computes, in report order.
METRICS: tuple[str, ...] = ("recall@5", "recall@10", "full@10", "mrr", "ndcg@10")

#: Resamples of :func:`bootstrap_interval` unless told otherwise.
BOOTSTRAP_RESAMPLES = 10_000


def _check(ranked: Sequence[str], gold: Iterable[str], k: int | None = None) -> set[str]:
    gold_set = set(gold)
    if not gold_set:
        msg = "A question needs at least one gold passage id."
        raise ValueError(msg)
    if k is not None and k < 1:
        msg = f"k must be >= 1, got {k}"
        raise ValueError(msg)
    return gold_set


def recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Fraction of the gold passages found in the first ``k`` of ``ranked``."""
    gold_set = _check(ranked, gold, k)
    return len(gold_set.intersection(ranked[:k])) / len(gold_set)


def full_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1.0 when every gold passage is in the first ``k`` of ``ranked`` (full support), else 0.0."""
    gold_set = _check(ranked, gold, k)
    return float(gold_set.issubset(ranked[:k]))


def reciprocal_rank(ranked: Sequence[str], gold: Iterable[str], k: int = 10) -> float:
    """1 / rank of the first gold passage within the first ``k`` (0.0 when none is there)."""
    gold_set = _check(ranked, gold, k)
    for rank, pid in enumerate(ranked[:k], 1):
        if pid in gold_set:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], gold: Iterable[str], k: int = 10) -> float:
    """Binary-relevance nDCG: DCG of ``ranked[:k]`` over the DCG of the ideal ranking (gold first)."""
    gold_set = _check(ranked, gold, k)
    dcg = sum(1.0 / math.log2(rank + 1) for rank, pid in enumerate(ranked[:k], 1) if pid in gold_set)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold_set), k) + 1))
    return dcg / ideal


def question_metrics(ranked: Sequence[str], gold: Iterable[str]) -> dict[str, float]:
    """All of :data:`METRICS` for one question (MRR counts the first 10 passages)."""
    gold_set = set(gold)
    return {
        "recall@5": recall_at_k(ranked, gold_set, 5),
        "recall@10": recall_at_k(ranked, gold_set, 10),
        "full@10": full_at_k(ranked, gold_set, 10),
        "mrr": reciprocal_rank(ranked, gold_set, 10),
        "ndcg@10": ndcg_at_k(ranked, gold_set, 10),
    }


def passage_ranking(documents: Iterable[Any], key: str = "passage_id") -> list[str]:
    """Passage ids of ranked chunks (``meta[key]``), first occurrence kept, order preserved.

    :raises ValueError: when a chunk lacks ``meta[key]`` (its passage cannot be scored).
    """
    seen: set[str] = set()
    ranked: list[str] = []
    for doc in documents:
        pid = doc.meta.get(key)
        if pid is None:
            msg = f"Retrieved chunk {doc.id} has no meta['{key}']: cannot map it to a passage."
            raise ValueError(msg)
        if pid not in seen:
            seen.add(pid)
            ranked.append(pid)
    return ranked


def percentiles(latencies_ms: Sequence[float]) -> dict[str, float]:
    """``p50_ms`` and ``p95_ms`` of a list of latencies (linear interpolation, as numpy)."""
    if not latencies_ms:
        return {"p50_ms": float("nan"), "p95_ms": float("nan")}
    values = np.asarray(latencies_ms, dtype=np.float64)
    return {"p50_ms": float(np.percentile(values, 50)), "p95_ms": float(np.percentile(values, 95))}


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    """Mean of every metric over ``rows`` (questions)."""
    if not rows:
        return {m: float("nan") for m in METRICS}
    return {m: float(np.mean([row[m] for row in rows])) for m in METRICS}


def aggregate(
    rows: Sequence[dict[str, float]], types: Sequence[str], latencies_ms: Sequence[float] | None = None
) -> dict[str, Any]:
    """Means of :data:`METRICS` over all questions, latency percentiles, ``n``, and the same per question type."""
    if len(rows) != len(types):
        msg = f"{len(rows)} metric rows but {len(types)} question types"
        raise ValueError(msg)
    summary: dict[str, Any] = {**mean_metrics(rows), "n": len(rows)}
    if latencies_ms is not None:
        summary.update(percentiles(latencies_ms))
    by_type: dict[str, Any] = {}
    for qtype in sorted(set(types)):
        picked = [i for i, t in enumerate(types) if t == qtype]
        entry: dict[str, Any] = {**mean_metrics([rows[i] for i in picked]), "n": len(picked)}
        if latencies_ms is not None:
            entry.update(percentiles([latencies_ms[i] for i in picked]))
        by_type[qtype] = entry
    summary["by_type"] = by_type
    return summary


def bootstrap_interval(
    ours: Sequence[float],
    theirs: Sequence[float] | None = None,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval over questions: of the mean of ``ours``, or, given ``theirs`` (the same
    questions, another system), of the ratio ``sum(ours) / sum(theirs)``, resampling the questions in pairs.

    Evaluation sets here hold 100 questions or fewer, so a point estimate can sit on either side of a target by
    one question; the interval says how far the data pin it down. Resamples whose ``theirs`` sums to 0 count as an
    infinite ratio.

    :raises ValueError: for no questions, unequal lengths, or ``level`` outside (0, 1).
    """
    if not ours or (theirs is not None and len(theirs) != len(ours)):
        msg = "bootstrap_interval needs the same non-zero number of values per system"
        raise ValueError(msg)
    if not 0.0 < level < 1.0:
        msg = "level must be within (0, 1)"
        raise ValueError(msg)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(ours), size=(resamples, len(ours)))
    numerator = np.asarray(ours, dtype=np.float64)[picks].sum(axis=1)
    if theirs is None:
        stats = numerator / len(ours)
    else:
        denominator = np.asarray(theirs, dtype=np.float64)[picks].sum(axis=1)
        positive = denominator > 0
        stats = np.where(positive, numerator / np.where(positive, denominator, 1.0), np.inf)
    tail = (1.0 - level) / 2 * 100
    # "nearest" picks resampled values: no interpolation between an infinite ratio and a finite one.
    low, high = np.percentile(stats, [tail, 100 - tail], method="nearest")
    return float(low), float(high)
