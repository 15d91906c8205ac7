"""The query pipeline's answer as a client receives it: the final documents without their vectors unless asked.

A served YAML pipeline (``hayhooks pipeline deploy-yaml``) answers with every output of the components it names and
every unconnected output: the gate's documents with their dense embedding (384 floats, ~8 KB of JSON each) and
sparse vector, and the query's embedding, made a 10-document answer ~110 KB. This component is where the gate's
final list, decision and quality (and the query vector) end, so the served YAML names it instead; the query
pipeline's embedder does not return the query embedding as a list (``return_list=False``).
"""

from __future__ import annotations

from typing import Any

from haystack import Document, component

from adaptive_retrieval.components.document_copy import with_fields
from adaptive_retrieval.components.models.query_vector import QueryEmbedding, as_float_list
from adaptive_retrieval.components.shared_documents import RankedDocuments


@component
class LeanAnswer:
    """Passes the gate's final documents, decision and quality on, without each document's ``embedding`` and
    ``sparse_embedding`` unless ``include_embeddings`` is set (at init, or per run); with it, the query embedding
    comes out too.

    Usage::

        answer = LeanAnswer()
        out = answer.run(documents=gate_documents, decision="pass", quality=0.83)
        out["documents"][0].embedding                               # None
        answer.run(documents=gate_documents, include_embeddings=True)["documents"][0].embedding  # the vector
    """

    def __init__(self, include_embeddings: bool = False) -> None:
        """:param include_embeddings: keep the vectors by default (a run's ``include_embeddings`` overrides it)."""
        self.include_embeddings = include_embeddings

    @component.output_types(
        documents=list[Document], decision=str | None, quality=float | None, query_embedding=list[float] | None
    )
    def run(
        self,
        documents: RankedDocuments,
        decision: str | None = None,
        quality: float | None = None,
        query_embedding: QueryEmbedding | None = None,
        include_embeddings: bool | None = None,
    ) -> dict[str, Any]:
        """The answer.

        :param documents: the final list (the quality gate's).
        :param decision: the gate's decision (``pass`` or ``insufficient``).
        :param quality: the gate's quality score.
        :param query_embedding: the query's embedding (a list, or the embedder's ``vector``), passed on as a list only
            with ``include_embeddings``.
        :param include_embeddings: keep the vectors (``None``: the init setting).
        :returns: ``documents`` (copies without vectors, or the same documents), ``decision``, ``quality``,
            ``query_embedding`` (``None`` without ``include_embeddings``).
        """
        keep = self.include_embeddings if include_embeddings is None else include_embeddings
        documents = list(documents)  # the final answer is a list, whatever the gate was handed
        if not keep:
            documents = [
                with_fields(d, embedding=None, sparse_embedding=None)
                if d.embedding is not None or d.sparse_embedding is not None
                else d
                for d in documents
            ]
        return {
            "documents": documents,
            "decision": decision,
            "quality": quality,
            "query_embedding": as_float_list(query_embedding) if keep else None,
        }
