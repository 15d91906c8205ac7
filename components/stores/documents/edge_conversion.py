"""Haystack ``Document`` ↔ Qdrant Edge point: pure conversions, no store access.

The layout is qdrant-haystack's, so an Edge shard holds what ``QdrantDocumentStore`` would write to a server:
the payload is ``Document.to_dict(flatten=False)`` without vectors (``id``, ``content``, ``blob``, ``meta``), the
dense vector is named ``text-dense``, the sparse one ``text-sparse``, and the point id is qdrant-haystack's
deterministic UUID of the document id (``convert_id``).
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

import qdrant_edge as qe
from haystack import Document
from haystack.dataclasses import SparseEmbedding

# qdrant-haystack's point layout, as its converters module writes it (vector names, and the UUID-5 namespace of
# ``convert_id``). Written out rather than imported: that module imports all of qdrant_client, whose models take
# 0.6 s to import, a third of a one-shot CLI query on the embedded store.
# tests/components/stores/test_edge_document_store.py checks these values against qdrant-haystack's own.
DENSE_VECTORS_NAME = "text-dense"
SPARSE_VECTORS_NAME = "text-sparse"
POINT_ID_NAMESPACE = uuid.UUID("3896d314-1e95-4a3a-b45a-945f9f0b541d")

#: Document's fields in declaration order (the order its __init__ sets them).
_FIELDS = ("id", "content", "blob", "meta", "score", "embedding", "sparse_embedding")

__all__ = [
    "DENSE_VECTORS_NAME",
    "SPARSE_VECTORS_NAME",
    "check_documents",
    "document_to_point",
    "first_per_id",
    "last_per_id",
    "point_id",
    "point_to_document",
    "write_bytes",
]


@functools.lru_cache(maxsize=65_536)
def point_id(document_id: str) -> uuid.UUID:
    """The point id of a document id (qdrant-haystack's deterministic UUID: ``convert_id``; remembered, since a
    query turns a few hundred ids, mostly the same ones, into point ids and each is a SHA-1)."""
    return uuid.uuid5(POINT_ID_NAMESPACE, document_id)


def document_to_point(document: Document) -> qe.Point:
    """The Edge point for ``document``; a document without vectors is stored with its payload only."""
    payload = document.to_dict(flatten=False)
    dense = payload.pop("embedding", None)
    sparse = payload.pop("sparse_embedding", None)
    payload.pop("score", None)  # a retrieval score is not part of what is stored
    vector: dict[str, Any] = {}
    if dense is not None:
        vector[DENSE_VECTORS_NAME] = [float(v) for v in dense]
    if sparse is not None:
        vector[SPARSE_VECTORS_NAME] = qe.SparseVector(
            indices=[int(i) for i in sparse["indices"]], values=[float(v) for v in sparse["values"]]
        )
    return qe.Point(id=point_id(document.id), vector=vector, payload=payload)


def point_to_document(point: Any, score: float | None = None) -> Document:
    """The Haystack ``Document`` of an Edge ``Record`` or ``ScoredPoint`` (vectors as far as they were fetched)."""
    payload = point.payload or {}
    vectors = point.vector if isinstance(point.vector, dict) else {}
    sparse = vectors.get(SPARSE_VECTORS_NAME)
    fields: dict[str, Any] = {
        "id": payload.get("id"),
        "content": payload.get("content"),
        "meta": payload.get("meta") or {},
        "embedding": vectors.get(DENSE_VECTORS_NAME),
        "sparse_embedding": SparseEmbedding(indices=list(sparse.indices), values=list(sparse.values))
        if sparse is not None
        else None,
        "score": score,
    }
    if payload.get("blob") is not None:
        # Rare (binary sources): Document.from_dict knows the ByteStream layout.
        sparse_embedding = fields["sparse_embedding"]
        return Document.from_dict(
            {
                **fields,
                "blob": payload["blob"],
                "sparse_embedding": sparse_embedding.to_dict() if sparse_embedding else None,
            }
        )
    if (
        fields["id"]
        and isinstance(fields["content"], (str, type(None)))
        and isinstance(fields["embedding"], (list, type(None)))
    ):
        # What Document(**fields) makes when the id is set, the content text and the vector a list (always, for a
        # point this store wrote): the fields set directly, as copy.deepcopy and pickle rebuild a Document, without
        # the per-field mutation tracking of Haystack's __init__ (a search converts 20-50 points per channel).
        document = object.__new__(Document)
        document.__dict__.update({name: fields.get(name) for name in _FIELDS})
        return document
    return Document(**fields)


def check_documents(documents: Any, dimension: int, index: str) -> None:
    """Refuse what ``write_documents`` cannot store.

    :raises ValueError: for input that is not a list of Documents, or a dense vector whose dimension is not the
        index's.
    """
    if not isinstance(documents, list) or any(not isinstance(d, Document) for d in documents):
        msg = "write_documents takes a list of haystack Document objects"
        raise ValueError(msg)
    for document in documents:
        if document.embedding is not None and len(document.embedding) != dimension:
            msg = (
                f"Document {document.id} has an embedding of dimension {len(document.embedding)} but the index "
                f"'{index}' stores {dimension}-d vectors: embed with the index's model."
            )
            raise ValueError(msg)


def last_per_id(documents: list[Document]) -> list[Document]:
    """One document per id, the last given (what an overwrite keeps)."""
    return list({d.id: d for d in documents}.values())


def first_per_id(documents: list[Document]) -> list[Document]:
    """One document per id, the first given (what a skip keeps)."""
    first: dict[str, Document] = {}
    for d in documents:
        first.setdefault(d.id, d)
    return list(first.values())


def write_bytes(documents: list[Document], dimension: int) -> int:
    """A generous estimate of what writing ``documents`` takes on disk: the write-ahead log and the segment each
    hold the text, the payload and the vectors."""
    per_vector = dimension * 4 + 4096  # dense vector, sparse vector and payload besides the text
    return 2 * sum(len(d.content or "") * 4 + per_vector for d in documents)
