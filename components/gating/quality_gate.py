"""Quality gate: decide whether the retrieved evidence is good enough, worth a broader retry, or insufficient.

The gate turns the signals of :mod:`components.gating.signals` into one quality score with a logistic model,
``quality = sigmoid(bias + Σ w_s · signal_s)``, whose weights and threshold are fitted on data by
``scripts/calibrate_gate.py`` (answerable questions against the same questions with their supporting passages
removed from the index). Then:

- ``quality >= pass_threshold`` → **pass**: the documents go out;
- below it with retries left → **retry**: the ``retry`` output sends the query back around the pipeline loop
  (through :class:`~components.gating.retry_loop.RetryLoop` to the router, which widens the strategy);
- below it with no retry left → **insufficient**: the best attempt's documents go out, flagged.

Each attempt's documents, quality and signals travel with the retry, so the final output carries the decision,
the signals, the attempt that produced the documents and the history of every attempt. The loop is bounded by
``max_retries``.

Usage::

    gate = QualityGate(max_retries=1)
    out = gate.run(documents=docs, query="Who founded X?", query_embedding=vector, fusion=fusion)
    out["decision"], out["quality"], out["signals"]   # 'pass', 0.83, {'top_score': 0.71, ...}
"""

from __future__ import annotations

import logging
import math
from typing import Any

from haystack import Document, component

from components.gating.signals import SIGNALS, gate_signals

logger = logging.getLogger(__name__)

DECISIONS: tuple[str, ...] = ("pass", "retry", "insufficient")

#: Logistic weights, bias and threshold fitted by ``scripts/calibrate_gate.py`` on hotpotqa100 (100 questions,
#: answerable vs. supporting passages removed; out-of-fold AUROC 0.83). Agreement carries almost no signal there.
DEFAULT_WEIGHTS: dict[str, float] = {
    "top_score": 5.961,
    "margin": 5.161,
    "coverage": 4.788,
    "agreement": -0.285,
    "redundancy": 1.23,
}
DEFAULT_BIAS = -8.359
DEFAULT_PASS_THRESHOLD = 0.499


@component
class QualityGate:
    """Pass / retry / insufficient decision on a retrieved list, driving the pipeline's corrective loop.

    :param max_retries: retries allowed after the first attempt (0 disables the loop).
    :param signal_k: top documents the signals look at.
    :param weights: logistic weight of each signal (``top_score``, ``margin``, ``coverage``, ``agreement``,
        ``redundancy``); signals left out weigh 0.
    :param bias: logistic intercept.
    :param pass_threshold: quality in (0, 1) at or above which the documents pass.
    """

    def __init__(
        self,
        max_retries: int = 1,
        signal_k: int = 5,
        weights: dict[str, float] | None = None,
        bias: float = DEFAULT_BIAS,
        pass_threshold: float = DEFAULT_PASS_THRESHOLD,
    ) -> None:
        if max_retries < 0:
            msg = f"max_retries must be >= 0, got {max_retries}"
            raise ValueError(msg)
        if signal_k < 1:
            msg = f"signal_k must be >= 1, got {signal_k}"
            raise ValueError(msg)
        weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        unknown = sorted(set(weights) - set(SIGNALS))
        if unknown:
            msg = f"Unknown signal(s) {unknown} in weights; the gate's signals are {list(SIGNALS)}"
            raise ValueError(msg)
        if not 0.0 < pass_threshold < 1.0:
            msg = f"pass_threshold must be within (0, 1), got {pass_threshold}"
            raise ValueError(msg)
        self.max_retries = max_retries
        self.signal_k = signal_k
        self.weights = weights
        self.bias = bias
        self.pass_threshold = pass_threshold

    def quality(self, signals: dict[str, float]) -> float:
        """The logistic quality score in (0, 1) of a set of signals."""
        z = self.bias + sum(w * signals.get(name, 0.0) for name, w in self.weights.items())
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    @component.output_types(
        documents=list[Document],
        decision=str,
        quality=float,
        signals=dict[str, float],
        attempt=int,
        attempts=list[dict[str, Any]],
        retry=dict[str, Any],
    )
    def run(
        self,
        documents: list[Document],
        query: str,
        query_embedding: list[float] | None = None,
        fusion: dict[str, Any] | None = None,
        attempt: int | None = None,
        previous: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Judge one attempt.

        :param documents: the attempt's final list (after MMR and reranking).
        :param query: the question.
        :param query_embedding: the query vector (for the similarity signals).
        :param fusion: the joiner's diagnostics: the channels with a weight (``weights``) that returned documents
            (``sizes``) are the ones agreement counts.
        :param attempt: 0 for the first attempt, n for the n-th retry (from ``RetryLoop``).
        :param previous: the best earlier attempt, carried around the loop by ``RetryLoop``.
        :returns: on a retry only ``retry`` (``{"attempt": n + 1, "previous": best so far}``); otherwise
            ``documents``, ``decision`` (``pass`` or ``insufficient``), ``quality``, ``signals`` and ``attempt``
            of the attempt whose documents are returned, and ``attempts`` (every attempt's decision, quality
            and signals).
        """
        attempt = attempt or 0
        if attempt < 0:
            msg = f"attempt must be >= 0, got {attempt}"
            raise ValueError(msg)
        channels = None
        if fusion and fusion.get("weights"):
            # A channel that found nothing (e.g. an empty graph) can neither agree nor disagree.
            sizes = fusion.get("sizes", {})
            channels = [c for c in fusion["weights"] if sizes.get(c, 1) > 0]
        signals = gate_signals(documents, query, query_embedding, channels, self.signal_k)
        quality = self.quality(signals)
        if quality >= self.pass_threshold:
            decision = "pass"
        elif attempt < self.max_retries:
            decision = "retry"
        else:
            decision = "insufficient"
        record = {
            "attempt": attempt,
            "decision": decision,
            "quality": round(quality, 4),
            "signals": {k: round(v, 4) for k, v in signals.items()},
            "documents": len(documents),
        }
        history = [*(previous or {}).get("attempts", []), record]
        current = {"documents": documents, "quality": quality, "signals": signals, "attempt": attempt}
        # Ties go to the later attempt: it searched more widely.
        best = current if previous is None or quality >= previous["quality"] else previous
        logger.debug("Quality gate: attempt %d quality %.3f -> %s", attempt, quality, decision)
        if decision == "retry":
            return {"retry": {"attempt": attempt + 1, "previous": {**best, "attempts": history}}}
        if decision == "insufficient" and best is not current:
            logger.info(
                "No attempt passed; returning attempt %d, the best (quality %.3f)", best["attempt"], best["quality"]
            )
        return {
            "documents": best["documents"],
            "decision": decision,
            "quality": round(best["quality"], 4),
            "signals": {k: round(v, 4) for k, v in best["signals"].items()},
            "attempt": best["attempt"],
            "attempts": history,
        }
