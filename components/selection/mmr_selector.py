"""MMR on the documents' stored embeddings: no re-embedding, vectorised, λ per query."""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from haystack import Document, component, default_from_dict

from adaptive_retrieval.components.blas_threads import one_blas_thread
from adaptive_retrieval.components.document_copy import with_fields
from adaptive_retrieval.components.models.query_vector import QueryEmbedding, as_float_list
from adaptive_retrieval.components.selection.mmr import mmr_select
from adaptive_retrieval.components.shared_documents import RankedDocuments, documents_type, hand_on
from adaptive_retrieval.components.stores.documents.vector_search import VectorSearch, vector_search
from adaptive_retrieval.components.stores.serialization import store_from_init_parameters, to_dict_with_stores
from adaptive_retrieval.components.text.terms import KEPT_TEXTS

logger = logging.getLogger(__name__)


@component
class MMRSelector:
    """Selects ``top_k`` documents by maximal marginal relevance over their stored embeddings.

    Haystack's ``SentenceTransformersDiversityRanker`` re-embeds every candidate on every call; this component
    reads each candidate's stored vector (``Document.embedding``, or, given the ``document_store``, the store's
    vector of that id: the retrieval channels hand their documents on without vectors) and the query embedding
    computed once upstream. The selected documents go on with their vectors (the quality gate reads them).
    Relevance is the cosine to the query (``relevance="query"``) or the upstream fused score rescaled to [0, 1]
    (``relevance="score"``, the default, which keeps keyword and graph evidence that cosine cannot see).
    Documents without a vector are kept but take no part in the diversity term. With ``max_per_source`` n > 0 a
    source document (``meta["source"]``) gives at most its n best-ranked candidates: a plain search's ten results
    are then ten documents, not three passages of one article.

    Usage::

        selector = MMRSelector(top_k=10, lambda_threshold=0.7, document_store=store)
        docs = selector.run(documents=fused, query_embedding=q, lambda_threshold=0.5)["documents"]
    """

    def __init__(
        self,
        top_k: int = 10,
        lambda_threshold: float = 0.7,
        relevance: Literal["score", "query"] = "score",
        duplicate_threshold: float | None = 0.98,
        document_store: Any | None = None,
        share_documents: bool = False,
        max_per_source: int = 0,
    ) -> None:
        """
        :param top_k: documents to select.
        :param lambda_threshold: trade-off between relevance (1.0) and diversity (0.0).
        :param relevance: ``score`` (upstream score) or ``query`` (cosine to ``query_embedding``).
        :param duplicate_threshold: drop candidates this similar (cosine) to one already selected, e.g. the same
            paragraph indexed from two files; ``None`` keeps them. When set, candidates whose text equals (up to
            white space and case) that of a better-ranked candidate are dropped too: their vectors can sit below
            the threshold because the section path is embedded with the text.
        :param document_store: the index the candidates come from (an ``EdgeDocumentStore``, a
            ``RemoteDocumentStore`` or a qdrant-haystack ``QdrantDocumentStore``): the vectors of candidates that
            carry none are read from it by id, in one call (``None``: only the documents' own vectors count).
        :param share_documents: send ``documents`` as one shared, read-only
            :class:`~adaptive_retrieval.components.shared_documents.SharedDocuments` (typed ``Iterable[Document]``):
            Haystack copies it once, not document by document (the query pipeline's setting).
        :param max_per_source: candidates kept per source document (``meta["source"]``; a candidate without one
            is its own source), best-ranked first; 0 keeps all. The router's ``max_per_source`` overrides it.
        """
        if relevance not in ("score", "query"):
            msg = f"relevance must be 'score' or 'query', got {relevance!r}"
            raise ValueError(msg)
        self._check_lambda(lambda_threshold)
        self.top_k = top_k
        self.lambda_threshold = lambda_threshold
        self.relevance = relevance
        self.duplicate_threshold = duplicate_threshold
        self.document_store = document_store
        self.share_documents = share_documents
        self._check_cap(max_per_source)
        self.max_per_source = max_per_source
        component.set_output_types(self, documents=documents_type(share_documents))
        self._search: VectorSearch | None = vector_search(document_store) if document_store is not None else None

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the store's own dictionary."""
        return to_dict_with_stores(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MMRSelector:
        """Deserialise, keeping the store's class (YAML written before the store was a parameter has none)."""
        return default_from_dict(cls, store_from_init_parameters(data))

    def stored_vectors(self, documents: list[Document]) -> dict[str, Any]:
        """The vectors of ``documents``: each one's own, else the store's for its id (one call for all of them);
        documents with neither are left out."""
        own = {d.id: d.embedding for d in documents if d.embedding is not None}
        wanted = [d.id for d in documents if d.id not in own]
        if self._search is None or not wanted:
            return own
        fetched = self._search.dense_vectors(wanted)
        return {**{i: v for i, v in fetched.items() if v is not None}, **own}

    @staticmethod
    def _check_lambda(value: float) -> None:
        if not 0.0 <= value <= 1.0:
            msg = f"lambda_threshold must be within [0, 1], got {value}"
            raise ValueError(msg)

    @staticmethod
    def _check_cap(value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            msg = f"max_per_source must be an integer >= 0 (0: no cap), got {value!r}"
            raise ValueError(msg)

    @staticmethod
    def _cap_per_source(documents: list[Document], cap: int) -> list[Document]:
        """The first ``cap`` (best-ranked) candidates of each source document, in their order."""
        counts: dict[str, int] = {}
        kept: list[Document] = []
        for doc in documents:
            source = str(doc.meta.get("source") or doc.id)
            if counts.get(source, 0) < cap:
                counts[source] = counts.get(source, 0) + 1
                kept.append(doc)
        return kept

    @staticmethod
    def _drop_same_text(documents: list[Document]) -> list[Document]:
        """Keep the first (best-ranked) of the documents that carry the same text."""
        seen: set[str] = set()
        kept: list[Document] = []
        for doc in documents:
            text = _same_text_key(doc.content or "")
            if text and text in seen:
                continue
            seen.add(text)
            kept.append(doc)
        return kept

    def _relevance(self, documents: list[Document], query: np.ndarray | None, emb: np.ndarray) -> np.ndarray:
        if self.relevance == "query":
            if query is None:
                msg = "MMRSelector(relevance='query') needs query_embedding"
                raise ValueError(msg)
            return emb @ query
        scores = np.array([d.score if d.score is not None else 0.0 for d in documents], dtype=np.float64)
        span = scores.max() - scores.min()
        return (scores - scores.min()) / span if span > 0 else np.ones_like(scores)

    def run(
        self,
        documents: RankedDocuments,
        query_embedding: QueryEmbedding | None = None,
        lambda_threshold: float | None = None,
        top_k: int | None = None,
        max_per_source: int | None = None,
    ) -> dict[str, Any]:
        """Return up to ``top_k`` documents in MMR order, each with ``meta["mmr_rank"]`` (1-based); at most
        ``max_per_source`` of one source document (``None``: the component's setting; 0: no cap)."""
        documents = list(documents)  # a list, or the joiner's SharedDocuments (read, never changed: see with_fields)
        query_embedding = as_float_list(query_embedding)
        lam = self.lambda_threshold if lambda_threshold is None else float(lambda_threshold)
        self._check_lambda(lam)
        k = self.top_k if top_k is None else top_k
        if not documents or k <= 0:
            return {"documents": hand_on([], self.share_documents)}
        cap = self.max_per_source if max_per_source is None else max_per_source
        self._check_cap(cap)
        if cap:
            documents = self._cap_per_source(documents, cap)
        if self.duplicate_threshold is not None:
            documents = self._drop_same_text(documents)
        vectors = self.stored_vectors(documents)
        dims = {len(v) for v in vectors.values()}
        if len(dims) > 1:
            msg = f"Documents carry embeddings of different dimensions {sorted(dims)}"
            raise ValueError(msg)
        dim = dims.pop() if dims else (len(query_embedding) if query_embedding is not None else 1)
        missing = len(documents) - len(vectors)
        if missing:
            logger.warning(
                "%d of %d documents have no embedding; they do not count for diversity.",
                missing,
                len(documents),
            )
        emb = np.zeros((len(documents), dim), dtype=np.float32)
        for i, d in enumerate(documents):
            if d.id in vectors:
                emb[i] = vectors[d.id]
        norms = np.linalg.norm(emb, axis=1, keepdims=True)
        emb = np.divide(emb, norms, out=np.zeros_like(emb), where=norms > 0)
        query = None
        if query_embedding is not None:
            if len(query_embedding) != dim:
                msg = f"query_embedding has dimension {len(query_embedding)}, documents have {dim}"
                raise ValueError(msg)
            query = np.asarray(query_embedding, dtype=np.float32)
            query = query / max(float(np.linalg.norm(query)), 1e-12)
        with one_blas_thread():
            relevance = self._relevance(documents, query, emb)
            picked = mmr_select(relevance, emb, k, lam, self.duplicate_threshold)
        out = [
            with_fields(
                documents[i], meta={**documents[i].meta, "mmr_rank": r}, embedding=as_list(vectors, documents[i])
            )
            for r, i in enumerate(picked, 1)
        ]
        return {"documents": hand_on(out, self.share_documents)}


@lru_cache(maxsize=KEPT_TEXTS)  # the same candidates come back query after query
def _same_text_key(text: str) -> str:
    """``text`` as two copies of one paragraph compare: white space collapsed, case folded."""
    return " ".join(text.split()).casefold()


def as_list(vectors: dict[str, Any], document: Document) -> list[float] | None:
    """``document``'s vector as a ``Document`` holds it: its own list, or the store's row as a new list."""
    if document.embedding is not None:
        return document.embedding
    vector = vectors.get(document.id)
    return None if vector is None else vector.tolist()
