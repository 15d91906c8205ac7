"""What the quality gate sees, kept to study it offline: each question's attempt-0 list with its kind (answerable,
absent fact, missing evidence) and the index's own pseudo-queries (present, excluded, absent attribute).

``scripts/lab/eval_gate_lodo.py`` runs a development set once through the real query pipeline (the gate's loop off)
and keeps, per query, the documents the gate judged (text, the metadata its signals read, embedding as float32),
the query's vector and the joiner's fusion diagnostics. Every signal and threshold is then computed from these
records, so choosing them by leave-one-domain-out costs no further query.

Usage::

    record = GateRecord.from_run(kind="answerable", query=text, documents=docs, vector=v, fusion=f)
    record.documents()   # Haystack Documents again, for QualityGate.signals
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from haystack import Document

#: The metadata the gate's signals (and the CLI's reason) read.
_META = ("doc_id", "title", "section_path", "channels", "passage_id", "source", "level")

#: The kinds of records: a real question as it is, a question whose fact its document lacks (real, or built by
#: :mod:`evaluation.absent_facts`), a real question with its gold documents deleted; and the self-calibration's
#: pseudo-queries.
KINDS = ("answerable", "absent_real", "absent_built", "missing", "pseudo_present", "pseudo_excluded", "pseudo_absent")


@dataclass
class GateRecord:
    """One query and the list the gate judged."""

    kind: str
    query: str
    contents: list[str]
    meta: list[dict[str, Any]]
    embeddings: np.ndarray
    scores: list[float | None]
    vector: np.ndarray
    fusion: dict[str, Any]
    group: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_run(
        cls,
        kind: str,
        query: str,
        documents: list[Document],
        vector: Any,
        fusion: dict[str, Any],
        group: int = 0,
        **extra: Any,
    ) -> GateRecord:
        dim = len(vector)
        emb = np.zeros((len(documents), dim), dtype=np.float32)
        for i, doc in enumerate(documents):
            if doc.embedding is not None:
                emb[i] = np.asarray(doc.embedding, dtype=np.float32)
        return cls(
            kind=kind,
            query=query,
            contents=[d.content or "" for d in documents],
            meta=[{k: d.meta[k] for k in _META if k in d.meta} for d in documents],
            embeddings=emb,
            scores=[d.score for d in documents],
            vector=np.asarray(vector, dtype=np.float32),
            fusion={k: fusion.get(k) for k in ("weights", "sizes", "skipped") if k in fusion},
            group=group,
            extra=dict(extra),
        )

    def documents(self) -> list[Document]:
        """The judged list as Documents (embeddings as float lists, as the pipeline hands them to the gate)."""
        return [
            Document(content=c, meta=dict(m), embedding=e.tolist() if e.any() else None, score=s)
            for c, m, e, s in zip(self.contents, self.meta, self.embeddings, self.scores, strict=True)
        ]
