"""Converted documents of a Qdrant local-mode collection, kept between queries.

In local mode every hit Qdrant hands out is built on the spot: its payload deep-copied, its vectors copied into
new lists, a pydantic record constructed and converted to a Haystack ``Document``: about 40 µs per point, and a
query through the five channels materialises 600+ points (cProfile on hotpotqa100: a quarter of query time).
:class:`LocalPointCache` converts each point once and hands out copies, which are cheap: the document copied by
:func:`~components.fast_copy.copy_document` (JSON ``meta``), the dense vector (kept as ``float32``, exactly as Qdrant
stores it) turned back into a list in C.

Handed-out vectors equal Qdrant's to float32 rounding, not always bit for bit: local mode re-normalises its stored
vectors in place on every cosine search, which moves some of them by one unit in the last place.

The cache holds what the collection held at one moment: the store clears it on any write (see
:class:`~components.stores.qdrant_store.SharedQdrantDocumentStore`). Its size is bounded; the least recently
used points leave first.

Usage::

    cache = LocalPointCache(capacity=20_000)
    docs = cache.documents(client, "documents", point_ids, vectors=ALL_VECTORS, use_sparse_embeddings=True)
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack_integrations.document_stores.qdrant.converters import convert_qdrant_point_to_haystack_document

from components.fast_copy import copy_document

#: ``vectors`` choices: what the stock store returns with ``return_embedding=True`` (dense and sparse), the
#: dense vector only, or none.
ALL_VECTORS, DENSE_VECTOR, NO_VECTORS = "all", "dense", "none"


def point_key(point_id: Any) -> Any:
    """The id as Qdrant reports it: UUID strings in canonical form (Haystack writes them without dashes)."""
    return str(uuid.UUID(point_id)) if isinstance(point_id, str) else point_id


@dataclass
class _Entry:
    document: Document  # payload fields only: no score, no vectors
    dense: np.ndarray | None
    sparse: SparseEmbedding | None


class LocalPointCache:
    """Least-recently-used map from point id to its converted document."""

    def __init__(self, capacity: int = 20_000) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[Any, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every point (the collection changed)."""
        self._entries.clear()

    def documents(
        self,
        client: Any,
        collection_name: str,
        point_ids: Sequence[Any],
        vectors: str = ALL_VECTORS,
        use_sparse_embeddings: bool = True,
        scores: Sequence[float | None] | None = None,
    ) -> list[Document]:
        """Documents of ``point_ids`` in that order (ids the collection lacks are left out, as ``retrieve`` does).

        :param client: the local-mode ``QdrantClient`` (the caller holds its lock).
        :param vectors: :data:`ALL_VECTORS`, :data:`DENSE_VECTOR` or :data:`NO_VECTORS`.
        :param scores: each document's score (``None``: no score, as ``retrieve`` gives).
        """
        keys = [point_key(p) for p in point_ids]
        missing = list(dict.fromkeys(k for k in keys if k not in self._entries))
        if missing:
            records = client.retrieve(collection_name, ids=missing, with_payload=True, with_vectors=True)
            for record in records:
                self._store(record, use_sparse_embeddings)
        out = []
        for position, key in enumerate(keys):
            entry = self._entries.get(key)
            if entry is None:
                continue
            self._entries.move_to_end(key)
            out.append(self._hand_out(entry, None if scores is None else scores[position], vectors))
        return out

    def _store(self, record: Any, use_sparse_embeddings: bool) -> None:
        document = convert_qdrant_point_to_haystack_document(record, use_sparse_embeddings=use_sparse_embeddings)
        dense = None if document.embedding is None else np.asarray(document.embedding, dtype=np.float32)
        sparse = document.sparse_embedding
        document.__dict__.update(embedding=None, sparse_embedding=None, score=None)
        self._entries[point_key(record.id)] = _Entry(document, dense, sparse)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    @staticmethod
    def _hand_out(entry: _Entry, score: float | None, vectors: str) -> Document:
        clone = copy_document(entry.document)  # the stored document has no score and no vectors
        state: dict[str, Any] = {"score": score}
        if vectors != NO_VECTORS and entry.dense is not None:
            # float32 -> Python floats: the same values Qdrant's own ``tolist()`` of its float32 rows gives.
            state["embedding"] = entry.dense.tolist()
        if vectors == ALL_VECTORS and entry.sparse is not None:
            state["sparse_embedding"] = SparseEmbedding(
                indices=list(entry.sparse.indices), values=list(entry.sparse.values)
            )
        # Set directly, as copy_document fills the copy: no mutation warning.
        clone.__dict__.update(state)
        return clone
