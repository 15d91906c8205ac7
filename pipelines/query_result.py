"""What a query returns: one typed :class:`QueryResult` that every surface (CLI, REST, MCP, chat, the demo) renders.

:func:`~adaptive_retrieval.pipelines.query_pipeline.run_query` builds it from the pipeline's outputs; the REST
answer is its JSON form (:meth:`QueryResult.to_dict`, documents as :func:`document_to_wire`), and
:meth:`QueryResult.from_dict` reads that form back (the CLI, when a server owns the index).

Usage::

    result = run_query(pipeline, "Who founded the company?")
    result.verdict, result.reason          # 'found', 'Found in your documents: passage 1 (...) holds ...'
    result.intent, result.strategy.fetch_k, result.documents[0].meta["channels"]
    result.gate.attempts[-1].decision if result.gate else None
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.gating.attempts import AttemptRecord
from adaptive_retrieval.components.strategy import Strategy

#: Meta keys a served document does not repeat: shown at its top level (source, title, section, provenance and the
#: channels' scores), the list's own order (``mmr_rank``), or bookkeeping of the index (hashes, ids, the server's
#: file path). What the indexing of the user's own files added stays.
HIDDEN_META: frozenset[str] = frozenset(
    {
        "source",
        "title",
        "section",
        "section_path",
        "channels",
        "channel_scores",
        "mmr_rank",
        "file_path",
        "source_hash",
        "doc_id",
        "section_id",
        "encoding",
    }
)


@dataclass(frozen=True)
class GateOutcome:
    """The quality gate's judgement of the query: the decision, the quality of the attempt whose documents are
    returned, the verdict in words, and every attempt's record."""

    decision: str
    quality: float
    signals: Mapping[str, float] = field(default_factory=dict)
    attempt: int = 0
    attempts: tuple[AttemptRecord, ...] = ()
    calibration: str | None = None
    pass_threshold: float | None = None
    verdict: str | None = None
    reason: str | None = None
    retry_skipped: str | None = None

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, Any]) -> GateOutcome | None:
        """From the gate component's outputs (``None`` when it did not answer)."""
        if "decision" not in outputs:
            return None
        return cls(
            decision=outputs["decision"],
            quality=float(outputs.get("quality", 0.0)),
            signals=dict(outputs.get("signals") or {}),
            attempt=int(outputs.get("attempt") or 0),
            attempts=tuple(outputs.get("attempts") or ()),
            calibration=outputs.get("calibration"),
            pass_threshold=outputs.get("pass_threshold"),
            verdict=outputs.get("verdict"),
            reason=outputs.get("reason"),
            retry_skipped=outputs.get("retry_skipped"),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateOutcome:
        """From :meth:`to_dict`'s form."""
        records = tuple(AttemptRecord(**record) for record in data.get("attempts") or ())
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data and k != "attempts"}
        return cls(**{**known, "attempts": records})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``retry_skipped`` only when set)."""
        out: dict[str, Any] = {
            "decision": self.decision,
            "quality": self.quality,
            "signals": dict(self.signals),
            "attempt": self.attempt,
            "attempts": [record.to_dict() for record in self.attempts],
            "calibration": self.calibration,
            "pass_threshold": self.pass_threshold,
            "verdict": self.verdict,
            "reason": self.reason,
        }
        if self.retry_skipped:
            out["retry_skipped"] = self.retry_skipped
        return out


@dataclass(frozen=True)
class QueryResult:
    """Documents with the routing, fusion and gate outcome of one query, and its stage timings.

    :param documents: the final list, in the pipeline's order; each document's ``meta["channels"]`` says which
        channel found it at which rank.
    :param intent: the most probable intent; ``confidence`` its probability.
    :param weights: the channel weights the joiner applied (renormalised over the channels that ran).
    :param strategy: the router's strategy of the attempt that produced the documents.
    :param routing: the router's diagnostics (probabilities, rules fired, fallback, escalation, time).
    :param fusion: the joiner's diagnostics (weights, sizes, skipped channels).
    :param failed: channels the router weighted that failed, with why.
    :param gate: the gate's outcome (``None`` for a pipeline without a gate).
    :param timings_ms: milliseconds per component, summed over attempts, and ``total``.
    :param query_embedding: the last attempt's query vector.
    """

    query: str
    documents: list[Document]
    intent: str
    confidence: float
    weights: Mapping[str, float]
    strategy: Strategy
    routing: Mapping[str, Any] = field(default_factory=dict)
    fusion: Mapping[str, Any] = field(default_factory=dict)
    failed: Mapping[str, str] = field(default_factory=dict)
    structural: Mapping[str, Any] | None = None
    gate: GateOutcome | None = None
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    query_embedding: list[float] | None = None

    @property
    def verdict(self) -> str | None:
        """``found``, ``not_found`` or ``uncertain`` (``None`` without a gate)."""
        return self.gate.verdict if self.gate else None

    @property
    def reason(self) -> str | None:
        """The verdict in one sentence: what is missing, or where the answer is."""
        return self.gate.reason if self.gate else None

    def head(self, top_k: int | None) -> QueryResult:
        """The same result with at most ``top_k`` documents (``None``: all)."""
        return self if top_k is None else replace(self, documents=self.documents[:top_k])

    def to_dict(self, include_embeddings: bool = False) -> dict[str, Any]:
        """The JSON form every served answer takes: documents lean (:func:`document_to_wire`), vectors only with
        ``include_embeddings``."""
        out: dict[str, Any] = {
            "query": self.query,
            "documents": [document_to_wire(d, include_embeddings) for d in self.documents],
            "verdict": self.verdict,
            "reason": self.reason,
            "intent": self.intent,
            "confidence": self.confidence,
            "weights": {c: float(w) for c, w in self.weights.items()},
            "strategy": self.strategy.to_dict(),
            "structural": json_ready(self.structural),
            "routing": json_ready(self.routing),
            "fusion": json_ready({**self.fusion, "failed": list(self.failed), "failed_reasons": dict(self.failed)}),
            "gate": self.gate.to_dict() if self.gate else None,
            "timings_ms": dict(self.timings_ms),
        }
        if include_embeddings:
            out["query_embedding"] = json_ready(self.query_embedding)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueryResult:
        """From :meth:`to_dict`'s form (a served query's answer).

        :raises ValueError: when a field the result needs is missing or of another shape.
        """
        try:
            fusion = dict(data.get("fusion") or {})
            reasons = fusion.pop("failed_reasons", None) or {}
            failed = {c: reasons.get(c, "failed") for c in fusion.pop("failed", None) or []}
            return cls(
                query=str(data["query"]),
                documents=[document_from_wire(d) for d in data["documents"]],
                intent=str(data["intent"]),
                confidence=float(data["confidence"]),
                weights={str(c): float(w) for c, w in dict(data["weights"]).items()},
                strategy=Strategy.from_dict(data["strategy"]),
                routing=dict(data.get("routing") or {}),
                fusion=fusion,
                failed=failed,
                structural=data.get("structural"),
                gate=GateOutcome.from_dict(data["gate"]) if data.get("gate") else None,
                timings_ms=dict(data.get("timings_ms") or {}),
                query_embedding=data.get("query_embedding"),
            )
        except (KeyError, TypeError, AttributeError) as err:
            msg = f"not a query result: {type(err).__name__}: {err}"
            raise ValueError(msg) from err


def document_to_wire(doc: Document, include_embeddings: bool = False) -> dict[str, Any]:
    """One document as a served answer holds it: id, text, score, where it is (source, title, section), which
    channel found it at which rank (``provenance``) with the channels' scores, and the rest of its meta less
    :data:`HIDDEN_META`; vectors only with ``include_embeddings``."""
    meta = doc.meta or {}
    scores = meta.get("channel_scores") or {}
    out: dict[str, Any] = {
        "id": doc.id,
        "content": doc.content,
        "score": float(doc.score) if doc.score is not None else None,
        "source": meta.get("source"),
        "title": meta.get("title"),
        "section": meta.get("section"),
        "provenance": dict(meta.get("channels") or {}),
        # Four decimals tell the channels' scores apart; seventeen digits each only made answers larger.
        "channel_scores": {c: round(float(v), 4) if isinstance(v, (int, float)) else v for c, v in scores.items()},
        "meta": json_ready({k: v for k, v in meta.items() if k not in HIDDEN_META}),
    }
    if include_embeddings:
        out["embedding"] = json_ready(doc.embedding)
        out["sparse_embedding"] = doc.sparse_embedding.to_dict() if doc.sparse_embedding else None
    return out


def document_from_wire(data: Mapping[str, Any]) -> Document:
    """A :class:`~haystack.Document` from :func:`document_to_wire`'s form (what a served answer holds of it)."""
    meta = dict(data.get("meta") or {})
    for key in ("source", "title", "section"):
        if data.get(key) is not None:
            meta[key] = data[key]
    meta["channels"] = dict(data.get("provenance") or {})
    meta["channel_scores"] = dict(data.get("channel_scores") or {})
    sparse = data.get("sparse_embedding")
    return Document(
        id=str(data["id"]),
        content=data.get("content"),
        score=data.get("score"),
        meta=meta,
        embedding=data.get("embedding"),
        sparse_embedding=SparseEmbedding.from_dict(sparse) if sparse else None,
    )


def json_ready(value: Any) -> Any:
    """``value`` with numpy scalars and arrays, tuples and sets turned into plain JSON values (``NaN``: ``None``)."""
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_ready(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and value != value:
        return None
    return value
