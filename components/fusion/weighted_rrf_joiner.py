"""Weighted reciprocal rank fusion with weights given per query and provenance kept on every document."""

from __future__ import annotations

import logging
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.errors import ComponentError

from adaptive_retrieval.components.document_copy import with_fields
from adaptive_retrieval.components.errors import AdaptiveRetrievalError
from adaptive_retrieval.components.frozen_mapping import FrozenMapping, freeze
from adaptive_retrieval.components.shared_documents import RankedDocuments, SharedDocuments, documents_type
from adaptive_retrieval.components.strategy import WeightsInput

logger = logging.getLogger(__name__)

DEFAULT_CHANNELS = ["dense", "sparse"]


class NoChannelAnsweredError(AdaptiveRetrievalError, ComponentError, RuntimeError):
    """The retrieval channels failed (all of them, or enough that nothing came back): an empty result would
    read as "nothing matched". ``reasons``: why each weighted channel that sent nothing failed."""

    def __init__(self, reasons: dict[str, str]) -> None:
        self.reasons = reasons
        detail = "; ".join(f"{c}: {r}" for c, r in reasons.items())
        super().__init__(
            f"Retrieval failed ({detail}). The index may be locked by another process, read-only, "
            "missing or unreachable: check --store / $ADAPTIVE_QDRANT_PATH / $QDRANT_URL and the server log."
        )


def fusion_type(share_documents: bool) -> Any:
    """The type the joiner's ``fusion`` output declares: read-only when it shares its documents, else a dict."""
    return FrozenMapping[Any] if share_documents else dict[str, Any]


@component
class WeightedRRFJoiner:
    """Fuses ranked lists from named channels: ``score(d) = Σ_c w_c / (k + rank_c(d))``.

    Unlike Haystack's ``DocumentJoiner`` (weights fixed at init, applied in input arrival order), the weights come
    with each query (from ``IntentRouter``) and each list arrives on its own named input, one per channel. A
    channel that sends nothing (``None``: not run or failed) is skipped and the remaining weights are
    renormalised to sum to one; a channel that failed also sends why on its ``<channel>_failure`` socket, and the
    joiner reports it in ``fusion["failures"]`` (so a caller learns it from the result, not from a log). When a
    failure was reported and every weighted channel sent nothing, or some did and nothing was fused, the joiner
    raises :class:`NoChannelAnsweredError` instead: an empty list would read as "nothing matched" (a plain
    ``Pipeline.run`` raises Haystack's ``PipelineRuntimeError`` with it as the cause). Every
    fused document records ``meta["channels"] = {channel: rank}`` and
    ``meta["channel_scores"]``; ``score`` is scaled by ``k + 1`` so that a document ranked first by every
    channel scores 1.0.

    Usage::

        joiner = WeightedRRFJoiner(channels=["dense", "sparse"])
        fused = joiner.run(dense=dense_docs, sparse=sparse_docs, weights={"dense": 0.7, "sparse": 0.3})
    """

    def __init__(
        self, channels: list[str] | None = None, k: int = 60, top_k: int | None = None, share_documents: bool = False
    ) -> None:
        """
        :param channels: names of the input lists, one input socket each (typed ``Iterable[Document] | None``: a
            list, or a channel's shared documents).
        :param k: RRF constant (60 in Cormack et al.); smaller values favour the top ranks more.
        :param top_k: cap on the fused list (``None`` keeps all).
        :param share_documents: send ``documents`` as one shared, read-only
            :class:`~adaptive_retrieval.components.shared_documents.SharedDocuments` (typed ``Iterable[Document]``:
            MMR takes it; Haystack copies it as one value) instead of a list, and ``fusion`` as a read-only
            :class:`~adaptive_retrieval.components.frozen_mapping.FrozenMapping` (the gate takes either).
        """
        self.channels = list(channels or DEFAULT_CHANNELS)
        if len(set(self.channels)) != len(self.channels) or not self.channels:
            msg = f"channels must be distinct, non-empty names; got {self.channels}"
            raise ValueError(msg)
        reserved = ({"weights", "top_k"} | {failure_socket(c) for c in self.channels}) & set(self.channels)
        if reserved:
            msg = f"channel names {sorted(reserved)} clash with the joiner's own inputs"
            raise ValueError(msg)
        if k < 1:
            msg = "k must be >= 1"
            raise ValueError(msg)
        self.k = k
        self.top_k = top_k
        self.share_documents = share_documents
        component.set_output_types(self, documents=documents_type(share_documents), fusion=fusion_type(share_documents))
        for channel in self.channels:
            component.set_input_type(self, channel, RankedDocuments | None, default=None)
            component.set_input_type(self, failure_socket(channel), str | None, default=None)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the init parameters (the channel sockets are rebuilt from ``channels``)."""
        return default_to_dict(
            self, channels=self.channels, k=self.k, top_k=self.top_k, share_documents=self.share_documents
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WeightedRRFJoiner:
        """Deserialise."""
        return default_from_dict(cls, data)

    def effective_weights(self, weights: WeightsInput, present: list[str]) -> dict[str, float]:
        """Weights of the channels that delivered a list, renormalised to sum to one."""
        if weights is None:
            raw = dict.fromkeys(present, 1.0)
        else:
            unknown = set(weights) - set(self.channels)
            if unknown:
                logger.debug("Weights for channels this joiner does not have are ignored: %s", sorted(unknown))
            raw = {c: float(weights.get(c, 0.0)) for c in present}
        if any(w < 0 for w in raw.values()):
            msg = f"Channel weights must be >= 0, got {raw}"
            raise ValueError(msg)
        total = sum(raw.values())
        if total <= 0:
            return {}
        return {c: w / total for c, w in raw.items() if w > 0}

    def run(self, weights: WeightsInput = None, top_k: int | None = None, **channel_lists: Any) -> dict[str, Any]:
        """Fuse the channel lists given as keyword inputs named after the channels.

        :param weights: per-channel weights for this query (missing channels weigh 0; ``None``: equal weights).
        :param top_k: cap on the fused list for this query.
        :returns: ``documents`` sorted by fused score and ``fusion`` diagnostics (weights used, list sizes,
            skipped channels, and ``failures``: why each failed channel failed, from its ``<channel>_failure``).
        :raises NoChannelAnsweredError: when a channel reported a failure and every weighted channel sent nothing,
            or some did and no document came back.
        """
        failures = {
            c: channel_lists.pop(failure_socket(c)) for c in self.channels if failure_socket(c) in channel_lists
        }
        unknown = set(channel_lists) - set(self.channels)
        if unknown:
            msg = f"Unknown channel inputs {sorted(unknown)}; this joiner has {self.channels}"
            raise ValueError(msg)
        present = [c for c in self.channels if channel_lists.get(c) is not None]
        used = self.effective_weights(weights, present)
        fused: dict[str, Document] = {}
        totals: dict[str, float] = {}
        ranks: dict[str, dict[str, int]] = {}
        scores: dict[str, dict[str, float | None]] = {}
        for channel, weight in used.items():
            for rank, doc in enumerate(channel_lists[channel], start=1):
                if doc.id not in fused or (fused[doc.id].embedding is None and doc.embedding is not None):
                    fused[doc.id] = doc
                totals[doc.id] = totals.get(doc.id, 0.0) + weight / (self.k + rank)
                ranks.setdefault(doc.id, {})[channel] = rank
                scores.setdefault(doc.id, {})[channel] = doc.score
        order = sorted(totals, key=lambda i: (-totals[i], i))
        limit = top_k if top_k is not None else self.top_k
        if limit is not None:
            order = order[:limit]
        documents = [
            with_fields(
                fused[i],
                score=totals[i] * (self.k + 1),
                meta={**fused[i].meta, "channels": ranks[i], "channel_scores": scores[i]},
            )
            for i in order
        ]
        self._check_answered(weights, present, failures, documents)
        diagnostics = {
            "weights": used,
            "sizes": {c: len(channel_lists[c]) for c in present},
            "skipped": [c for c in self.channels if c not in used],
            "failures": {c: reason for c, reason in failures.items() if reason is not None},
        }
        if self.share_documents:
            return {"documents": SharedDocuments(documents), "fusion": freeze(diagnostics)}
        return {"documents": documents, "fusion": diagnostics}

    def _check_answered(
        self,
        weights: WeightsInput,
        present: list[str],
        failures: dict[str, str | None],
        documents: list[Document],
    ) -> None:
        weighted = [c for c in self.channels if weights is None or weights.get(c, 0.0) > 0]
        silent = [c for c in weighted if c not in present]
        if not any(failures.get(c) for c in silent):
            return  # a channel that was not connected or not run is skipped, as it always was
        if len(silent) == len(weighted) or not documents:
            raise NoChannelAnsweredError({c: failures.get(c) or "failed (see the log)" for c in silent})


def failure_socket(channel: str) -> str:
    """The joiner's input that receives why ``channel`` failed (the channel's ``failure`` output)."""
    return f"{channel}_failure"
