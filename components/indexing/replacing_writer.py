"""Write a source's chunks so that re-indexing replaces them: new chunks first, then stale ones removed."""

from __future__ import annotations

import logging
from typing import Any

from haystack import Document, component, default_from_dict
from haystack.document_stores.types import DuplicatePolicy

from adaptive_retrieval.components.ids import chunk_id
from adaptive_retrieval.components.indexing.faults import fault_point
from adaptive_retrieval.components.stores.serialization import store_from_init_parameters, to_dict_with_stores

logger = logging.getLogger(__name__)


def stored_ids_for(store: Any, doc_ids: list[str]) -> set[str]:
    """Ids of every node stored for the given ``doc_id`` values (chunks and any summary nodes)."""
    if not doc_ids:
        return set()
    found = store.filter_documents(filters={"field": "meta.doc_id", "operator": "in", "value": doc_ids})
    return {d.id for d in found}


def sources_never_stored(store: Any, documents: list[Document], doc_ids: list[str]) -> set[str]:
    """The ``doc_ids`` of which nothing is stored, found by id lookups rather than a payload filter.

    Only sources split with :func:`~adaptive_retrieval.components.indexing.ids.chunk_id` ids are probed (their incoming
    batch holds ``chunk_id(doc_id, 0)``): any earlier version of such a source was stored with that same first-chunk id,
    so its absence means the source is new. An id lookup costs the same at any index size, where a payload filter
    scans every stored point on a store without a payload index, so bulk indexing stays linear on any store.
    """
    get_by_id = getattr(store, "get_documents_by_id", None)
    if get_by_id is None:
        return set()
    incoming = {d.id for d in documents}
    first = {doc_id: chunk_id(doc_id, 0) for doc_id in doc_ids}
    probes = {doc_id: first_id for doc_id, first_id in first.items() if first_id in incoming}
    if not probes:
        return set()
    present = {d.id for d in get_by_id(list(probes.values()))}
    return {doc_id for doc_id, first_id in probes.items() if first_id not in present}


@component
class ReplacingDocumentWriter:
    """Writes documents grouped by ``meta.doc_id`` and deletes what those sources held before and no longer do.

    New chunks are upserted first (ids are deterministic, so unchanged chunks are overwritten in place) and only
    then are stale ones deleted, so a failure mid-way never leaves a source with fewer chunks than before.
    Documents without ``doc_id`` are written as they are.

    Usage::

        writer = ReplacingDocumentWriter(document_store=store)
        writer.run(documents=chunks)  # {"documents_written": 42, "documents_deleted": 3}
    """

    def __init__(self, document_store: Any, write_batch_size: int = 64) -> None:
        """:param document_store: any Haystack document store with ``filter_documents`` and ``delete_documents``.
        :param write_batch_size: documents per ``write_documents`` call (a crash between two calls leaves a
            partly written source, which the index manifest detects and redoes)."""
        self.document_store = document_store
        self.write_batch_size = write_batch_size

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the store's own dictionary."""
        return to_dict_with_stores(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReplacingDocumentWriter:
        """Deserialise, keeping the document store's own class."""
        return default_from_dict(cls, store_from_init_parameters(data))

    @component.output_types(documents_written=int, documents_deleted=int)
    def run(self, documents: list[Document]) -> dict[str, int]:
        """Upsert ``documents`` and remove the now-stale nodes of their sources."""
        doc_ids = sorted({d.meta["doc_id"] for d in documents if d.meta.get("doc_id")})
        new = sources_never_stored(self.document_store, documents, doc_ids)
        before = stored_ids_for(self.document_store, [d for d in doc_ids if d not in new])
        fault_point("writer.before_upsert")
        written = 0
        for start in range(0, len(documents), self.write_batch_size):
            if start:
                fault_point("writer.mid_upsert")
            batch = documents[start : start + self.write_batch_size]
            written += int(self.document_store.write_documents(batch, policy=DuplicatePolicy.OVERWRITE) or 0)
        stale = sorted(before - {d.id for d in documents})
        fault_point("writer.before_delete")
        if stale:
            self.document_store.delete_documents(stale)
            logger.info("Replaced %d source(s): %d stale node(s) removed", len(doc_ids), len(stale))
        return {"documents_written": written, "documents_deleted": len(stale)}
