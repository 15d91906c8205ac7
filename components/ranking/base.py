"""What both rerankers share: document text, the router's on/off switch, batching order and the final sort.

Subclasses implement :meth:`RerankerBase.score` (one relevance score per text, higher is better); the
``run`` of each component calls :meth:`RerankerBase.rerank`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from haystack import Document, component

from adaptive_retrieval.components.document_copy import with_fields
from adaptive_retrieval.components.limits import check_query
from adaptive_retrieval.components.shared_documents import RankedDocuments, documents_type, hand_on

logger = logging.getLogger(__name__)


def length_batches(texts: Sequence[str], batch_size: int) -> Iterator[np.ndarray]:
    """Indices of ``texts`` in batches of similar length (less padding per batch), longest first."""
    order = np.argsort([-len(t) for t in texts], kind="stable")
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def relevance_logit(logits: Any) -> Any:
    """One relevance per row of ``[batch, labels]`` logits (numpy or torch): the logit of a one-label model, the
    log-odds (relevant − not relevant) of a two-label one."""
    return logits[:, 0] if logits.shape[-1] == 1 else logits[:, 1] - logits[:, 0]


class RerankerBase:
    """Shared reranking flow; see the module docstring."""

    #: Short name written to ``meta["reranker"]`` of reranked documents.
    kind = "reranker"

    def __init__(
        self,
        top_k: int | None,
        batch_size: int,
        meta_fields_to_embed: list[str] | None,
        share_documents: bool = False,
    ) -> None:
        if top_k is not None and top_k < 1:
            msg = f"top_k must be >= 1 or None, got {top_k}"
            raise ValueError(msg)
        if batch_size < 1:
            msg = f"batch_size must be >= 1, got {batch_size}"
            raise ValueError(msg)
        self.top_k = top_k
        self.batch_size = batch_size
        self.meta_fields_to_embed = list(meta_fields_to_embed or [])
        # Sent as one SharedDocuments (see adaptive_retrieval.components.shared_documents) when set.
        self.share_documents = share_documents
        component.set_output_types(self, documents=documents_type(share_documents))

    def document_text(self, doc: Document) -> str:
        """The text a document is scored on: the chosen meta fields, then the content."""
        parts = []
        for field in self.meta_fields_to_embed:
            value = doc.meta.get(field)
            if value:
                parts.append(" > ".join(map(str, value)) if isinstance(value, list) else str(value))
        parts.append(doc.content or "")
        return "\n".join(parts)

    def score(self, query: str, texts: list[str]) -> np.ndarray:
        """Relevance of each text to ``query`` (higher is better)."""
        raise NotImplementedError

    def rerank(
        self,
        documents: RankedDocuments,
        query: str,
        top_k: int | None,
        rerank: bool | None,
        head: int | None = None,
    ) -> dict[str, Any]:
        """Sort ``documents`` by :meth:`score`; return them unchanged (capped at ``top_k``) when ``rerank`` is False.

        Reranked documents get the new ``score``; the upstream one is kept in ``meta["upstream_score"]``.
        With ``head``, only the first ``head`` documents are scored and sorted; the rest follow in their upstream
        order, unscored (the cost is bounded by ``head``, whatever the list's length).

        :raises ValueError: for an empty query or a ``top_k`` below 1.
        """
        k = self.top_k if top_k is None else top_k
        if k is not None and k < 1:
            msg = f"top_k must be >= 1 or None, got {k}"
            raise ValueError(msg)
        if rerank is False or not documents:
            return {"documents": hand_on(list(documents)[:k] if k is not None else documents, self.share_documents)}
        check_query(query)  # the reranker needs the question to score documents against
        start = time.perf_counter()
        documents = list(documents)  # a list, or MMR's SharedDocuments (read, never changed: see with_fields)
        tail = documents[head:] if head is not None else []
        documents = documents[:head] if head is not None else documents
        scores = self.score(query, [self.document_text(d) for d in documents])
        order = sorted(range(len(documents)), key=lambda i: (-float(scores[i]), i))
        out = [
            with_fields(
                documents[i],
                score=float(scores[i]),
                meta={**documents[i].meta, "upstream_score": documents[i].score, "reranker": self.kind},
            )
            for i in order
        ]
        out += tail
        if k is not None:
            out = out[:k]
        logger.debug(
            "%s reranked %d documents in %.1f ms", self.kind, len(documents), 1000 * (time.perf_counter() - start)
        )
        return {"documents": hand_on(out, self.share_documents)}
